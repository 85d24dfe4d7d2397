"""Which market a question is asked from, and what a card can be had for there.

A team in China cannot buy an H100 or a B200 through legal channels, and Chinese clouds do not
rent them; a team in the US cannot buy an H20. The market follows the team, never the currency
an amount happens to be written in: market= says it outright, region= says where the team is
(a Chinese region means China, any other the global market); otherwise China, the buying guides'
market. A budget in dollars is converted (at the catalog's dated rate), it does not move a team
in Chengdu to Virginia's prices; currency= only chooses how amounts are shown.
Each card's status per market is data (engine/data/availability.toml, sourced and dated).
"""

from __future__ import annotations

from typing import NamedTuple

from engine import catalog
from engine.i18n import N_, _

# regions a team in China names (power prices exist for some; any of them means the China market)
CHINA_REGIONS = frozenset({
    "china", "cn", "chengdu", "sichuan", "jiangsu", "nanjing", "suzhou", "beijing", "shanghai",
    "shenzhen", "guangzhou", "guangdong", "hangzhou", "zhejiang", "wuhan", "hubei", "xian",
    "chongqing", "tianjin", "hefei", "anhui", "guizhou", "guiyang", "ningxia", "zhongwei",
    "inner-mongolia", "ulanqab", "qingyang", "gansu", "shandong", "jinan", "qingdao", "fujian",
    "xiamen", "hunan", "changsha", "henan", "zhengzhou", "hebei", "liaoning", "shenyang",
    "dalian", "jilin", "heilongjiang", "yunnan", "kunming", "shanxi", "jiangxi", "hainan",
    "guangxi", "xinjiang", "tibet", "qinghai"})
MARKET_CURRENCY = {"china": "CNY", "global": "USD"}
# a market inside a sentence ("the {market} market"): the key in English, as market= takes it;
# human words in Chinese (中国市场, 海外市场)
MARKET_WORDS = {"china": N_("china"), "global": N_("global")}
# a card's status as a headline says it, in a buyer's words (every answer names it for its card)
ACCESS_WORDS = {"new": N_("sold new"), "secondary": N_("second-hand"),
                "rental": N_("rental only"), "grey": N_("grey market only"),
                "unavailable": N_("not sold"), "unknown": N_("availability not known")}
# where the asker is, as a headline says it
WHERE_WORDS = {"china": N_("in China"), "global": N_("outside China")}
STATUS_TEXT = {
    "new": N_("sold new"),
    "secondary": N_("second-hand or pre-restriction stock only"),
    "rental": N_("rental only"),
    "grey": N_("only through channels that evade export controls"),
    "unavailable": N_("not available"),
    "unknown": N_("availability not known"),
}


class MarketChoice(NamedTuple):
    market: str  # "china" | "global"
    reason: str  # why, marked for translation


class Access(NamedTuple):
    """How the asker can get a card in their market."""

    status: str  # availability.toml status, "unknown" where no row exists
    can_buy: bool  # new, or second-hand / pre-restriction stock resold domestically
    can_rent: bool  # rentable there (a price in that market is still needed to rank it)
    note: str  # the row's note (why), with its source in `source`
    source: str
    as_of: str


def market_word(market: str) -> str:
    """The market as a sentence names it, in the current language."""
    return _(MARKET_WORDS[market]) if market in MARKET_WORDS else market


def choose_market(*, market: str | None, region: str | None, asked_in: str | None
                  ) -> MarketChoice:
    """The market an answer serves: market=, else where region= is, else China. Currencies
    play no part (a dollar budget is converted, not a move abroad)."""
    if market is not None:
        return MarketChoice(market, N_("you said market={market}"))
    if region is not None:
        if region in CHINA_REGIONS:
            return MarketChoice("china", N_("region={region} is in China"))
        if region != "global":
            return MarketChoice("global", N_("region={region} is outside China"))
        return MarketChoice("global", N_("region=global"))
    if asked_in == "zh":
        return MarketChoice("china", N_("the question is in Chinese"))
    return MarketChoice("china", N_("default: the buying guides' market; set market=global "
                                    "for a team outside China"))


def access(card: str, market: str) -> Access:
    """Whether `card` can be bought or rented in `market`. Grey channels (smuggled imports)
    and cards sold nowhere there are neither; second-hand and pre-restriction stock is bought
    and rented domestically (A800, H800 and RTX 4090 servers in China, as the guides quote)."""
    row = catalog.availability().get((card, market))
    if row is None:
        return Access("unknown", False, False, "", "", "")
    buy = row.status in ("new", "secondary")
    rent = row.status in ("new", "secondary", "rental")
    return Access(row.status, buy, rent, row.note, row.source, row.as_of.isoformat())
