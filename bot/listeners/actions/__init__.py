from __future__ import annotations

import re

from slack_bolt.async_app import AsyncApp

from bot.listeners.actions import buttons, start
from bot.parts import Parts
from present.actions import CARD_ACTIONS, Action


def register(app: AsyncApp, parts: Parts) -> None:
    def on(actions: tuple[Action, ...], kind: str, work: buttons.Work) -> None:
        parts.jobs.handle(kind, buttons.runner(parts, work))
        pattern = re.compile("|".join(action.pattern() for action in actions))
        app.action(pattern)(buttons.guarded(parts, kind))

    on((Action.ANSWER_METHOD,), "press:method", buttons.answer_method(parts))
    on((Action.ANSWER_BUDGET, Action.ANSWER_BUDGET_SKIP), "press:budget",
       buttons.answer_budget(parts))
    # everything under an answer (what-ifs, "Rent vs buy", the menu); bot.presses checks that
    # the press is on the thread's live answer and dispatches on the id and the value
    on(CARD_ACTIONS, "press:card", buttons.card_action(parts))
    # buttons that start something: an error's "Run it", help's "All options" and "Prices"
    app.action(Action.RUN_IT.value)(start.run_it(parts))
    app.action(Action.ALL_OPTIONS.value)(start.all_options(parts))
    app.action(Action.SHOW_PRICES.value)(start.prices(parts))
