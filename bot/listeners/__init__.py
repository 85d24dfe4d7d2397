"""Listeners by kind (the Slack starter template's layout): each folder has a register(app)."""

from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.dialog import Dialog
from bot.digest import Digests
from bot.jobs import Jobs
from bot.language import Languages
from bot.limits import Limit
from bot.listeners import actions, commands, events


def register(app: AsyncApp, dialog: Dialog, digests: Digests, languages: Languages, jobs: Jobs,
             *, chart_limit: Limit) -> None:
    """Every listener records its work as a job before the ack; `jobs` runs them."""
    commands.register(app, dialog, digests, languages, jobs)
    actions.register(app, dialog, languages, jobs, chart_limit=chart_limit)
    events.register(app, dialog, languages, jobs)
