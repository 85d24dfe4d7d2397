"""Every Redis key the bot uses, in one place. The schema version is in the prefix so a change of
layout never reads old data."""

from __future__ import annotations

PREFIX = "gpusize:v1"


def conversation(team: str, channel: str, thread_ts: str) -> str:
    """Hash: one field per request input, plus _stage, _version, _message_ts."""
    return f"{PREFIX}:conv:{team}:{channel}:{thread_ts}"


def conversation_log(team: str, channel: str, thread_ts: str) -> str:
    """List: who changed what, oldest first."""
    return f"{PREFIX}:convlog:{team}:{channel}:{thread_ts}"


def event_seen(event_id: str) -> str:
    """Set once per Slack event id: retried and duplicate deliveries are dropped."""
    return f"{PREFIX}:event:{event_id}"


def action_seen(team: str, user: str, action_ts: str) -> str:
    """Set once per button press: interactive payloads are not retried, double clicks happen."""
    return f"{PREFIX}:action:{team}:{user}:{action_ts}"


def message_seen(team: str, channel: str, ts: str) -> str:
    """Set once per message: a thread reply that mentions the bot arrives as two events."""
    return f"{PREFIX}:msg:{team}:{channel}:{ts}"
