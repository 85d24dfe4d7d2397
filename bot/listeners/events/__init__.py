from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.dialog import Dialog
from bot.listeners.events import messages


def register(app: AsyncApp, dialog: Dialog) -> None:
    app.event("message")(messages.thread_message(dialog))
    app.event("app_mention")(messages.mention(dialog))
