from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.dialog import Dialog
from bot.digest import Digests
from bot.jobs import Jobs
from bot.language import Languages
from bot.listeners.commands import gpusize


def register(app: AsyncApp, dialog: Dialog, digests: Digests, languages: Languages,
             jobs: Jobs) -> None:
    app.command("/gpusize")(gpusize.handler(dialog, digests, languages, jobs))
    jobs.handle("command", gpusize.run_command(dialog))
    jobs.handle("subcommand", gpusize.run_subcommand(dialog, digests, languages))
