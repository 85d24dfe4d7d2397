from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.listeners.commands import gpusize
from bot.parts import Parts


def register(app: AsyncApp, parts: Parts) -> None:
    app.command("/gpusize")(gpusize.handler(parts))
    parts.jobs.handle("command", gpusize.run_command(parts))
    parts.jobs.handle("subcommand", gpusize.run_subcommand(parts))
