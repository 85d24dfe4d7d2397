"""Render Block Kit from the jinja2 templates in templates/ with Slack's own escaping.

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

_HERE = Path(__file__).resolve().parent
TEMPLATE_DIRS = (_HERE.parent / "templates", _HERE / "_templates")


USER_MENTION = re.compile(r"&lt;@([UW][A-Z0-9]{2,20})&gt;")


def mrkdwn(text: object) -> str:
    """Escape &, < and > (Slack's rule); a plain user mention <@U123> stays live, nothing else:
    no <!channel>, <!here>, links or channel references."""
    escaped = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return USER_MENTION.sub(r"<@\1>", escaped)


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
