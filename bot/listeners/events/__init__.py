from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.listeners.events import messages
from bot.parts import Parts


def register(app: AsyncApp, parts: Parts) -> None:
    # recorded before Bolt's automatic ack; run by the job consumer
    app.middleware(messages.record(parts))
    parts.jobs.handle("message", messages.run_message(parts))
    parts.jobs.handle("app_mention", messages.run_mention(parts))
