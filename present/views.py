"""Modals and the App Home tab as Block Kit views, checked against Slack's limits for views: a
title of at most 24 characters, at most 100 blocks in a modal and 100 on a home tab, 3,000
characters in a section. Every label goes through `_()`.

A detail (the memory breakdown, rent vs buy, the assumptions, the guides' advice, the bill of
materials, how to run it) is read by the presser alone in a modal; the thread keeps the decision.
"""

from __future__ import annotations

from typing import Any

from engine.i18n import N_, _
from present import blockkit
from present.actions import Detail, View

TITLE_CHARS = 24  # Slack's most in a view's title
MODAL_BLOCKS = 100
HOME_BLOCKS = 100

DETAIL_TITLES = {
    Detail.COST: N_("Rent vs buy"),
    Detail.BREAKDOWN: N_("Memory breakdown"),
    Detail.ASSUMPTIONS: N_("Assumptions"),
    Detail.ADVICE: N_("The guides' advice"),
    Detail.BOM: N_("Bill of materials"),
    Detail.LAUNCH: N_("How to run it"),
}


def _plain(text: str, limit: int) -> dict[str, Any]:
    return {"type": "plain_text", "text": blockkit.plain(text, limit) or " "}


def section(text: str) -> dict[str, Any]:
    """One mrkdwn section: escaped for Slack, at most 3,000 characters."""
    return {"type": "section",
            "text": {"type": "mrkdwn", "verbatim": True,
                     "text": blockkit.truncate(blockkit.mrkdwn(text), 3000) or " "}}


def context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [
        {"type": "mrkdwn", "text": blockkit.truncate(blockkit.mrkdwn(text), 2000) or " "}]}


def modal(title: str, blocks: list[dict[str, Any]], *, callback_id: str = View.DETAIL,
          submit: str = "", private_metadata: str = "") -> dict[str, Any]:
    """A modal with a Close button (and a submit button when `submit` is given)."""
    view: dict[str, Any] = {"type": "modal", "callback_id": callback_id,
                            "title": _plain(title, TITLE_CHARS), "close": _plain(_("Close"), 24),
                            "blocks": blocks[:MODAL_BLOCKS]}
    if submit:
        view["submit"] = _plain(submit, 24)
    if private_metadata:
        view["private_metadata"] = private_metadata[:3000]
    return view


def detail_title(kind: Detail | str) -> str:
    return _(DETAIL_TITLES.get(Detail(kind), N_("Details")))


def loading_view(kind: Detail | str) -> dict[str, Any]:
    """What the presser sees at once, while the detail is worked out (Slack's trigger lasts 3 s,
    the detail may take longer)."""
    return modal(detail_title(kind), [section(_("Working it out…"))])


def detail_view(kind: Detail | str, sections: list[str], *, note: str = "") -> dict[str, Any]:
    """A detail's sections (present.slack's *_sections) as a modal; `note`: the card it is for."""
    blocks = [section(part) for part in sections]
    if note:
        blocks.append(context(note))
    return modal(detail_title(kind), blocks)


def notice_view(title: str, text: str) -> dict[str, Any]:
    """A modal that only says something (a press on an older card, a failure)."""
    return modal(title, [section(part) for part in blockkit.sections(text)])


def view_text_length(view: dict[str, Any]) -> int:
    """Characters a reader sees in a view (its blocks, as `blockkit.text_length` counts them,
    plus the form's labels and hints)."""
    total = blockkit.text_length([b for b in view["blocks"] if b.get("type") != "input"])
    for block in view["blocks"]:
        if block.get("type") == "input":
            total += len(block["label"]["text"]) + len((block.get("hint") or {}).get("text", ""))
    return total + len(view["title"]["text"])
