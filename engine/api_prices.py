"""API versus self-hosting: the hosted APIs of the same or a comparable model
(engine/data/api_prices.toml), priced for the traffic a serving plan carries, beside what the plan
costs a month for that traffic, and the traffic at which owning or renting pays off.

The plan's side comes from the plan itself: its monthly cost (engine/cost.py, the way the answer
chose: buying or renting), its decode speed per user and prefill speed at its users
(engine/speed.py through the plan), and the users it holds. A plan holding U concurrent streams at
the 99th percentile carries a mean of L in flight (engine/traffic.py), each request taking W =
prompt / prefill + answer / decode per user; so it serves L / W requests a second in the busiest
hour and that over the peak factor on average.
"""

from __future__ import annotations

from datetime import date
from functools import cache, lru_cache
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

from engine import catalog, datacache, i18n
from engine.architecture import ModelSpec
from engine.i18n import N_, _, money
from engine.prices import STALE_DAYS, PriceBook
from engine.request import Request
from engine.schema import ApiComparison, ApiOffer, Plan
from engine.traffic import (
    DAYS_PER_MONTH,
    DEFAULT_PEAK,
    SECONDS_PER_DAY,
    Load,
    assumed_lengths,
    load_of,
    peak_assumed,
    poisson_quantile,
    request_lengths,
)

SIMILAR_SIZE = 1.5  # an API for a model within 1.5x the parameters stands in when nothing closer
MATCH_TEXT = {"same": N_("same model"), "comparable": N_("comparable model"),
              "similar": N_("similar size")}


class ApiPrice(BaseModel):
    """One row of engine/data/api_prices.toml."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    provider: str
    api_model: str
    models: tuple[str, ...]
    comparable: tuple[str, ...]
    currency: str
    input: float
    cached: float
    output: float
    market: str
    source: str
    quoted: date
    retrieved: date
    note: str = ""

    def per_request(self, prompt: int, answer: int) -> float:
        """Cost of one request, in the row's currency (no cache discount assumed)."""
        return (prompt * self.input + answer * self.output) / 1e6


def load_api_prices() -> tuple[ApiPrice, ...]:
    import tomllib  # only when the cached catalog is missing or out of date

    data = tomllib.loads(datacache.data_text("api_prices.toml"))
    return tuple(ApiPrice(**row) for row in data["api"])


@cache
def api_prices() -> tuple[ApiPrice, ...]:
    return datacache.load("api_prices", data=("api_prices.toml",), code=("api_prices.py",),
                          build=load_api_prices)


class Match(NamedTuple):
    price: ApiPrice
    match: str  # same | comparable | similar
    basis: str


def matches(spec: ModelSpec) -> list[Match]:
    """APIs serving this model, else ones that stand in for it, else ones for a model of
    similar size: the closest kind of match found, never a mix of kinds."""
    return _matches(spec, i18n.current())


@lru_cache(maxsize=256)
def _matches(spec: ModelSpec, lang: str) -> list[Match]:  # the bases are said in `lang`
    rows = api_prices()
    same = [Match(r, "same", _("{provider} serves {model} itself").format(
        provider=r.provider, model=spec.display)) for r in rows if spec.name in r.models]
    if same:
        return same
    comparable = [Match(r, "comparable", _("{api} is listed as comparable to {model} (another "
                                          "release or size of its family, or its successor)")
                        .format(api=r.api_model, model=spec.display))
                  for r in rows if spec.name in r.comparable]
    if comparable:
        return comparable
    models = catalog.models()
    similar = []
    for r in rows:
        served = [models[m] for m in r.models if m in models]
        if not served:
            continue
        other = served[0]
        ratio = other.params / spec.params
        if 1 / SIMILAR_SIZE <= ratio <= SIMILAR_SIZE:
            similar.append(Match(r, "similar", _("{other} has {theirs:.0f}B parameters, {model} "
                                                 "{ours:.0f}B: similar cost to serve, not the "
                                                 "same answers").format(
                other=other.display, theirs=other.params / 1e9, model=spec.display,
                ours=spec.params / 1e9)))
    return similar


@lru_cache(maxsize=1024)
def held_mean(users: int) -> float:
    """The largest mean in flight whose 99th-percentile Poisson count is within `users` (to a
    millionth of `users`: every plan of an answer asks for the same users)."""
    lo, hi = 0.0, float(users)
    for _step in range(21):
        mid = (lo + hi) / 2
        if poisson_quantile(mid) <= users:
            lo = mid
        else:
            hi = mid
    return lo


def _lengths(req: Request, load: Load | None) -> tuple[int, int]:
    """(prompt, answer) of one request: the traffic's, else the same typical request requests=
    would assume (prompt= and output=; a context= given holds it; else a typical chat request),
    never the plan's whole sequence split in two."""
    if load is not None:
        return load.prompt, load.answer
    return request_lengths(req)


def plan_monthly(plan: Plan) -> tuple[str | None, float | None]:
    """(mode, cost a month) of the way the answer chose to get the cards."""
    c = plan.cost
    if c is None or c.mode is None:
        return None, None
    if c.mode in ("buy", "owned"):  # owned: the running cost of the team's cards
        return c.mode, c.buy.monthly_total
    return "rent", c.rent.monthly


def compare(plan: Plan, spec: ModelSpec, req: Request, book: PriceBook,
            today: date, asked: Request | None = None) -> ApiComparison | None:
    """The plan beside the hosted APIs for the same traffic (requests=, else the plan's capacity
    at the peak factor); None for training. A plan that does not run gets the APIs alone for
    the traffic requests= gives (what the work costs without the cards), else None. `asked`: the
    request as asked, when `req` has the typical request's lengths filled in (said as
    assumed)."""
    if not req.is_serving:
        return None
    load = load_of(req)
    if plan.verdict == "no" or plan.cost is None:
        return _apis_alone(spec, req, book, today, load) if load is not None else None
    currency = plan.cost.currency
    prompt, answer = _lengths(req, load)
    peak = load.peak if load is not None else (req.peak or DEFAULT_PEAK)
    per_user = plan.speed.decode_tokens_per_s or 0.0
    prefill = plan.speed.prefill_tokens_per_s or 0.0
    notes: list[str] = []
    capacity = None
    if per_user > 0 and prefill > 0:
        seconds = prompt / prefill + answer / per_user
        capacity = held_mean(req.users) / seconds * SECONDS_PER_DAY / peak
    if load is not None:
        requests = load.requests_per_day
    elif capacity is not None:
        requests = capacity
        notes.append(_("no requests= given: compared at the plan's capacity, {requests:,.0f} "
                       "requests a day of {prompt:,} + {answer:,} tokens at a peak factor of "
                       "{peak:g} (set requests=, prompt=, output=, peak=)").format(
            requests=capacity, prompt=prompt, answer=answer, peak=peak))
        notes += [_("assumed: {what}").format(what=a)
                  for a in assumed_lengths(asked or req, prompt, answer)]
        if spec.reasoning and answer == spec.typical_output:
            notes.append(_("assumed: answer {tokens:,} tokens, {model}'s recommended output length "
                           "with its thinking: an upper figure, most answers are shorter (set "
                           "output= for your traffic)").format(tokens=answer, model=spec.display))
        if req.peak is None:
            notes.append(_("assumed: {what}").format(what=peak_assumed(peak)))
    else:
        return None
    tokens = requests * DAYS_PER_MONTH * (prompt + answer)
    mode, monthly = plan_monthly(plan)
    utilization = (requests / capacity / peak) if capacity else None
    if capacity is not None and load is not None and requests > capacity * 1.0001:
        notes.append(_("the traffic is over this plan's capacity of {capacity:,.0f} requests a "
                       "day: it needs more cards").format(capacity=capacity))
    per_m = monthly / (tokens / 1e6) if monthly is not None and tokens else None
    offers = _offers(spec, req, book, today, currency, requests, prompt, answer, monthly)
    full = (monthly / (capacity * DAYS_PER_MONTH * (prompt + answer) / 1e6)
            if monthly is not None and capacity else None)
    verdict = _verdict(offers, monthly, per_m, full, capacity, currency, mode)
    other = _other_way(plan, mode, offers, requests, capacity, currency)
    if other:
        verdict += _("; ") + other
    return ApiComparison.build(
        currency=currency, mode=mode, monthly=_round(monthly), requests_per_day=round(requests, 1),
        tokens_per_month=round(tokens), prompt_tokens=prompt, answer_tokens=answer,
        users=req.users, capacity_requests_per_day=_round(capacity, 1),
        utilization=None if utilization is None else round(min(utilization, 1.0), 3),
        per_m_tokens=None if per_m is None else round(per_m, 4), offers=offers, verdict=verdict,
        notes=notes)


def _apis_alone(spec: ModelSpec, req: Request, book: PriceBook, today: date,
                load: Load) -> ApiComparison | None:
    """The hosted APIs priced for the traffic when the plan does not run on the cards."""
    currency = req.answer_currency
    requests, prompt, answer = load.requests_per_day, load.prompt, load.answer
    offers = _offers(spec, req, book, today, currency, requests, prompt, answer, None)
    if not offers:
        return None
    cheapest = min(offers, key=lambda o: o.monthly or 0.0)
    verdict = _("the plan does not run on these cards; for this traffic {provider} ({api}) costs "
                "{monthly} a month, {per_m} per million tokens").format(
        provider=cheapest.provider, api=cheapest.api_model,
        monthly=money(cheapest.monthly, currency),
        per_m=unit_price(cheapest.per_m_tokens, currency))
    return ApiComparison.build(
        currency=currency, requests_per_day=round(requests, 1),
        tokens_per_month=round(requests * DAYS_PER_MONTH * (prompt + answer)),
        prompt_tokens=prompt, answer_tokens=answer, users=req.users, offers=offers,
        verdict=verdict)


def _offers(spec: ModelSpec, req: Request, book: PriceBook, today: date, currency: str,
            requests: float, prompt: int, answer: int, monthly: float | None) -> list[ApiOffer]:
    market = req.market_choice.market
    out = []
    for m in matches(spec):
        r = m.price
        per_request = book.convert(r.per_request(prompt, answer), r.currency, currency)
        api_monthly = per_request * requests * DAYS_PER_MONTH
        blended = per_request / (prompt + answer) * 1e6
        even = monthly / (per_request * DAYS_PER_MONTH) if monthly and per_request else None
        out.append(ApiOffer.build(
            provider=r.provider, api_model=r.api_model, match=m.match, basis=m.basis,
            currency=r.currency, input_per_m=r.input, output_per_m=r.output,
            cached_per_m=r.cached, market=r.market, monthly=round(api_monthly, 2),
            per_m_tokens=round(blended, 4),
            break_even_requests_per_day=None if even is None else round(even, 1),
            source=r.source, quoted=r.quoted.isoformat(), retrieved=r.retrieved.isoformat(),
            stale=(today - r.retrieved).days > STALE_DAYS))
    # the asker's market first, then the cheapest
    out.sort(key=lambda o: (o.market != market, o.monthly or 0.0))
    return out


def _verdict(offers: list[ApiOffer], monthly: float | None, per_m: float | None,
             full: float | None, capacity: float | None, currency: str, mode: str | None) -> str:
    """Which is cheaper at the traffic, and the traffic at which the plan pays off; `full` is the
    plan's cost per million tokens at its capacity."""
    if not offers:
        return _("no hosted API for this model or a comparable one in the catalog")
    if monthly is None or per_m is None:
        return _("the plan has no price in this market to compare with")
    cheapest = min(offers, key=lambda o: o.monthly or 0.0)
    way = {"buy": _("buying"), "owned": _("running your cards")}.get(mode or "", _("renting"))
    even = cheapest.break_even_requests_per_day
    if cheapest.monthly is not None and cheapest.monthly < monthly:
        if even is not None and capacity is not None and even > capacity:
            return _("{provider} ({api}) costs less at any traffic this plan can carry: at its "
                     "capacity of {capacity:,.0f} requests a day {way} costs {self} per million "
                     "tokens against the API's {api_per_m}").format(
                provider=cheapest.provider, api=cheapest.api_model, capacity=capacity, way=way,
                self=unit_price(full, currency),
                api_per_m=unit_price(cheapest.per_m_tokens, currency))
        return _("{provider} ({api}) is cheaper at this traffic ({api_monthly} against {self_monthly} "
                 "a month); {way} pays off above {even:,.0f} requests a day").format(
            provider=cheapest.provider, api=cheapest.api_model,
            api_monthly=money(cheapest.monthly, currency), self_monthly=money(monthly, currency),
            way=way, even=even or 0)
    return _("{way} the plan is cheaper than every API listed at this traffic ({self_monthly} "
             "against {api_monthly} a month for {provider}); it pays off above {even:,.0f} "
             "requests a day").format(way=way, self_monthly=money(monthly, currency),
                                      api_monthly=money(cheapest.monthly, currency),
                                      provider=cheapest.provider, even=even or 0)


def _other_way(plan: Plan, mode: str | None, offers: list[ApiOffer], requests: float,
               capacity: float | None, currency: str) -> str:
    """The way the answer did not choose (buying when it rents, renting when it buys), against
    the cheapest API: its cost a month and the traffic at which it would pay off."""
    c = plan.cost
    if c is None or not offers or mode is None:
        return ""
    if mode == "rent" and c.buy_allowed and c.buy.monthly_total:
        way, monthly = _("buying"), c.buy.monthly_total
    elif mode == "buy" and c.rent_allowed and c.rent.monthly:
        way, monthly = _("renting"), c.rent.monthly
    else:
        return ""
    cheapest = min(offers, key=lambda o: o.monthly or 0.0)
    if not cheapest.monthly or not requests:
        return ""
    even = monthly / (cheapest.monthly / requests)  # the API's cost a month per request a day
    if capacity is not None and even > capacity:
        return _("{way} instead ({monthly} a month) never pays off against it within the "
                 "{capacity:,.0f} requests a day the plan carries").format(
            way=way, monthly=money(monthly, currency), capacity=capacity)
    return _("{way} instead ({monthly} a month) pays off against it above {even:,.0f} requests "
             "a day").format(way=way, monthly=money(monthly, currency), even=even)


def unit_price(amount: float | None, currency: str) -> str:
    """A price per million tokens: small amounts keep two significant figures (0.56 USD, ¥3.9),
    where money() rounds to whole units."""
    if amount is None:
        return _("n/a")
    if amount >= 100:
        return money(amount, currency)
    figure = f"{amount:.2g}" if amount < 1 else f"{amount:.3g}"
    if i18n.current() == "zh":
        return ("¥" if currency == "CNY" else "$" if currency == "USD" else currency + " ") + figure
    return f"{figure} {currency}"


def _round(value: float | None, digits: int = 0) -> float | None:
    return None if value is None else round(value, digits)
