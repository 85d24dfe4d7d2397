"""Listeners by kind (the Slack starter template's layout): each folder has a register(app)."""

from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.dialog import Dialog
from bot.digest import Digests
from bot.listeners import actions, commands, events


def register(app: AsyncApp, dialog: Dialog, digests: Digests) -> None:
    commands.register(app, dialog, digests)
    actions.register(app, dialog)
    events.register(app, dialog)
