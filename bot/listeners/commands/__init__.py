from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.dialog import Dialog
from bot.listeners.commands import gpusize


def register(app: AsyncApp, dialog: Dialog) -> None:
    app.command("/gpusize")(gpusize.handler(dialog))
