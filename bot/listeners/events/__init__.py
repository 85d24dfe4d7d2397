from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.dialog import Dialog
from bot.jobs import Jobs
from bot.language import Languages
from bot.listeners.events import messages


def register(app: AsyncApp, dialog: Dialog, languages: Languages, jobs: Jobs) -> None:
    # recorded before Bolt's automatic ack; run by the job consumer
    app.middleware(messages.record(jobs))
    jobs.handle("message", messages.run_message(dialog, languages))
    jobs.handle("app_mention", messages.run_mention(dialog, languages))
