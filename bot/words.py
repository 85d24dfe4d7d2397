"""What the bot says when something cannot be done: every apology and refusal in one place.

Each text is marked for translation (`N_`) and said with `_()` in the asker's language; none
carries a traceback or anything the asker did not write. `failure_text` turns an error after the
ack into the one line the asker is told.
"""

from __future__ import annotations

from pydantic import ValidationError

from engine import ParseError, UserError
from engine.i18n import N_, _
from engine.parse import validation_problem

# -- posting (bot/replies.py)
INVITE = N_("I am not in this channel, so the answer is only for you. Invite me with "
            "`/invite @gpusize` and ask again to start a thread the team can follow.")
THREAD_DOWN = N_("I cannot continue this thread right now (my conversation store is not "
                 "answering). `/gpusize MODEL METHOD ...` still answers; the thread works again "
                 "once the store is back.")
APOLOGY = N_("Sorry, I could not answer that just now (Slack or my store failed); please try "
             "again.")

# -- Slack itself unreachable since this process started (bot/identity.py)
SLACK_UNREACHABLE = N_("I cannot reach Slack yet (it has not answered me since I started), so I "
                       "did not take this request: nothing was recorded. Please try again in a "
                       "minute.")

# -- the thread (bot/dialog.py, bot/presses.py)
STALE = N_("That button is on an older answer: the thread has moved on since. Use the buttons "
           "on the newest answer, or reply in the thread.")
EXPIRED = N_("This conversation has expired (or was never stored); ask again with /gpusize.")
# a press without its channel (a modal, App Home), or with an id or value no button carries
NO_THREAD = N_("That button belongs to an answer in a conversation, and Slack did not say which "
               "one, so I cannot change it from here. Press it under the answer in its thread, "
               "or ask again with `/gpusize`.")
UNKNOWN_BUTTON = N_("I do not know that button, so nothing was changed. The buttons on the "
                    "newest answer work, and `/gpusize help` shows what I read.")
NOT_OPENED = N_("Slack did not open that window in time; press the button again.")
SUPERSEDED = N_("Superseded: a newer answer is in this thread; its buttons are the live ones.")
STATE_DOWN = N_("I could not save this conversation right now, so replies in this thread will "
                "not reach me; ask again with /gpusize later.")

# -- sub-commands and charts (bot/listeners)
STORE_DOWN = N_("Prices and digests live in Redis, which is not answering right now; try again "
                "soon.")
TOO_MANY_THREADS = N_("That is more new threads than one person opens: at most {count} an hour. "
                      "Ask in one of your open threads, or try again in {minutes} min.")
TOO_MANY_CHARTS = N_("That is more charts than I draw for one person: at most {count} a minute. "
                     "The ones already in the thread are still there; try again in {seconds} s.")

# -- an answer that failed after the ack
NOT_ANSWERED = N_("I could not answer that: {problem}. Nothing was posted; change it and ask "
                  "again (`/gpusize help` shows the grammar).")
NOTHING_POSTED = N_("Sorry, something went wrong while answering; nothing was posted. Please try "
                    "again.")


def couldnt_use(err: Exception) -> str:
    return _("I could not use that: {error}").format(error=err)


def unusable(err: ParseError) -> str:
    """A reply the bot cannot use, said back to its author: what was read and, where the
    grammar has one, the likely meaning ("I read 300. Did you mean 300k?")."""
    if err.suggestion and err.token:
        return _("I read {token}. Did you mean {suggestion}?").format(
            token=err.token, suggestion=err.suggestion) + "\n" + err.message
    return couldnt_use(err)


def failure_text(err: BaseException) -> str:
    """What a person is told when their request fails after the ack: what was wrong with it
    when it was the input (a validation error, an unknown model), else a short apology. Never a
    traceback; the log has the details."""
    if isinstance(err, ValidationError):
        first = (err.errors() or [{}])[0]
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "__root__")
        problem = validation_problem(str(first.get("type", "")), first.get("ctx") or {})
        return _(NOT_ANSWERED).format(problem=f"{where}: {problem}" if where else problem)
    if isinstance(err, ParseError):
        return unusable(err)
    if isinstance(err, UserError):  # an unknown model, a refusal, a full quota: its own words
        return _(NOT_ANSWERED).format(problem=str(err))
    return _(NOTHING_POSTED)

# -- recording acknowledged work (bot/jobs.py, bot/listeners/recording.py)
STORE_SLOW = N_("My store is slow right now, so your request is held here until it is saved; "
                "the answer comes as soon as it is. Nothing needs doing.")
STORE_FULL = N_("My store is full, so I could not take this request: nothing was recorded and "
                "nothing will be answered. Please try again in a few minutes.")
NOT_RECORDED = N_("I could not save your request while my store was not answering, so it will "
                  "not be answered. Please ask again.")
BUSY = N_("You already have {count} requests waiting for an answer, so I did not take this one. "
         "The ones waiting will be answered; ask again after them.")
