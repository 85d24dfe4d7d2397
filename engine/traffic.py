"""Serving traffic: requests a day with typical prompt and answer lengths, turned into the
concurrent users a plan must hold and the tokens it serves a month.

Little's law: the mean number of requests in flight is the arrival rate times the time each
spends in the system, L = lambda x W. The rate is the day's requests over 86,400 s times a peak
factor (the busiest hour's rate over the day's average); W is the longest a request may take at
the service level: the first token within the ceiling for its prompt, then the answer at the
reading pace (tokens/s per user). With independent arrivals the number in flight is Poisson with
mean L (an M/G/infinity system), so the plan is sized for its 99th percentile, not its mean: with
the mean alone, half the busy hour's moments would have more users than the plan holds.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from engine.i18n import _, counted
from engine.request import PREFILL_FLOOR, TTFT_FLOOR_S, Request
from engine.schema import TrafficDoc

SECONDS_PER_DAY = 86_400
DAYS_PER_MONTH = 365 / 12
# Typical lengths when not given. Prompts: the median conversation request in Azure's 2023 LLM
# inference trace is about 1,000 tokens (Patel et al. 2024, Splitwise, ISCA: 1,020); answers:
# ShareGPT conversations average about 340 output tokens (Kwon et al. 2023, the vLLM paper: 5.8x
# Alpaca's 58).
DEFAULT_PROMPT = 1000
DEFAULT_ANSWER = 340
# A reasoning model's answer, thinking included, as production traffic has it: DeepSeek-R1 on
# Alibaba Cloud Model Studio averages 2,133 output tokens a request, 74% of them thinking
# (ServeGen, Xiang et al., NSDI 2026: the released data/reason/deepseek-r1 distributions, 73
# client chunks, each window weighted by its request rate; github.com/alibaba/ServeGen f891d11).
# The recommended maximum (32,768 for R1 and Qwen3) bounds one sequence, not the mean a day of
# requests takes: Little's law wants the mean.
REASONING_ANSWER = 2133
REASONING_ANSWER_SOURCE = ("https://github.com/alibaba/ServeGen/tree/"
                           "f891d1189eb32b3868dfc443800c4150548c282a/data/reason/deepseek-r1")
# A working day's requests arrive in about eight busy hours: the busiest hour runs at about
# 24 / 8 = 3 times the day's average rate.
DEFAULT_PEAK = 3.0
QUANTILE = 0.99  # the share of busy-hour moments the plan holds every request in flight
_Z99 = 2.326  # the standard normal's 99th percentile, for large means


class Load(NamedTuple):
    """A traffic pattern, resolved with its defaults."""

    requests_per_day: float
    prompt: int
    answer: int
    peak: float
    seconds: float  # W: the longest one request may take at the service level
    ttft_s: float
    decode_floor: float

    @property
    def tokens_per_request(self) -> int:
        return self.prompt + self.answer

    @property
    def peak_rate(self) -> float:
        """Requests per second in the busiest hour."""
        return self.requests_per_day / SECONDS_PER_DAY * self.peak

    @property
    def mean_in_flight(self) -> float:
        """Little's law at the peak rate."""
        return self.peak_rate * self.seconds

    @property
    def tokens_per_month(self) -> float:
        return self.requests_per_day * DAYS_PER_MONTH * self.tokens_per_request


def poisson_quantile(mean: float, q: float = QUANTILE) -> int:
    """The smallest n with P(N <= n) >= q for N ~ Poisson(mean); past a mean of 1,000 the normal
    approximation with a continuity correction (the exact sum takes thousands of terms)."""
    if mean <= 0:
        return 0
    if mean > 1000:
        return math.ceil(mean + _Z99 * math.sqrt(mean) + 0.5)
    # each term in log space: exp(-mean) alone underflows for means past ~745
    log_mean, log_term, total, n = math.log(mean), -mean, 0.0, 0
    while True:
        total += math.exp(log_term)
        if total >= q:
            return n
        n += 1
        log_term += log_mean - math.log(n)


def load_of(req: Request) -> Load | None:
    """The request's traffic with its defaults, or None when requests= is not given."""
    if req.requests is None:
        return None
    prompt, answer = request_lengths(req)
    ttft = req.ttft if req.ttft is not None else max(TTFT_FLOOR_S, prompt / PREFILL_FLOOR)
    seconds = ttft + answer / req.decode_floor
    return Load(requests_per_day=req.requests, prompt=prompt, answer=answer,
                peak=req.peak or DEFAULT_PEAK, seconds=seconds, ttft_s=ttft,
                decode_floor=req.decode_floor)


def request_lengths(req: Request) -> tuple[int, int]:
    """(prompt, answer) tokens of one request: prompt= and output=; without them, a context=
    given holds the request (its answer the typical one, the rest prompt), else the typical
    request (DEFAULT_PROMPT + DEFAULT_ANSWER)."""
    given = "context" in req.model_fields_set
    if req.output is not None:
        answer = min(req.output, req.context - 1) if given else req.output
    else:  # the typical answer, at most half of a context given
        answer = min(DEFAULT_ANSWER, max(1, req.context // 2)) if given else DEFAULT_ANSWER
    if req.prompt is not None:
        prompt = req.prompt
    else:
        prompt = max(1, req.context - answer) if given else DEFAULT_PROMPT
    return prompt, answer


def users_for(load: Load) -> int:
    """Concurrent users to size for: the 99th percentile of the Poisson number in flight."""
    return max(1, poisson_quantile(load.mean_in_flight))


def assumed_lengths(req: Request, prompt: int, answer: int) -> list[str]:
    """What request_lengths assumed for (prompt, answer), with the source of each default."""
    assumed = []
    if req.prompt is None and "context" not in req.model_fields_set:
        assumed.append(_("prompt {tokens} tokens (not given: the median conversation request in "
                         "Azure's 2023 inference trace)").format(tokens=prompt))
    if req.output is None:
        assumed.append(_("answer {tokens} tokens (not given: ShareGPT conversations' average)")
                       .format(tokens=answer))
    return assumed


def peak_assumed(peak: float) -> str:
    return _("peak factor {peak:g}: a working day's requests arrive in about 8 busy hours (set "
             "peak=)").format(peak=peak)


def traffic_doc(req: Request, load: Load, users: int) -> TrafficDoc:
    assumed = assumed_lengths(req, load.prompt, load.answer)
    if req.peak is None:
        assumed.append(peak_assumed(load.peak))
    text = _("{requests}/day x {peak:g} peak factor = {rate:.2f} requests/s in the "
             "busiest hour; each takes up to {seconds:.1f} s ({ttft:.1f} s to the first token + "
             "{answer} tokens at {floor:g} tokens/s), so {mean:.1f} are in flight on average "
             "(Little's law); sized for {users}, the 99th percentile of that Poisson count; "
             "{tokens} tokens a month ({prompt} in + {answer} out per request)").format(
        requests=counted(load.requests_per_day, "request"), peak=load.peak, rate=load.peak_rate,
        seconds=load.seconds, ttft=load.ttft_s, answer=load.answer, floor=load.decode_floor,
        mean=load.mean_in_flight, users=users, tokens=_tokens(load.tokens_per_month), prompt=load.prompt)
    return TrafficDoc.build(
        requests_per_day=load.requests_per_day, prompt_tokens=load.prompt,
        answer_tokens=load.answer, peak_factor=load.peak, seconds_per_request=round(load.seconds, 2),
        peak_requests_per_s=round(load.peak_rate, 4), mean_in_flight=round(load.mean_in_flight, 2),
        users=users, tokens_per_month=round(load.tokens_per_month), text=text, assumed=assumed)


def _tokens(count: float) -> str:
    for unit, scale in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if count >= scale:
            return f"{count / scale:,.1f}{unit}"
    return f"{count:,.0f}"


def with_traffic(req: Request) -> tuple[Request, TrafficDoc | None]:
    """Serving with requests=: the users (when users= is not given), the context (when context=
    is not given: prompt + answer) and the prompt/answer split the traffic needs, and the
    conversion's document."""
    load = load_of(req)
    if load is None or not req.is_serving:
        return req, None
    users = users_for(load)
    given = req.model_fields_set
    update: dict[str, int] = {}
    if "users" not in given:
        update["users"] = min(users, 100_000)
    if "context" not in given:
        update["context"] = load.tokens_per_request
    # the forward answer splits each sequence as the traffic does (first token after the prompt)
    if req.prompt is None:
        update["prompt"] = load.prompt
    if req.output is None:
        update["output"] = load.answer
    doc = traffic_doc(req, load, users)
    if "users" in given and req.users < users:
        doc.assumed.append(_("users={given} as given, under the {users} this traffic has in "
                             "flight at its peak").format(given=req.users, users=users))
    return (req.model_copy(update=update) if update else req), doc
