"""Who may do what inside a workspace.

Anyone may ask, read prices, add a quote and set their own language. Workspace admins and owners
(users.info is_admin / is_owner, cached for ADMIN_CACHE_S in Redis) may also set the workspace's
language and remove anyone's quote or digest subscription; a quote's or a subscription's creator
may remove their own. Any member may subscribe a channel the bot is a member of (the digest shows
prices every member can already read with `/gpusize price`), up to the workspace's cap; replacing a
channel's existing subscription is for its creator or an admin.

Admin means an admin of *this* workspace: in a Slack Connect channel a member of another
organisation may be an admin there, and users.info says so (is_admin) beside their own team_id.
Only a user whose team_id is the workspace's counts; one without a team_id does not.

When Slack cannot say whether someone is an admin, admin-only actions are refused (fail closed)
with a message saying so; nothing stored changes.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError

from bot import keys
from engine.errors import UserError
from engine.i18n import N_

ADMIN_CACHE_S = 300  # a demoted admin keeps their rights at most this long
SLACK_TIMEOUT_S = 2.0


class AdminUnknown(Exception):
    """users.info failed: whether the user is an admin cannot be told."""


def is_workspace_admin(profile: dict[str, Any], team: str) -> bool:
    """users.info's user is an admin or owner of the workspace `team` (not of their own
    organisation elsewhere, as a Slack Connect member may be)."""
    if profile.get("team_id") != team:
        return False
    return bool(profile.get("is_admin") or profile.get("is_owner")
                or profile.get("is_primary_owner"))


class Permissions:
    def __init__(self, redis: Redis, client: Any) -> None:
        self.redis = redis
        self.client = client

    async def is_admin(self, *, team: str, user: str) -> bool:
        """Whether `user` is a workspace admin or owner; AdminUnknown if Slack cannot say."""
        with contextlib.suppress(RedisError, OSError):
            cached = await self.redis.get(keys.admin_cache(team, user))
            if cached in ("0", "1"):
                return cached == "1"
        try:
            info = await asyncio.wait_for(self.client.users_info(user=user), SLACK_TIMEOUT_S)
        except Exception as err:  # SlackApiError, a timeout, no network: cannot tell
            raise AdminUnknown from err
        if not info.get("ok", True) or not isinstance(info.get("user"), dict):
            raise AdminUnknown
        profile = info["user"]
        admin = is_workspace_admin(profile, team)
        with contextlib.suppress(RedisError, OSError):
            await self.redis.set(keys.admin_cache(team, user), "1" if admin else "0",
                                 ex=ADMIN_CACHE_S)
        return admin

    async def may_manage(self, *, team: str, user: str, owner: str) -> bool:
        """Whether `user` may change or remove something `owner` created: its creator, or an
        admin (AdminUnknown when that has to be asked and Slack cannot say)."""
        return user == owner or await self.is_admin(team=team, user=user)

    async def bot_in_channel(self, channel: str) -> str | None:
        """None when the bot can post in `channel`, else Slack's reason (`not_in_channel`,
        `channel_not_found`, `is_archived`, or the error conversations.info gave)."""
        try:
            info = await asyncio.wait_for(self.client.conversations_info(channel=channel),
                                          SLACK_TIMEOUT_S)
        except Exception as err:
            response = getattr(err, "response", None)
            reason = response.get("error") if response is not None else None
            return str(reason or type(err).__name__)
        conversation = info.get("channel") or {}
        if conversation.get("is_archived"):
            return "is_archived"
        if conversation.get("is_im") or conversation.get("is_mpim"):
            return "not_a_channel"
        if not conversation.get("is_member"):
            return "not_in_channel"
        return None


class Refused(UserError):
    """An action this user may not take; the message (translated) says why and what to do."""


ADMIN_UNKNOWN = N_("Slack did not say whether you are a workspace admin, so nothing was changed; "
                   "try again in a minute.")
