"""The bot's parts, built once by `bot.app.create_bot` and handed to every listener.

Which part owns what:
- `intake` (bot/intake.py): reading and checking a command before the ack; Hub look-ups.
- `dialog` (bot/dialog.py): the thread flow (start, questions, follow-ups, answers).
- `presses` (bot/presses.py): a press under an answer card, dispatched by `Action`.
- `details` (bot/details.py): breakdowns, notes and charts posted on demand.
- `cards` (bot/cards.py): an answer card computed in a worker with the workspace's prices.
- `store` (bot/store.py): threads in Redis; `prices` (bot/pricestore.py): prices and quotes.
- `replies` (bot/replies.py): every post to Slack; `languages` (bot/language.py): who reads
  which language; `digests` (bot/digest.py); `jobs` (bot/jobs.py): acknowledged work, with
  bot/job.py (a job, its outcomes), bot/outbox.py (recording, the outbox and its journal),
  bot/once.py (answered once), bot/fairqueue.py (members' turns), bot/jobscripts.py (its Lua
  scripts) and bot/ratelimits.py (Slack's 429); `home` (bot/home.py): the App Home tab;
  `identity` (bot/identity.py): Bolt's authorization, without auth.test on a request's path.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.cards import Cards
from bot.details import Details
from bot.dialog import Dialog
from bot.digest import Digests
from bot.home import Home
from bot.identity import Identity
from bot.intake import Intake
from bot.jobs import Jobs
from bot.language import Languages
from bot.limits import Limit
from bot.presses import Presses
from bot.pricestore import PriceStore
from bot.replies import Replies
from bot.store import ConversationStore


@dataclass(frozen=True)
class Parts:
    replies: Replies
    store: ConversationStore
    prices: PriceStore
    intake: Intake
    cards: Cards
    dialog: Dialog
    details: Details
    presses: Presses
    digests: Digests
    languages: Languages
    jobs: Jobs
    home: Home  # App Home: the person's tab
    identity: Identity  # the bot's ids in Slack, learned off the request path (bot/identity.py)
    chart_limit: Limit  # charts one person may ask for a minute
    thread_limit: Limit  # new threads (slash questions, mentions) one person may open an hour
