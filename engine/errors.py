"""Errors a person may be shown, under one base class.

    UserError              one line, translated when raised, safe to show as it is
    ├── ParseError         engine.parse: the words of a command or a reply cannot be used
    ├── UnknownModel       engine.resolve: neither the catalog nor the Hub knows the model
    ├── PriceRejected      engine.prices: a price that must not be stored, and the rule it broke
    ├── Refused            bot.permissions: an action this user may not take, and what to do
    ├── QuotaFull          bot.pricestore: the workspace holds as many quotes as it keeps
    ├── SubscriptionsFull  bot.digest: the workspace holds as many digests as it keeps
    ├── TooManyThreads     bot.intake: a person past the new threads an hour one may open
    └── FormProblem        bot.forms: an input of the sizing form, said beside that input

Whoever tells a person what went wrong catches `UserError` and shows `str(err)`. Anything else
is a fault: the log gets its traceback and the person an apology (bot/words.py). The message is
translated where it is raised (`engine.i18n._` in the asker's language), so it must not be
built from anything the asker should not see (paths, tokens, stack frames).

Errors that are not for people (a Hub that is offline, a bad feed, a request the edge refuses,
a bad setting at start-up) keep their own bases: their words are for the log or the operator.
"""

from __future__ import annotations


class UserError(Exception):
    """An error whose `str()` is one translated line, safe to show the person who caused it."""
