"""Deadlines said relative to today (下个月, 月底前, by end of month, next week) as days.

The phrase rows read the words into a kind (`due=month_end`); the reader turns it into
`days=` from the date it is given (today, unless a caller or a test passes one), and says the
date it counted to. Each kind is read at its strictest plain meaning, said in the note:
"by next month" and 下个月 are the first day of next month, 月底前 and "by end of month" the
last day of this one, 下个月底 the last day of the next, 年底前 31 December, 下周 next Monday.
"""

from __future__ import annotations

from datetime import date, timedelta

from engine.i18n import N_, _

KINDS = {
    "next_week": N_("next Monday"),
    "month_end": N_("the last day of this month"),
    "next_month": N_("the first day of next month"),
    "next_month_end": N_("the last day of next month"),
    "year_end": N_("31 December"),
}


def _month_start(year: int, month: int) -> date:
    return date(year + (month - 1) // 12, (month - 1) % 12 + 1, 1)


def due_date(kind: str, today: date) -> date:
    """The date a relative deadline names, counted from `today`."""
    if kind == "next_week":
        return today + timedelta(days=7 - today.weekday())
    if kind == "month_end":
        return _month_start(today.year, today.month + 1) - timedelta(days=1)
    if kind == "next_month":
        return _month_start(today.year, today.month + 1)
    if kind == "next_month_end":
        return _month_start(today.year, today.month + 2) - timedelta(days=1)
    if kind == "year_end":
        return date(today.year, 12, 31)
    raise ValueError(f"unknown deadline kind {kind!r}")


def days_until(kind: str, today: date) -> tuple[int, str]:
    """(days from today, at least 1, the note saying which date they count to)."""
    due = due_date(kind, today)
    days = max(1, (due - today).days)
    note = _("Deadline read as {when} ({due}): {days} days from today ({today}); say the days "
             "(e.g. within 20 days) if you meant otherwise.").format(
                 when=_(KINDS[kind]), due=due.isoformat(), days=days, today=today.isoformat())
    return days, note
