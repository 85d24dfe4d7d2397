"""Posting to Slack: answers in the channel (privately when the bot is not a member), thread
replies, message updates, private notices and apologies, file uploads.

Every call goes through `bot.once.once`: inside a job, a re-run after a crash gets what the first run
got (the message ts) instead of posting again; outside a job it is a plain call. Posts go through
`bot.once.posted_once`: marked with the job and step in their metadata, and looked for
(`find_posted`) before a re-run posts again."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.observability import SLACK_ERRORS
from bot.once import Marker, marker_of, once, posted_once
from bot.words import APOLOGY, INVITE, THREAD_DOWN
from engine.i18n import _
from present import blockkit

Respond = Callable[..., Awaitable[Any]]
NOT_IN_CHANNEL = ("not_in_channel", "channel_not_found", "is_archived")
UNREADABLE = ("missing_scope", "not_in_channel", "channel_not_found", "thread_not_found")
FIND_PAGES = 5  # a re-run looks through at most 1,000 messages for what it posted before


class Notice:
    """A message of plain sections (and buttons under them): its blocks and the fallback text
    notifications show."""

    def __init__(self, text: str, context: str = "", user: str = "",
                 buttons: list[dict[str, Any]] | None = None) -> None:
        visible = blockkit.clean_input(text).strip()  # what is left once reference markers go
        text = text if visible else "(empty)"  # Slack rejects empty text objects
        context = context if blockkit.clean_input(context).strip() else ""
        sections = blockkit.sections(text)  # cut between lines, measured after escaping
        self.text = blockkit.fallback(blockkit.visible(text).split("\n", 1)[0][:300].replace(
            "*", "")) if "\n" in text else blockkit.fallback(text)
        self.blocks = blockkit.blocks("notice.json.j2", n={"sections": sections,
                                                           "context": context, "user": user,
                                                           "buttons": buttons or []})


class Replies:
    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client

    async def post(self, *, channel: str, respond: Respond | None, blocks: list[dict[str, Any]],
                   text: str) -> str | None:
        """Post in the channel and return the message ts; if the bot is not a member, answer the
        asker privately instead (None)."""
        async def post(marker: Marker | None) -> str:
            extra = {"metadata": marker} if marker else {}
            resp = await with_table_fallback(
                lambda shown: self.client.chat_postMessage(channel=channel, blocks=shown,
                                                           text=text, **extra), blocks)
            return str(resp["ts"])

        try:
            return await posted_once("post", post, lambda marker: self.find_posted(
                channel, marker))
        except SlackApiError as err:
            SLACK_ERRORS.labels(str(err.response.get("error"))).inc()
            if err.response.get("error") not in NOT_IN_CHANNEL or respond is None:
                raise
        # a private copy cannot be continued (no thread): nothing on it to press
        await once("respond", lambda: _none(respond(
            response_type="ephemeral", replace_original=False, text=text,
            blocks=[*blockkit.without_actions(blocks), {"type": "context", "elements": [
                {"type": "mrkdwn", "text": _(INVITE)}]}][:50])))
        return None

    async def respond(self, respond: Respond, **message: Any) -> None:
        """A reply through the command's response_url (once per job step)."""
        await once("respond", lambda: _none(respond(**message)))

    async def direct_channel(self, user: str) -> str:
        """The bot's direct-message conversation with `user` (its id, D...): a form submitted
        where no channel is known is answered there, and continues there like any thread."""
        resp = await self.client.conversations_open(users=user)
        return str((resp.get("channel") or {}).get("id") or user)

    async def direct(self, user: str, text: str) -> None:
        """`text` as a direct message to `user` (a press with no channel to answer in)."""
        note = Notice(text)
        channel = await self.direct_channel(user)
        await once("direct", lambda: _none(self.client.chat_postMessage(
            channel=channel, text=note.text, blocks=note.blocks)))

    def privately(self, channel: str, user: str) -> Respond:
        """A `respond` for work that has no response_url (a submitted form): an ephemeral
        message in the channel, or a direct message when the bot cannot post there."""
        async def respond(*, text: str = "", blocks: list[dict[str, Any]] | None = None,
                          **_ignored: Any) -> None:
            extra = {"blocks": blocks} if blocks else {}
            try:
                await self.client.chat_postEphemeral(channel=channel, user=user, text=text,
                                                     **extra)
            except SlackApiError as err:
                if err.response.get("error") not in NOT_IN_CHANNEL:
                    raise
                await self.client.chat_postMessage(channel=user, text=text, **extra)

        return respond

    async def in_thread(self, channel: str, thread_ts: str, *, text: str,
                        blocks: list[dict[str, Any]] | None = None) -> str:
        async def post(marker: Marker | None) -> str:
            extra = {"metadata": marker} if marker else {}
            resp = await with_table_fallback(
                lambda shown: self.client.chat_postMessage(
                    channel=channel, thread_ts=thread_ts, text=text, **extra,
                    **({"blocks": shown} if shown is not None else {})), blocks)
            return str(resp["ts"])

        return await posted_once("in_thread", post, lambda marker: self.find_posted(
            channel, marker, thread_ts=thread_ts))

    async def find_posted(self, channel: str, marker: Marker,
                          thread_ts: str = "") -> str | None:
        """The ts of the message an earlier run of a job posted for this step (its metadata
        names both), looked for among the channel's newest messages or the thread's replies;
        None when it is not there (or the bot may not read the channel: then it posts)."""
        wanted = (marker["event_payload"]["job"], marker["event_payload"]["step"])
        cursor = ""
        for _page in range(FIND_PAGES):
            try:
                if thread_ts:
                    resp = await self.client.conversations_replies(
                        channel=channel, ts=thread_ts, limit=200, cursor=cursor or None,
                        include_all_metadata=True)
                else:
                    resp = await self.client.conversations_history(
                        channel=channel, limit=200, cursor=cursor or None,
                        include_all_metadata=True)
            except SlackApiError as err:
                if err.response.get("error") in UNREADABLE:
                    return None
                raise
            for message in resp.get("messages") or []:
                if marker_of(message) == wanted:
                    return str(message["ts"])
            cursor = ((resp.get("response_metadata") or {}).get("next_cursor")) or ""
            if not cursor:
                return None
        return None

    async def say(self, channel: str, thread_ts: str, text: str) -> None:
        await self.in_thread(channel, thread_ts, text=blockkit.fallback(text))

    async def notice_in_thread(self, channel: str, thread_ts: str, note: Notice) -> None:
        await self.in_thread(channel, thread_ts, text=note.text, blocks=note.blocks)

    async def update(self, channel: str, ts: str, note: Notice) -> None:
        await once("update", lambda: _none(self.client.chat_update(
            channel=channel, ts=ts, text=note.text, blocks=note.blocks)))

    async def edit(self, channel: str, ts: str, *, blocks: list[dict[str, Any]],
                   text: str) -> None:
        """Replace a message's blocks (an answer refreshed, or retired without its buttons)."""
        await once("edit", lambda: _none(with_table_fallback(
            lambda shown: self.client.chat_update(channel=channel, ts=ts, text=text,
                                                  blocks=shown), blocks)))

    async def private(self, channel: str, user: str, text: str, thread_ts: str = "") -> None:
        note = Notice(text)
        extra = {"thread_ts": thread_ts} if thread_ts else {}
        await once("private", lambda: _none(self.client.chat_postEphemeral(
            channel=channel, user=user, text=note.text, blocks=note.blocks, **extra)))

    async def apologise(self, channel: str, user: str, thread_ts: str | None, *,
                        store_down: bool, text: str = "") -> None:
        """Best effort: tell the person instead of leaving them in silence (`text`: what went
        wrong, when it is something they can act on)."""
        with contextlib.suppress(Exception):
            await self.private(channel, user,
                               _(THREAD_DOWN) if store_down else text or _(APOLOGY),
                               thread_ts or "")

    async def open_view(self, trigger_id: str, view: dict[str, Any]) -> str:
        """Open a modal with an interaction's trigger (valid for 3 s); its view id, to update it
        once its content is worked out. Not memoized: a trigger cannot be used twice."""
        resp = await self.client.views_open(trigger_id=trigger_id, view=view)
        return str((resp.get("view") or {}).get("id") or "")

    async def push_view(self, trigger_id: str, view: dict[str, Any]) -> None:
        """A view on top of the modal a press was made in (Close returns to it)."""
        await self.client.views_push(trigger_id=trigger_id, view=view)

    async def update_view(self, view_id: str, view: dict[str, Any]) -> None:
        await once("view", lambda: _none(self.client.views_update(view_id=view_id,
                                                                        view=view)))

    async def publish_home(self, user: str, view: dict[str, Any]) -> None:
        """The user's App Home tab (views.publish replaces it whole)."""
        await once("home", lambda: _none(self.client.views_publish(user_id=user, view=view)))

    async def upload(self, channel: str, thread_ts: str, *, content: bytes, filename: str,
                     title: str, alt_text: str = "", comment: str = "") -> None:
        """A picture in the thread, with what it shows in words: alt text for screen readers and
        a comment for clients that show no images."""
        extra: dict[str, Any] = {}
        if alt_text:
            extra["alt_txt"] = alt_text[:1000]
        if comment:
            extra["initial_comment"] = blockkit.fallback(comment, 3000)
        await once("upload", lambda: _none(self.client.files_upload_v2(
            channel=channel, thread_ts=thread_ts, content=content, filename=filename, title=title,
            **extra)))


async def with_table_fallback(send: Callable[[Any], Awaitable[Any]],
                              blocks: list[dict[str, Any]] | None) -> Any:
    """Send `blocks`; when Slack rejects them (`invalid_blocks`) and they hold a table, send
    them again with the table as a narrow code block, so the answer is never lost to a client
    or workspace that does not take table blocks."""
    try:
        return await send(blocks)
    except SlackApiError as err:
        if err.response.get("error") != "invalid_blocks" or not blockkit.has_table(blocks):
            raise
        SLACK_ERRORS.labels("invalid_blocks").inc()
        return await send(blockkit.table_as_code(blocks or []))


async def _none(call: Awaitable[Any]) -> None:
    """A call whose reply nothing reads: memoized as done (None)."""
    await call
