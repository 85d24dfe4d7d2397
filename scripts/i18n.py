"""Keep engine/locale/zh/LC_MESSAGES/gpusize.po in step with the marked strings.

    .venv/bin/python scripts/i18n.py sync            # add new msgids (untranslated), drop stale
                                                     # ones, refresh the #: source references
    .venv/bin/python scripts/i18n.py todo            # print untranslated msgids as JSON
    .venv/bin/python scripts/i18n.py apply FILE.json # {"msgid": "译文", ...} into the catalog

The msgid list is tests/engine/test_i18n.py's extraction (the test that fails on any msgid left
untranslated, stale, or with different placeholders), so the two never disagree.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.engine.test_i18n import PO, extract, po_entries

WIDTH = 79


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _field(name: str, text: str) -> list[str]:
    """`msgid "..."`, folded after newlines and spaces as gettext tools fold long strings."""
    if len(name) + len(_quote(text)) + 1 <= WIDTH and "\n" not in text.rstrip("\n"):
        return [f"{name} {_quote(text)}"]
    pieces: list[str] = []
    for line in text.splitlines(keepends=True):
        while len(_quote(line)) > WIDTH:
            cut = line.rfind(" ", 0, WIDTH - 10)
            cut = cut + 1 if cut > 0 else WIDTH - 10
            pieces.append(line[:cut])
            line = line[cut:]
        pieces.append(line)
    return [f'{name} ""', *(_quote(p) for p in pieces if p)]


def _header() -> str:
    return PO.read_text(encoding="utf-8").split("\n\n", 1)[0]


def write(entries: dict[str, str], refs: dict[str, list[str]]) -> None:
    blocks = [_header()]
    def first_use(msgid: str) -> tuple[str, int]:
        path, _, line = refs.get(msgid, ["~:0"])[0].rpartition(":")
        return path, int(line)

    for msgid in sorted(entries, key=first_use):
        lines = ["#: " + " ".join(refs.get(msgid, []))]
        lines += _field("msgid", msgid) + _field("msgstr", entries[msgid])
        blocks.append("\n".join(lines))
    PO.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    refs = extract()
    entries = po_entries()
    command = argv[0] if argv else "todo"
    if command == "sync":
        write({m: entries.get(m, "") for m in refs}, refs)
    elif command == "todo":
        print(json.dumps({m: "" for m in refs if not entries.get(m)}, ensure_ascii=False,
                         indent=1))
    elif command == "apply" and len(argv) == 2:
        new = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
        unknown = sorted(set(new) - set(refs))
        if unknown:
            print(f"not marked in the sources: {unknown}", file=sys.stderr)
            return 1
        write({m: new.get(m) or entries.get(m, "") for m in refs}, refs)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
