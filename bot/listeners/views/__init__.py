from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.listeners.views import form
from bot.parts import Parts
from present.actions import SIZE_THIS, Action, View


def register(app: AsyncApp, parts: Parts) -> None:
    app.options(Action.FORM_MODEL.value)(form.model_menu())
    app.view(View.FORM.value)(form.submitted(parts))
    app.shortcut(SIZE_THIS)(form.shortcut(parts))
