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
# Links the bot makes itself (a price's source): \x02url\x03label\x02, live only after escaping.
LINK_REF = re.compile(r"\x02([^\x00-\x03]*)\x03([^\x00-\x03]*)\x02")
SAFE_URL = re.compile(r"https?://[A-Za-z0-9.-]+(?::\d+)?(?:/[^\s<>|\x00-\x1f\x7f]*)?")


def user_ref(user_id: str) -> str:
    return f"\x00{user_id}\x00" if re.fullmatch(r"[UW][A-Z0-9]{2,20}", user_id) else "someone"


def channel_ref(channel_id: str) -> str:
    return f"\x01{channel_id}\x01" if re.fullmatch(r"[CG][A-Z0-9]{2,20}", channel_id) \
        else "this channel"


def link_ref(url: str, label: str) -> str:
    """A link the bot makes (to a price's source); anything but a plain http(s) URL is text."""
    label = re.sub(r"[\x00-\x03]", "", label)
    if not SAFE_URL.fullmatch(url):
        return label
    return f"\x02{url}\x03{label}\x02"


def short_link(url: str) -> str:
    """A source URL as a link labelled with its site: <https://x.com/a/b|x.com>."""
    m = SAFE_URL.fullmatch(url.strip())
    if not m:
        return url
    host = url.split("://", 1)[1].split("/", 1)[0].removeprefix("www.")
    return link_ref(url.strip(), host)


# Characters that hide, reorder or break text once shown: C0 and C1 controls (the reference
# markers \x00-\x03 among them), the bidi marks, embeddings, overrides and isolates (U+061C,
# U+200E/F, U+202A-202E, U+2066-2069) and the line and paragraph separators (U+2028/9, and NEL
# U+0085 among the C1 controls). Tab, line feed and carriage return are kept in inbound text
# (a reply may have lines); stored one-line fields turn them into spaces (clean_field).
UNSAFE_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f"
                          "\u2028\u2029\u202a-\u202e\u2066-\u2069]")
BREAKS = re.compile("[\t\n\r\x0b\x0c\x85\u2028\u2029]")
# Words Slack turns into a broadcast when it parses text itself: a word joiner after the @
# keeps them words (the bot never means to ping a channel).
BROADCASTS = re.compile(r"@(channel|here|everyone)\b", re.IGNORECASE)


def clean_input(text: str) -> str:
    """Inbound text from Slack, before anything reads it: the reference markers, control and
    bidi characters stripped, line breaks kept."""
    return UNSAFE_CHARS.sub("", text)


def clean_field(text: object, limit: int | None = None) -> str:
    """Text that will be stored and shown again to others (a vendor, a note, a feed's source or
    item): one line, no control or bidi characters, runs of spaces collapsed, at most `limit`
    characters. A newline in a vendor name can then never forge a line of a digest."""
    one_line = BREAKS.sub(" ", str(text))
    cleaned = re.sub(r" {2,}", " ", UNSAFE_CHARS.sub("", one_line)).strip()
    return cleaned[:limit] if limit is not None else cleaned


def mrkdwn(text: object) -> str:
    """Escape &, < and > (Slack's rule); only the bot's own user_ref()s become mentions, and
    @channel / @here / @everyone stay words even where Slack parses text itself."""
    escaped = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    escaped = BROADCASTS.sub("@\u2060\\1", escaped)
    escaped = USER_REF.sub(r"<@\1>", escaped)
    escaped = CHANNEL_REF.sub(r"<#\1>", escaped)
    escaped = LINK_REF.sub(lambda m: f"<{m.group(1)}|{m.group(2).replace('|', '/')}>", escaped)
    return re.sub(r"[\x00-\x03]", "", escaped)


def visible(text: object) -> str:
    """What a reader sees of marked text: mentions as @id, links as their label."""
    shown = USER_REF.sub(r"@\1", str(text))
    shown = CHANNEL_REF.sub(r"#\1", shown)
    shown = LINK_REF.sub(r"\2", shown)
    return re.sub(r"[\x00-\x03]", "", shown)


def sections(text: str, limit: int = 3000) -> list[str]:
    """Text cut into parts that each stay within `limit` once escaped for mrkdwn (escaping
    lengthens & < >), cut between lines; a code block cut in two is closed and reopened so both
    parts stay monospaced. A single line longer than a part is cut inside the line."""
    parts: list[str] = []
    current: list[str] = []
    fenced = False  # inside ``` at the end of `current`

    def size(lines: list[str]) -> int:
        return len(mrkdwn("\n".join(lines))) + (4 if fenced else 0)

    def flush() -> None:
        if current:
            parts.append("\n".join(current) + ("\n```" if fenced else ""))

    for line in text.split("\n"):
        while len(mrkdwn(line)) > limit - 8:  # one line alone too long: cut it
            cut = limit - 8
            while len(mrkdwn(line[:cut])) > limit - 8:
                cut -= max(1, (len(mrkdwn(line[:cut])) - (limit - 8)) // 4)
            piece, line = line[:cut], line[cut:]
            flush()
            parts.append(("```\n" if fenced else "") + piece + ("\n```" if fenced else ""))
            current = ["```"] if fenced else []
        if current and size([*current, line]) > limit:
            flush()
            current = ["```"] if fenced else []
        current.append(line)
        if line.count("```") % 2 == 1:  # Slack opens or closes a code block at any ```
            fenced = not fenced
    flush()
    return [p for p in parts if p.strip().strip("`").strip()] or [text[:limit] or " "]


def without_actions(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same message with nothing to press (an old answer, a private copy)."""
    out = []
    for block in blocks:
        if block.get("type") == "actions":
            continue
        if "accessory" in block:
            block = {k: v for k, v in block.items() if k != "accessory"}
        out.append(block)
    return out


def has_table(blocks: list[dict[str, Any]] | None) -> bool:
    return any(block.get("type") == "table" for block in blocks or [])


def table_as_code(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same message with each table block as a narrow code block (monospaced columns, the
    first left-aligned, the rest right-aligned): what is posted when Slack rejects the table
    block (`invalid_blocks`, a client or workspace without tables)."""
    out = []
    for block in blocks:
        if block.get("type") != "table":
            out.append(block)
            continue
        rows = [[str(cell.get("text", "")) for cell in row] for row in block.get("rows", [])]
        widths = [max(len(row[i]) for row in rows if i < len(row))
                  for i in range(max(map(len, rows), default=0))]
        lines = ["  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i])
                           for i, cell in enumerate(row)).rstrip() for row in rows]
        text = truncate(mrkdwn("```\n" + "\n".join(lines) + "\n```"), 3000)
        code = {"type": "section", "text": {"type": "mrkdwn", "text": text}}
        if block.get("block_id"):
            code["block_id"] = block["block_id"]
        out.append(code)
    return out


def text_length(blocks: list[dict[str, Any]]) -> int:
    """Characters a reader sees in a message: headers, sections and their fields, table cells,
    context lines and button labels (what is behind a menu is not on the screen)."""
    total = 0
    for block in blocks:
        kind = block.get("type")
        if kind in ("header", "section"):
            total += len((block.get("text") or {}).get("text", ""))
            total += sum(len(f["text"]) for f in block.get("fields", []))
        elif kind == "context":
            total += sum(len(e.get("text", "")) for e in block["elements"])
        elif kind == "table":
            total += sum(len(cell.get("text", "")) for row in block["rows"] for cell in row)
        elif kind == "actions":
            total += sum(len(e["text"]["text"]) for e in block["elements"] if "text" in e)
    return total


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
        # templates ship with the package: no stat of the file on every render (the bot renders
        # on the event loop, before acks)
        auto_reload=False,
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
