"""`/gpusize digest subscribe|unsubscribe|preview|list`: the sub-command over bot/digest.py's
subscriptions, as bot/pricecommands.py is over the price store. Who may change a channel's
digest is bot/permissions.py's to say."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from bot.digest import USAGE, Digests, parse_subscribe
from bot.permissions import ADMIN_UNKNOWN, AdminUnknown, Permissions, Refused
from engine.i18n import _
from present.blockkit import channel_ref, user_ref


def _target(words: list[str], default: str) -> str:
    for word in words:
        if m := re.fullmatch(r"<#([CG][A-Z0-9]+)(\|[^>]*)?>", word):
            return m.group(1)
    return default


async def _may_manage(permissions: Permissions, *, team: str, user: str, owner: str) -> bool:
    try:
        return await permissions.may_manage(team=team, user=user, owner=owner)
    except AdminUnknown:
        raise Refused(_(ADMIN_UNKNOWN)) from None


async def digest_command(digests: Digests, permissions: Permissions, command: dict[str, Any],
                         text: str) -> list[str]:
    """`/gpusize digest subscribe|unsubscribe|preview|list`: the sections of a private reply.
    Refused (with the reason) when the user may not; see bot/permissions.py for who may."""
    words = text.split()[1:]
    action = words[0].lower() if words else "help"
    team, channel, user = command["team_id"], command["channel_id"], command["user_id"]
    now = datetime.now(UTC)
    if action == "subscribe":
        sub = parse_subscribe(words[1:], team=team, channel=channel, user=user, now=now)
        existing = await digests.subscription(team, sub.channel)
        if existing is not None and not await _may_manage(permissions, team=team, user=user,
                                                          owner=existing.created_by):
            raise Refused(_("{channel} already has a digest, set up by {user}; only they or a "
                            "workspace admin can change it.").format(
                channel=channel_ref(sub.channel), user=user_ref(existing.created_by)))
        reason = await permissions.bot_in_channel(sub.channel)
        if reason is not None:
            raise Refused(_("I cannot post in {channel} (Slack says `{reason}`): invite me there "
                            "first (`/invite @gpusize` in that channel), then subscribe "
                            "again.").format(channel=channel_ref(sub.channel), reason=reason[:40]))
        await digests.subscribe(sub)  # SubscriptionsFull says so to the asker
        return [_("Subscribed: a GPU price digest {when}. The first one comes at the next slot; "
                  "`/gpusize digest preview` shows what it will say.").format(when=sub.describe())]
    if action == "unsubscribe":
        target = _target(words[1:], channel)
        existing = await digests.subscription(team, target)
        if existing is None:
            return [_("No digest subscription for {channel}.").format(
                channel=channel_ref(target))]
        if not await _may_manage(permissions, team=team, user=user, owner=existing.created_by):
            raise Refused(_("Only the person who subscribed {channel} ({user}) or a workspace "
                            "admin can remove its digest.").format(
                channel=channel_ref(target), user=user_ref(existing.created_by)))
        await digests.unsubscribe(team, target)
        return [_("Unsubscribed.")]
    if action == "preview":
        sections, title = await digests.compose(team, channel, now=now)
        return [f"*{title}* " + _("(preview)"), *sections]
    if action == "list":
        subs = sorted(await digests.subscriptions(team), key=lambda s: s.created_at)
        return ["\n".join(f"• {s.status()}" for s in subs) or _("No digest subscriptions.")]
    return [_(USAGE)]
