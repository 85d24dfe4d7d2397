from __future__ import annotations

import re

from slack_bolt.async_app import AsyncApp

from bot.dialog import Dialog
from bot.language import Languages
from bot.listeners.actions import buttons


def register(app: AsyncApp, dialog: Dialog, languages: Languages) -> None:
    def on(action: str | re.Pattern[str], work: buttons.Work) -> None:
        app.action(action)(buttons.guarded(dialog, languages, work))

    on(re.compile(r"^answer_method_"), buttons.answer_method(dialog))
    on(re.compile(r"^answer_budget(_skip)?$"), buttons.answer_budget(dialog))
    # everything under an answer (what-ifs, "Rent vs buy", the menu); the dialog checks that
    # the press is on the thread's live answer and dispatches on the value
    on(re.compile(r"^(whatif_|show_|card_more$)"), buttons.card_action(dialog))
