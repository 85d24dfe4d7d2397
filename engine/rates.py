"""Traffic said as people count it, into requests a day (issue 20): daily and monthly active
users (日活, 月活, DAU, "1000 users a day") and request rates (QPS, RPS, 每秒20个请求, RPM).

None of these is a count of concurrent users, which is what `users=` sizes for: a thousand people
who use a tool in a day are not a thousand sequences in flight. Each is turned into `requests=`
(requests a day) with the assumption said, and engine/traffic.py takes it from there: the peak
factor, Little's law (in flight = rate x time per request at the service level) and the 99th
percentile of the Poisson count in flight.

- Active users: requests a day = active users x the requests each sends. The rate is ChatGPT's,
  the one large chat service that publishes both numbers: 18 billion messages a week from 700
  million weekly active users in July 2025 (Chatterji et al., "How People Use ChatGPT", NBER
  working paper 34255, 2025), about 25.7 a week for each user. A daily active user is one on a
  day they use it: Sensor Tower measured ChatGPT's users active on about 12 days a month in the
  first half of 2025, so the week's 25.7 messages fall on 7 x 12/30 = 2.8 days, 9.2 on each. A
  monthly active user is taken as that weekly user: 25.7 / 7 = 3.7 requests a day.
- A head count (200 developers, 给500个员工用, a team of 30, 50 seats) is the people who may use
  it, not the people using it at once nor all of them on a given day: the share who use AI tools
  daily is the one a large survey publishes, 51% of professional developers (Stack Overflow
  Developer Survey 2025, July 2025, 49,000 respondents), so a head count is read as that share
  of daily active users, and they as above (9.2 requests a day each).
- A rate a second (QPS, RPS) is the busiest hour's rate, what teams quote to size for: the day's
  requests are that rate over the day, divided by the peak factor (engine/traffic.py, default 3),
  so the busiest hour runs at exactly the rate said. A rate a minute is a sixtieth of that.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from engine import numbers
from engine.i18n import _
from engine.phrases import Phrase
from engine.traffic import DEFAULT_PEAK, SECONDS_PER_DAY

CHATGPT_WEEKLY_MESSAGES = 18e9  # July 2025, Chatterji et al. 2025 (NBER w34255)
CHATGPT_WEEKLY_USERS = 700e6  # the same paper, the same month
ACTIVE_DAYS_A_MONTH = 12  # Sensor Tower, ChatGPT's users in the first half of 2025
WEEKLY_MESSAGES_PER_USER = CHATGPT_WEEKLY_MESSAGES / CHATGPT_WEEKLY_USERS  # 25.7
REQUESTS_PER_DAILY_USER = WEEKLY_MESSAGES_PER_USER / (7 * ACTIVE_DAYS_A_MONTH / 30)  # 9.2
REQUESTS_PER_MONTHLY_USER = WEEKLY_MESSAGES_PER_USER / 7  # 3.7
# professional developers who use AI tools daily: Stack Overflow Developer Survey 2025 (July 2025),
# https://survey.stackoverflow.co/2025/ai ("51% of professional developers use AI tools daily")
DAILY_SHARE_OF_HEAD_COUNT = 0.51
SCALES = {"k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12, "thousand": 1e3, "grand": 1e3, "million": 1e6,
          "mil": 1e6, "mn": 1e6, "billion": 1e9, "bn": 1e9, "trillion": 1e12,
          **{k: float(v) for k, v in numbers.CN_SCALES.items()}}


class Said(NamedTuple):
    """Traffic as the message said it: `label` for the read line, `note` for the assumption."""

    requests: float
    label: str
    note: str


def _amount(m: re.Match[str]) -> float | None:
    n = numbers.to_number(m.group("n"))
    unit = m.group("u") or ""
    scale = SCALES.get(unit, SCALES.get(unit.lower())) if unit else 1.0
    return None if n is None or n <= 0 or scale is None else n * scale


def _count(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:g}"


def _active(monthly: bool) -> Callable[[re.Match[str], float], Said | None]:
    def read(m: re.Match[str], _peak: float) -> Said | None:
        people = _amount(m)
        if people is None:
            return None
        each = REQUESTS_PER_MONTHLY_USER if monthly else REQUESTS_PER_DAILY_USER
        requests = round(people * each)
        if monthly:
            label = _("{count} monthly active users").format(count=_count(people))
            note = _("{count} monthly active users are not concurrent users: read as {requests:,} "
                     "requests a day, {each:.1f} for each (ChatGPT's 18 billion messages a week "
                     "from 700 million weekly users, July 2025, NBER w34255, a weekly user taken "
                     "for a monthly one); set requests= if you know the traffic.").format(
                         count=_count(people), requests=requests, each=each)
        else:
            label = _("{count} daily active users").format(count=_count(people))
            note = _("{count} daily active users are not concurrent users: read as {requests:,} "
                     "requests a day, {each:.1f} for each (ChatGPT's 18 billion messages a week "
                     "from 700 million weekly users, July 2025, NBER w34255, over the 12 days a "
                     "month a user is active, Sensor Tower); set requests= if you know the "
                     "traffic.").format(count=_count(people), requests=requests, each=each)
        return Said(requests, label, note)
    return read


def head_count(people: float) -> Said:
    """A team's size as traffic: DAILY_SHARE_OF_HEAD_COUNT of them on a given day, each sending
    REQUESTS_PER_DAILY_USER requests (never the head count as users in flight)."""
    daily = people * DAILY_SHARE_OF_HEAD_COUNT
    requests = round(daily * REQUESTS_PER_DAILY_USER)
    label = _("a head count of {count}").format(count=_count(people))
    note = _("{count} people is a head count, not concurrent users: read as {daily:,.0f} daily "
             "active users ({share:.0%} use AI tools daily, Stack Overflow Developer Survey 2025) "
             "and {requests:,} requests a day, {each:.1f} for each (ChatGPT's rate, NBER w34255); "
             "say “{count} concurrent” for users at once, or set requests=.").format(
                 count=_count(people), daily=daily, share=DAILY_SHARE_OF_HEAD_COUNT,
                 requests=requests, each=REQUESTS_PER_DAILY_USER)
    return Said(requests, label, note)


def _rate(per_seconds: float, word: str) -> Callable[[re.Match[str], float], Said | None]:
    def read(m: re.Match[str], peak: float) -> Said | None:
        rate = _amount(m)
        if rate is None:
            return None
        word_said = "RPS" if "rps" in m.group(0).lower() else word  # as the message spells it
        per_second = rate / per_seconds
        if _AVERAGE.search(m.group(0)):  # 50 RPS on average: the day's rate, no peak to divide
            requests = round(per_second * SECONDS_PER_DAY)
            label = _("{rate} {word} on average").format(rate=_count(rate), word=word_said)
            note = _("{rate} {word} read as the day's average rate: {requests:,} requests a day; "
                     "the busiest hour is taken at the peak factor {peak:g} above it, and the "
                     "concurrent users follow from Little's law.").format(
                         rate=_count(rate), word=word_said, requests=requests, peak=peak)
            return Said(requests, label, note)
        requests = round(per_second * SECONDS_PER_DAY / peak)
        label = _("{rate} {word} at the peak").format(rate=_count(rate), word=word_said)
        note = _("{rate} {word} read as the busiest hour's rate, {per_second:g} requests a second: "
                 "{requests:,} requests a day at the peak factor {peak:g}; the concurrent users "
                 "follow from Little's law (in flight = rate x the time each request takes at the "
                 "service level).").format(rate=_count(rate), word=word_said,
                                           per_second=round(per_second, 3), requests=requests,
                                           peak=peak)
        return Said(requests, label, note)
    return read


B, E = r"(?<![a-z0-9])", r"(?![a-z0-9])"  # word edges in ASCII: 峰值QPS has none in Unicode
_AVERAGE = re.compile(r"平均|日均|avg|average|mean", re.IGNORECASE)
AVG_BEFORE = r"(?:(?:平均|日均|avg|average|mean)\s*)?"
AVG_AFTER = r"(?:\s*(?:avg|average|on\s+average|mean|平均))?"
# a number and its scale, Chinese or English (1000, 1万, 5k, 2.5 million, 两千)
N = (rf"(?P<n>{numbers.NUMBER})\s*(?P<u>{numbers.CN_SCALE}|{numbers.EN_SCALE}|[kmw](?![a-z]))?")
# a thread changes it (日活改成5000) as a message says it (日活是5000)
SAY = (r"\s*(?:用户)?\s*(?:数|量|人数)?\s*(?:是|为|有|约|大概|大约|预计|达到|在|改成|改为|调到|加到|变成|"
       r"of|is|about|around|~|:|=)?\s*")
PEOPLE = r"\s*(?:个|位|名)?\s*(?:人|用户|users?|people)?"
ROWS: tuple[tuple[str, Callable[[re.Match[str], float], Said | None]], ...] = (
    # 日活1000人, 日活跃用户数5万, DAU 1000, daily active users: 2k
    (r"(?:日活跃?|" + B + r"(?:dau|daily\s+active\s+users?|daily\s+users)" + E + ")" + SAY + N + PEOPLE,
     _active(monthly=False)),
    (r"(?:月活跃?|" + B + r"(?:mau|monthly\s+active\s+users?|monthly\s+users)" + E + ")" + SAY + N + PEOPLE,
     _active(monthly=True)),
    # 1000 DAU, 5万日活, 1000 daily active users, 1000 users a day, 每天1000人使用
    (N + r"\s*(?:个|位|名)?\s*(?:日活跃?(?:用户)?|(?:dau|daily\s+(?:active\s+)?users?|"
     r"(?:active\s+)?(?:users?|people)\s+(?:a|per|each|every)\s+day)" + E + ")", _active(monthly=False)),
    (N + r"\s*(?:个|位|名)?\s*(?:月活跃?(?:用户)?|(?:mau|monthly\s+(?:active\s+)?users?|"
     r"(?:active\s+)?(?:users?|people)\s+(?:a|per|each|every)\s+month)" + E + ")", _active(monthly=True)),
    (r"(?:每天|每日|一天|日均)\s*(?:有|约|大概|大约)?\s*" + N + r"\s*(?:个|位|名)?\s*(?:人|用户)\s*"
     r"(?:使用|在用|用|访问|登录|活跃)?", _active(monthly=False)),
    (r"(?:每月|每个月|一个月)\s*(?:有|约|大概|大约)?\s*" + N + r"\s*(?:个|位|名)?\s*(?:人|用户)\s*"
     r"(?:使用|在用|用|访问|登录|活跃)?", _active(monthly=True)),
    # QPS 20, 20 QPS, 峰值QPS 20, 20 RPS, 20 requests per second, 每秒20个请求
    (r"(?:峰值)?\s*" + AVG_BEFORE + B + "(?:qps|rps)" + E + SAY + N + AVG_AFTER, _rate(1, "QPS")),
    (AVG_BEFORE + N + r"\s*(?:qps|rps|req/s|requests?/s(?:ec)?|requests?\s+(?:per|a|each)\s+second)" + E
     + AVG_AFTER, _rate(1, "QPS")),
    (AVG_BEFORE + r"每秒\s*(?:钟)?\s*(?:有|约|大概)?\s*" + N
     + r"\s*(?:个|次|条)?\s*(?:请求|调用|查询|访问|问答)",
     _rate(1, "QPS")),
    # 600 RPM, RPM 600, 每分钟600次请求
    (B + "rpm" + E + SAY + N, _rate(60, "RPM")),
    (N + r"\s*(?:rpm|req/min|requests?/min|requests?\s+(?:per|a|each)\s+minute)" + E, _rate(60, "RPM")),
    (r"每分钟\s*(?:有|约|大概)?\s*" + N + r"\s*(?:个|次|条)?\s*(?:请求|调用|查询|访问|问答)",
     _rate(60, "RPM")),
)


def rows(said: list[Said], peak: float | None = None) -> tuple[Phrase, ...]:
    """The rows as a phrase table; each traffic phrase read is added to `said` and becomes
    `requests=` (a phrase whose number does not read is left as it is). `peak`: the peak factor
    the message gave (peak=), else engine/traffic.py's default, so that the busiest hour runs at
    the rate said."""
    def emit(read: Callable[[re.Match[str], float], Said | None]) -> Callable[
            [re.Match[str], list[str]], str | None]:
        def out(m: re.Match[str], _kept: list[str]) -> str | None:
            got = read(m, peak or DEFAULT_PEAK)
            if got is None:
                return None
            said.append(got)
            return f"requests={got.requests:.0f}"
        return out
    return tuple(Phrase(regex, emit(read)) for regex, read in ROWS)
