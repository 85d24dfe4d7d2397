from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.dialog import Dialog
from bot.language import Languages
from bot.listeners.events import messages


def register(app: AsyncApp, dialog: Dialog, languages: Languages) -> None:
    app.event("message")(messages.thread_message(dialog, languages))
    app.event("app_mention")(messages.mention(dialog, languages))
