from __future__ import annotations

import re

from slack_bolt.async_app import AsyncApp

from bot.dialog import Dialog
from bot.listeners.actions import buttons


def register(app: AsyncApp, dialog: Dialog) -> None:
    app.action(re.compile(r"^answer_method_"))(buttons.answer_method(dialog))
    app.action(re.compile(r"^answer_budget(_skip)?$"))(buttons.answer_budget(dialog))
    app.action(re.compile(r"^whatif_method_"))(buttons.whatif(dialog, "method"))
    app.action("whatif_goal")(buttons.whatif(dialog, "goal"))
    app.action("show_breakdown")(buttons.show_breakdown(dialog, "memory"))
    app.action("show_rent_vs_buy")(buttons.show_breakdown(dialog, "cost"))
    app.action("show_chart")(buttons.show_chart(dialog, "memory"))
    app.action("show_price_chart")(buttons.show_chart(dialog, "prices"))
