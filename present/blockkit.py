"""Block Kit from the jinja2 templates in templates/, with Slack's own escaping.

Slack's mrkdwn needs only &, < and > escaped; HTML escaping would turn ' into &#39;. Escape for
mrkdwn first, then tojson (whose \\u003c would otherwise decode back into a live <!here>).
Truncation happens in Python after escaping, so an escape sequence is never cut in half.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from engine.i18n import _

_HERE = Path(__file__).resolve().parent
TEMPLATE_DIRS = (_HERE.parent / "templates", _HERE / "_templates")


# The bot's own references to users travel through text as \x00U123\x00 (user_ref) and become
# live mentions only here, after escaping; inbound text has NUL stripped (clean_input), so
# nothing a user types can produce a live mention, @channel or link.
USER_REF = re.compile(r"\x00([UW][A-Z0-9]{2,20})\x00")
CHANNEL_REF = re.compile(r"\x01([CG][A-Z0-9]{2,20})\x01")


def user_ref(user_id: str) -> str:
    return f"\x00{user_id}\x00" if re.fullmatch(r"[UW][A-Z0-9]{2,20}", user_id) else "someone"


def channel_ref(channel_id: str) -> str:
    return f"\x01{channel_id}\x01" if re.fullmatch(r"[CG][A-Z0-9]{2,20}", channel_id) \
        else "this channel"


def clean_input(text: str) -> str:
    """Inbound text from Slack, before anything reads it."""
    return text.replace("\x00", "").replace("\x01", "")


def mrkdwn(text: object) -> str:
    """Escape &, < and > (Slack's rule); only the bot's own user_ref()s become mentions."""
    escaped = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    escaped = USER_REF.sub(r"<@\1>", escaped)
    escaped = CHANNEL_REF.sub(r"<#\1>", escaped)
    return escaped.replace("\x00", "").replace("\x01", "")


def truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    amp = cut.rfind("&")
    if amp != -1 and ";" not in cut[amp:]:  # never end inside &amp; / &lt; / &gt;
        cut = cut[:amp]
    return cut + "…"


def mention(user_id: object) -> str:
    """A live mention only for a real Slack user id; anything else is escaped text."""
    text = str(user_id)
    return f"<@{text}>" if re.fullmatch(r"[UW][A-Z0-9]{2,20}", text) else mrkdwn(text)


def plain(text: object, limit: int) -> str:
    """plain_text fields are not parsed as mrkdwn; only their length is limited."""
    return truncate(str(text), limit)


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(d) for d in TEMPLATE_DIRS if d.exists()]),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
    )
    env.add_extension("jinja2.ext.i18n")
    env.install_gettext_callables(  # type: ignore[attr-defined]
        gettext=_, ngettext=lambda one, many, n: _(one) if n == 1 else _(many), newstyle=True)
    env.filters["mrkdwn"] = mrkdwn
    env.filters["trunc"] = truncate
    env.filters["plain"] = plain
    env.filters["mention"] = mention
    return env


def blocks(template: str, **context: Any) -> list[dict[str, Any]]:
    text = environment().get_template(template).render(**context)
    return json.loads(text)


def fallback(text: str, limit: int = 3000) -> str:
    """The top-level `text` Slack shows in notifications and clients without blocks."""
    return truncate(mrkdwn(text), limit)
