"""Slack's 429 and its Retry-After, for the Slack client (bot.app): inside a job the job is
deferred (bot.once), outside one a short wait is waited out."""

from __future__ import annotations

import contextlib

from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState

from bot.job import JOBS
from bot.once import CURRENT

MAX_INLINE_WAIT_S = 2.0  # outside a job (before an ack), a 429 is waited out only this long


class RateLimits(AsyncRateLimitErrorRetryHandler):
    """Slack's 429 and its Retry-After. Inside a job the wait never holds a job slot: the job is
    deferred for Retry-After (its done steps memoized) and this run stops. Outside a job (before
    an ack) a wait up to MAX_INLINE_WAIT_S is waited out; a longer one is not retried."""

    async def _can_retry_async(self, *, state: RetryState, request: HttpRequest,
                               response: HttpResponse | None = None,
                               error: Exception | None = None) -> bool:
        if response is None or response.status_code != 429:
            return False
        wait = retry_after_s(response)
        ctx = CURRENT.get()
        if ctx is not None and ctx.durable:
            ctx.defer(wait, "rate limited")
            JOBS.labels("rate_limited").inc()
            return False
        return wait <= MAX_INLINE_WAIT_S


def retry_after_s(response: HttpResponse) -> float:
    for name, values in response.headers.items():
        if name.lower() == "retry-after":
            with contextlib.suppress(ValueError, IndexError, TypeError):
                return max(0.0, float(values[0] if isinstance(values, list) else values))
    return 1.0
