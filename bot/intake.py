"""Intake: read and check a command before Slack's ack, and look a Hub model up after it.

Before the ack (on the event loop, within Slack's 3 s) only what is known here is read: the
grammar, the catalog, the family templates and the local Hub cache (hits and remembered misses),
never the network. A Hub repo id nobody has looked up yet passes (`pending_lookup`) and is looked
up after the ack in an I/O thread of its own (`look_up`), so a slow Hub delays no ack and no
one else's answer. How many new repo ids one person may have looked up is limited
(`NEW_HUB_MODELS`, counted in Redis).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from redis.asyncio import Redis
from redis.exceptions import RedisError

from bot import keys
from bot.limits import Limit, allow, minutes, refused_here
from bot.words import TOO_MANY_THREADS
from engine import UnknownModel, UserError, catalog
from engine import hub as hub_cache
from engine.architecture import ModelSpec
from engine.family import parse_size
from engine.i18n import _
from engine.parse import build_request, parse_fields, read_reply
from engine.reader import has_slot
from engine.request import Draft
from engine.resolve import HubLookup, resolve_model

# New Hub repo ids one person may have looked up: each costs a request to the Hub and one of
# the look-up threads for up to HUB_TIMEOUT_S
NEW_HUB_MODELS = Limit("hub-new", count=10, window_s=600)
T = TypeVar("T")
_HUB_THREADS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="hub-lookup")
# Reading is CPU work in threads that share the GIL with the event loop: each reading thread more
# is one more holder the loop waits behind at every hand-over, so a few long messages read at
# once stalled everyone's acks (80-197 ms, bench/attacks_next.py long_reply). One thread reads at
# a time; a member's own reads queue behind each other (MemberTurns lets a member two at once).
_READERS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reader")


async def off_loop(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` in the reading thread, with this task's context (the asker's language)."""
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(
        _READERS, functools.partial(context.run, fn, *args))


class TooManyThreads(UserError):
    """Over the per-person limit on new threads: said as it is, with no correction to run."""


class _NotLookedUpYet(LookupError):
    """A Hub repo id the local cache has neither a spec nor a recent miss for."""


class Intake:
    def __init__(self, redis: Redis, hub: HubLookup | None = None) -> None:
        self.redis = redis
        self.hub = hub

    @staticmethod
    def warm_up() -> None:
        """Read a sentence through each reader once: their phrase tables compile on first use
        (about 0.3 s of CPU here), which the first message to reach a fresh process would
        otherwise pay for, holding up everyone's acks beside it (the reading thread holds the
        GIL while patterns compile)."""
        sample = "预算15万 全参微调 llama-3.1-8b 并发 50 users, budget 20k, what about qlora?"
        for read in (has_slot, read_reply, parse_fields):
            with contextlib.suppress(UserError):
                read(sample)

    def check(self, text: str) -> Draft:
        """A command line as a Draft, validated as far as it goes (ParseError / UnknownModel),
        from what is known here only: a Hub repo id not looked up yet passes (`pending_lookup`)."""
        draft = parse_fields(text)
        if draft.model is None:
            build_request(draft)  # the engine's own "missing MODEL", in the asker's language
        self.validate(draft)
        return draft

    async def read(self, text: str) -> Draft:
        """`check` off the event loop (issue 26): no message, however long or odd, holds up
        anyone else's ack while it is read. The language and other context go with it."""
        return await off_loop(self.check, text)

    def validate(self, draft: Draft) -> None:
        """Never the network (this runs before Slack's ack, on the event loop): the catalog, the
        family templates and the local Hub cache, hits and remembered misses alike."""
        if draft.method is not None:
            build_request(draft)
        if draft.model is not None:
            # a repo id not looked up yet is accepted for now: looked up after the ack
            with contextlib.suppress(_NotLookedUpYet):
                resolve_model(draft.model, hub=self._hub_cached if self.hub else None)

    @staticmethod
    def _hub_cached(repo_id: str) -> ModelSpec:
        spec = hub_cache.cached(repo_id)  # UnknownModel for a remembered miss
        if spec is None:
            raise _NotLookedUpYet(repo_id)
        return spec

    def pending_lookup(self, draft: Draft) -> str | None:
        """The Hub repo id `draft` names that nobody has looked up yet (it is looked up after the
        ack). None when the model is known here, or known to be missing."""
        model = draft.model
        if (self.hub is None or model is None or "/" not in model
                or catalog.find_model(model) is not None or parse_size(model) is not None):
            return None
        try:
            return model if hub_cache.cached(model) is None else None
        except UnknownModel:
            return None  # a remembered miss: validate says so

    async def admit(self, text: str, *, team: str, user: str) -> Draft:
        """`check`, then the limit on new Hub repo ids per user (NEW_HUB_MODELS): over it, an
        UnknownModel saying when to try again. Before the ack: local and Redis only."""
        draft = await self.read(text)
        await self.allow_lookup(team, user, draft)
        return draft

    async def admit_question(self, text: str, *, team: str, user: str, limit: Limit,
                             attempt: str = "") -> Draft:
        """`admit`, then count a new thread against `limit` (one person's new threads an hour):
        every way a question opens a thread comes here (a slash command, a mention or a direct
        message, the form from the command, the shortcut or App Home, an error's "Run it"), so
        none goes around the limit. Over it, TooManyThreads, and a member already refused in
        this window is refused before the text is read (bot.limits.refused_here). `attempt`
        names the request (a message's ts, a request's digest): admitted again, it is not
        counted again."""
        refused = refused_here(limit, team, user)
        if refused is None:  # not already over the limit here: read, then count
            draft = await self.admit(text, team=team, user=user)
            verdict = await allow(self.redis, limit=limit, team=team, subject=user,
                                  attempt=attempt)
            if verdict.allowed:
                return draft
            refused = verdict
        raise TooManyThreads(_(TOO_MANY_THREADS).format(count=limit.count,
                                                        minutes=minutes(refused)))

    async def allow_lookup(self, team: str, user: str, draft: Draft) -> None:
        """Count a repo id this user has not asked about in this window against the limit; the
        same id again (its command, then its answer) is free. Without Redis it allows."""
        repo = self.pending_lookup(draft)
        if repo is None:
            return
        seen = keys.hub_new_model(team, user, repo)
        try:
            if not await self.redis.set(seen, "1", nx=True, ex=NEW_HUB_MODELS.window_s):
                return
        except (RedisError, OSError):
            return
        verdict = await allow(self.redis, limit=NEW_HUB_MODELS, team=team, subject=user)
        if verdict.allowed:
            return
        with contextlib.suppress(RedisError, OSError):
            await self.redis.delete(seen)
        raise UnknownModel(_(
            "{model} is not known here yet, and you have asked for {count} new models in the last "
            "{minutes} minutes, the most the Hugging Face Hub is asked for one person. Try again "
            "in {wait} minutes, or use a catalog model (`/gpusize help`).").format(
            model=repo, count=NEW_HUB_MODELS.count, minutes=NEW_HUB_MODELS.window_s // 60,
            wait=max(1, -(-verdict.retry_after_s // 60))))

    async def look_up(self, team: str, user: str, draft: Draft) -> None:
        """After the ack: the limit again (free for an id already counted), then the Hub look-up
        of a repo id nobody has looked up yet, in an I/O thread rather than an answer worker, so
        others' answers do not queue behind a slow Hub; the worker then reads the cache.
        UnknownModel when the Hub does not have it."""
        await self.allow_lookup(team, user, draft)
        repo = self.pending_lookup(draft)
        if repo is not None:
            lookup = functools.partial(contextvars.copy_context().run, hub_cache.lookup, repo)
            await asyncio.get_running_loop().run_in_executor(_HUB_THREADS, lookup)
