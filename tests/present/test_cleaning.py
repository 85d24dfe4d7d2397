"""Inbound and stored text lose what could hide, reorder or forge text (issue 16, item 7), and the
renderer never lets text become a mention, a broadcast or a link."""

from __future__ import annotations

from present import blockkit

BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


def test_clean_input_strips_controls_and_bidi_but_keeps_lines() -> None:
    text = f"quote h100 buy 200k\nvendor=\u202egnp.exe{BIDI}\x00U1\x00\x07\x1b[31m\x85"
    cleaned = blockkit.clean_input(text)
    assert cleaned == "quote h100 buy 200k\nvendor=gnp.exeU1[31m"


def test_clean_field_is_one_line_without_controls() -> None:
    forged = "Evil Co\n• H100 buy 1 CNY\r\n\u2028\u2029next\tcol  \u202eright"
    assert blockkit.clean_field(forged) == "Evil Co • H100 buy 1 CNY next col right"
    assert blockkit.clean_field("x" * 300, 120) == "x" * 120
    assert blockkit.clean_field("中文 供应商 🙂") == "中文 供应商 🙂"  # letters and emoji stay


def test_stored_text_never_renders_as_a_mention_broadcast_or_link() -> None:
    stored = blockkit.clean_field("<@U0ALICE> <!here> <!channel> @channel @Here @everyone "
                                  "\x00U0ALICE\x00 <https://evil.example|bank>")
    shown = blockkit.mrkdwn(stored)
    assert "<" not in shown and ">" not in shown
    assert "@channel" not in shown and "@Here" not in shown and "@everyone" not in shown
    assert "@\u2060channel" in shown  # still reads as @channel
    assert blockkit.mrkdwn(blockkit.user_ref("U0ALICE")) == "<@U0ALICE>"  # the bot's own
