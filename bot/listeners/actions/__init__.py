from __future__ import annotations

import re

from slack_bolt.async_app import AsyncApp

from bot.dialog import Dialog
from bot.jobs import Jobs
from bot.language import Languages
from bot.limits import Limit
from bot.listeners.actions import buttons


def register(app: AsyncApp, dialog: Dialog, languages: Languages, jobs: Jobs, *,
             chart_limit: Limit) -> None:
    def on(action: str | re.Pattern[str], kind: str, work: buttons.Work) -> None:
        jobs.handle(kind, buttons.runner(dialog, languages, work))
        app.action(action)(buttons.guarded(dialog, languages, jobs, kind,
                                           chart_limit=chart_limit))

    on(re.compile(r"^answer_method_"), "press:method", buttons.answer_method(dialog))
    on(re.compile(r"^answer_budget(_skip)?$"), "press:budget", buttons.answer_budget(dialog))
    # everything under an answer (what-ifs, "Rent vs buy", the menu); the dialog checks that
    # the press is on the thread's live answer and dispatches on the value
    on(re.compile(r"^(whatif_|show_|card_more$)"), "press:card", buttons.card_action(dialog))
