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
    on(re.compile(r"^whatif_method_"), buttons.whatif(dialog, "method"))
    on("whatif_goal", buttons.whatif(dialog, "goal"))
    on("show_breakdown", buttons.show_breakdown(dialog, "memory"))
    on("show_rent_vs_buy", buttons.show_breakdown(dialog, "cost"))
    on("show_chart", buttons.show_chart(dialog, "memory"))
    on("show_price_chart", buttons.show_chart(dialog, "prices"))
