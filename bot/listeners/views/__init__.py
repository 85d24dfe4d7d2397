from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.listeners.views import form, home
from bot.parts import Parts
from present.actions import SIZE_THIS, Action, View


def register(app: AsyncApp, parts: Parts) -> None:
    app.options(Action.FORM_MODEL.value)(form.model_menu())
    app.view(View.FORM.value)(form.submitted(parts))
    app.shortcut(SIZE_THIS)(form.shortcut(parts))
    app.event("app_home_opened")(home.opened(parts))
    app.action(Action.HOME_RUN.value)(home.control(parts))
    parts.jobs.handle("home", home.run_control(parts))
    app.action(Action.OPEN_FORM.value)(form.open_button(parts))
