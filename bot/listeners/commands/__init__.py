from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.dialog import Dialog
from bot.digest import Digests
from bot.language import Languages
from bot.listeners.commands import gpusize


def register(app: AsyncApp, dialog: Dialog, digests: Digests, languages: Languages) -> None:
    app.command("/gpusize")(gpusize.handler(dialog, digests, languages))
