"""Listeners by kind (the Slack starter template's layout): each folder has a register(app).

Listeners are thin: they read a Slack payload, record the work as a job before the ack
(bot/jobs.py) and hand it to the bot's parts (bot/parts.py) when the job runs."""

from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.listeners import actions, commands, events, fallback, views
from bot.parts import Parts


def register(app: AsyncApp, parts: Parts) -> None:
    """Every listener records its work as a job before the ack; `parts.jobs` runs them."""
    commands.register(app, parts)
    actions.register(app, parts)
    events.register(app, parts)
    views.register(app, parts)
    fallback.register(app, parts)  # last: what no listener above claims
