"""The edge in front of Bolt: what an unauthenticated request can cost the bot.

`SlackEdge` (ASGI middleware) reads a Slack request's body incrementally, with a size limit and a
deadline, and checks its signature and timestamp on the raw bytes before anything parses it:
413 for a body over the limit, 408 for a body that does not arrive in time, 401 for a missing or
bad signature, 400 for a signed body that does not parse, and never a traceback in a response.
Nothing here logs a body.

`edge_protocol` is uvicorn's h11 protocol with a header deadline: uvicorn has none, so a socket
that sends half a request line and waits held a file descriptor for ever (1,100 of them took the
bot down). A connection whose request headers are not in within `header_timeout_s` is closed,
and past `max_waiting` such connections the oldest is closed to make room, so a flood of
half-open sockets cannot keep Slack's requests out.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

import h11
from slack_sdk.signature import SignatureVerifier
from uvicorn.protocols.http.h11_impl import H11Protocol

from bot.observability import EDGE_REJECTED

log = logging.getLogger(__name__)
LOG_REJECTIONS_PER_MINUTE = 60
MEMBER_IN_FLIGHT = 2  # one member's requests handled at once (MemberTurns)
TURN_WAIT_S = 1.0  # the longest a request waits for its member's turn (acks are due in 3 s)
COMMAND_FIELDS = ("team_id", "user_id", "channel_id")  # what the /gpusize listener reads

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class Rejected(Exception):
    """A request the edge answers itself: `status` and a short reason (logged and counted)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class SlackEdge:
    """ASGI middleware: every request's body is bounded; requests to `signed_paths` must carry a
    valid Slack signature over exactly the bytes that reach Bolt."""

    def __init__(self, app: ASGIApp, *, signing_secret: str, max_body_bytes: int,
                 body_timeout_s: float, signed_paths: tuple[str, ...] = ("/slack/events",),
                 member_in_flight: int = MEMBER_IN_FLIGHT) -> None:
        self.app = app
        self.turns = MemberTurns(member_in_flight)
        self.verifier = SignatureVerifier(signing_secret)
        self.max_body_bytes = max_body_bytes
        self.body_timeout_s = body_timeout_s
        self.signed_paths = signed_paths
        self._log_window, self._logged, self._unlogged = time.monotonic(), 0, 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked_send(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            self._check_declared_length(scope)
            if scope["path"] in self.signed_paths and scope["method"] == "POST":
                body = await self._read_body(receive)
                if body is None:
                    return  # the client went away
                self._verify(scope, body)
                member = self._check_parses(scope, body)
                async with self.turns.turn(member):  # a member's burst waits behind itself
                    await self.app(scope, _replay(body, receive), tracked_send)
                return
            await self.app(scope, self._bounded(receive), tracked_send)
        except Rejected as rejected:
            EDGE_REJECTED.labels(rejected.reason).inc()
            if self._may_log():
                log.info("rejected %s %s: %s (%d)", scope["method"], scope["path"][:64],
                         rejected.reason, rejected.status)
            if not started:
                await _respond(send, rejected.status, rejected.reason)
        except Exception:  # the details go to the log (capped), never to the client
            log.exception("request failed")
            if not started:
                await _respond(send, 500, "internal error")

    def _may_log(self) -> bool:
        """At most LOG_REJECTIONS_PER_MINUTE lines about refused requests (the metric counts
        them all): a flood of forged requests must not become a flood of log lines."""
        now = time.monotonic()
        if now - self._log_window > 60:
            if self._unlogged:
                log.warning("%d more refused requests in the last minute, not logged one by one",
                            self._unlogged)
            self._log_window, self._logged, self._unlogged = now, 0, 0
        if self._logged < LOG_REJECTIONS_PER_MINUTE:
            self._logged += 1
            return True
        self._unlogged += 1
        return False

    def _check_declared_length(self, scope: Scope) -> None:
        value = _header(scope, b"content-length")
        if value is None:
            return
        if not value.isdigit():
            raise Rejected(400, "bad content-length")
        if int(value) > self.max_body_bytes:
            raise Rejected(413, "body too large")

    async def _read_body(self, receive: Receive) -> bytes | None:
        """The whole body, read chunk by chunk: over the limit or past the deadline it stops."""
        body = bytearray()
        deadline = time.monotonic() + self.body_timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Rejected(408, "body too slow")
            try:
                message = await asyncio.wait_for(receive(), remaining)
            except TimeoutError:
                raise Rejected(408, "body too slow") from None
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            if len(body) > self.max_body_bytes:
                raise Rejected(413, "body too large")
            if not message.get("more_body", False):
                return bytes(body)

    def _verify(self, scope: Scope, body: bytes) -> None:
        timestamp = _header(scope, b"x-slack-request-timestamp")
        signature = _header(scope, b"x-slack-signature")
        if not timestamp or not signature:
            raise Rejected(401, "unsigned")
        try:
            valid = self.verifier.is_valid(body=body, timestamp=timestamp, signature=signature)
        except (ValueError, TypeError):  # a timestamp that is not a number
            valid = False
        if not valid:
            raise Rejected(401, "bad signature")

    @staticmethod
    def _check_parses(scope: Scope, body: bytes) -> str:
        """What Bolt will parse, parsed once here so a malformed body is a 400, not a 500: JSON
        objects with a type, form posts whose payload is such an object, slash commands with the
        ids every listener reads. Returns the member who sent it ("team:user"; "" if none)."""
        try:
            text = body.decode("utf-8")
            if "json" in (_header(scope, b"content-type") or ""):
                document = json.loads(text)
                if isinstance(document, dict) and document.get("type") == "event_callback":
                    _check_event_shape(document)
                    return _member(document.get("team_id"), document["event"].get("user"))
            else:
                form = urllib.parse.parse_qs(text)
                if "command" in form:
                    if not all(form.get(key, [""])[0] for key in COMMAND_FIELDS):
                        raise ValueError("a slash command without its ids")
                    return _member(form["team_id"][0], form["user_id"][0])
                document = json.loads(form["payload"][0]) if "payload" in form else {"type": "-"}
                if "payload" in form:
                    _check_interactive_shape(document)
            if not isinstance(document, dict) or not isinstance(document.get("type"), str):
                raise ValueError("not an object with a type")
            user, team = document.get("user"), document.get("team")
            return _member((team or {}).get("id") if isinstance(team, dict) else None,
                           user.get("id") if isinstance(user, dict) else None)
        except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            raise Rejected(400, "malformed body") from None

    def _bounded(self, receive: Receive) -> Receive:
        """Other paths rarely read a body; if they do, the same limit holds."""
        seen = 0

        async def bounded() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_body_bytes:
                raise Rejected(413, "body too large")
            return message

        return bounded


class MemberTurns:
    """At most `per_member` of one member's requests in the bot at once; the rest wait here, in
    order, costing an await and nothing else. One member's burst (a script, a stuck key) then
    queues behind itself instead of in front of everyone else's acks (500 commands from one
    member, 16 at a time, on 2 shared cores: other members' acks p50 163-218 ms, max 408-523 ms
    without turns; 26-68 ms, max 195-282 ms with them).
    A request waits at most TURN_WAIT_S (a slow Redis that makes every ack slow must not make a
    member's third request miss Slack's 3 s). Requests with no member (url_verification, events
    without a user) pass straight through."""

    def __init__(self, per_member: int) -> None:
        self.per_member = per_member
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._holders: dict[str, int] = {}  # requests holding or waiting for a slot

    @contextlib.asynccontextmanager
    async def turn(self, member: str) -> AsyncIterator[None]:
        if not member:
            yield
            return
        slots = self._slots.setdefault(member, asyncio.Semaphore(self.per_member))
        self._holders[member] = self._holders.get(member, 0) + 1
        held = False
        try:
            # Slack's 3 s ack comes first: past TURN_WAIT_S a request goes in without its turn
            with contextlib.suppress(TimeoutError):
                held = await asyncio.wait_for(slots.acquire(), TURN_WAIT_S)
            yield
        finally:
            if held:
                slots.release()
            self._holders[member] -= 1
            if not self._holders[member]:  # nobody left: the member's entry goes (bounded)
                del self._holders[member], self._slots[member]


def _member(team: object, user: object) -> str:
    return f"{team}:{user}" if isinstance(team, str) and isinstance(user, str) and user else ""


# Interactive payloads: the fields Bolt and the listeners read, in the shapes Slack sends them.
# A signed payload that breaks one of these is the sender's error (400), not the bot's (500).
OBJECT_FIELDS = ("user", "team", "channel", "container", "message", "view", "state", "enterprise")
ID_FIELDS = ("user", "team", "channel")


def _check_interactive_shape(document: Any) -> None:
    if not isinstance(document, dict):
        raise ValueError("not an object")
    for name in OBJECT_FIELDS:
        if document.get(name) is not None and not isinstance(document[name], dict):
            raise ValueError(f"{name} is not an object")
    for name in ID_FIELDS:
        if isinstance(document.get(name), dict) and not isinstance(document[name].get("id"), str):
            raise ValueError(f"{name} has no id")
    if "actions" in document or document.get("type") in ("block_actions", "interactive_message"):
        actions = document.get("actions")
        if not isinstance(actions, list) or not actions or not all(
                isinstance(a, dict) and isinstance(a.get("action_id", a.get("name")), str)
                for a in actions):
            raise ValueError("actions are not a list of actions")
        if not isinstance(document.get("user"), dict):
            raise ValueError("an action without its user")
    if document.get("type") in ("view_submission", "view_closed") and not (
            isinstance(document.get("view"), dict)
            and isinstance(document["view"].get("callback_id", ""), str)
            and isinstance((document["view"].get("state") or {}).get("values", {}), dict)):
        raise ValueError("a view submission without its view")
    for name in ("callback_id", "action_id", "value"):
        if document.get(name) is not None and not isinstance(document[name], str):
            raise ValueError(f"{name} is not a string")


# Events API: an id is a string, or an object for the events that carry a whole user or channel.
EVENT_IDS = ("user", "channel", "team", "bot_id", "channel_type")
EVENT_TEXT = ("type", "subtype", "ts", "thread_ts", "event_ts", "text")


def _check_event_shape(document: dict[str, Any]) -> None:
    event = document.get("event")
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise ValueError("an event callback without its event")
    for name in EVENT_IDS:
        if event.get(name) is not None and not isinstance(event[name], str | dict):
            raise ValueError(f"event {name} is neither an id nor an object")
    for name in EVENT_TEXT:
        if event.get(name) is not None and not isinstance(event[name], str):
            raise ValueError(f"event {name} is not a string")
    for name in ("team_id", "api_app_id", "event_id"):
        if document.get(name) is not None and not isinstance(document[name], str):
            raise ValueError(f"{name} is not a string")
    if document.get("authorizations") is not None and not (
            isinstance(document["authorizations"], list)
            and all(isinstance(a, dict) for a in document["authorizations"])):
        raise ValueError("authorizations are not a list of objects")


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1").strip()
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """Bolt reads the bytes that were verified, once; after that the client's own events (a
    disconnect) come through."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _respond(send: Send, status: int, reason: str) -> None:
    data = json.dumps({"error": reason}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(data)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": data})


# -- connections ---------------------------------------------------------------------------------


def edge_protocol(*, header_timeout_s: float, max_waiting: int) -> type[H11Protocol]:
    """uvicorn's h11 protocol, with a deadline for a request's headers and a cap on how many
    connections may be waiting for theirs (the oldest is closed first)."""
    waiting: dict[EdgeProtocol, asyncio.TimerHandle] = {}  # insertion order: oldest first

    class EdgeProtocol(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._wait_for_headers()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self._wait_for_headers()  # a new request has begun (keep-alive): on the clock
            else:
                self._headers_in()

        def connection_lost(self, exc: Exception | None) -> None:
            self._headers_in()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()  # idle now: uvicorn's keep-alive timeout applies
            self._headers_in()

        def _wait_for_headers(self) -> None:
            if self in waiting:
                return
            waiting[self] = self.loop.call_later(header_timeout_s, self._too_slow, "header timeout")
            while len(waiting) > max_waiting:
                oldest = next(iter(waiting))
                oldest._too_slow("too many waiting connections")

        def _headers_in(self) -> None:
            timer = waiting.pop(self, None)
            if timer is not None:
                timer.cancel()

        def _too_slow(self, reason: str) -> None:
            self._headers_in()
            EDGE_REJECTED.labels(reason).inc()
            if not self.transport.is_closing():
                self.transport.close()

    return EdgeProtocol
