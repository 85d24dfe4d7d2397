"""Listeners by kind (the Slack starter template's layout): each folder has a register(app)."""

from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.dialog import Dialog
from bot.digest import Digests
from bot.language import Languages
from bot.listeners import actions, commands, events


def register(app: AsyncApp, dialog: Dialog, digests: Digests, languages: Languages) -> None:
    commands.register(app, dialog, digests, languages)
    actions.register(app, dialog, languages)
    events.register(app, dialog, languages)
