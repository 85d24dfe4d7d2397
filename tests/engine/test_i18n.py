"""Chinese replies: every marked string has a translation that keeps its placeholders, the
catalog carries nothing stale, and the engine, the parser and money() answer in the language set.

The extraction below is the project's msgid list: `_("...")` / `N_("...")` calls with a literal
argument in engine/, bot/ and gpusize/ (found with ast, so implicit concatenation is joined as
Python joins it), and `_("...")` in templates/*.j2.
"""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.i18n import _, catalog, from_locale, language, money
from tests.source import tree

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "present", "bot", "gpusize")
MARKERS = ("_", "N_")
PO = ROOT / "engine" / "locale" / "zh" / "LC_MESSAGES" / "gpusize.po"
TEMPLATE_CALL = re.compile(r"""\b_\(\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')\s*\)""")
CHINESE = re.compile(r"[\u4e00-\u9fff]")


def _python_calls(path: Path) -> Iterator[tuple[ast.Call, int]]:
    for node in ast.walk(tree(path)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in MARKERS and len(node.args) == 1 and not node.keywords):
            yield node, node.lineno


def extract(root: Path = ROOT) -> dict[str, list[str]]:
    """msgid -> ["path:line", ...] for every literal `_()`/`N_()` call, source order."""
    found: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            for call, line in _python_calls(path):
                arg = call.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value:
                    found.setdefault(arg.value, []).append(f"{path.relative_to(root)}:{line}")
    for path in sorted((root / "templates").glob("*.j2")):
        text = path.read_text(encoding="utf-8")
        for m in TEMPLATE_CALL.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            msgid = ast.literal_eval(m.group(1))
            found.setdefault(msgid, []).append(f"{path.relative_to(root)}:{line}")
    return found


def f_strings_in_marks(root: Path = ROOT) -> list[str]:
    """`_(f"...")` translates nothing: the catalog can never hold the formatted text."""
    out = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            for call, line in _python_calls(path):
                if isinstance(call.args[0], ast.JoinedStr) or (
                        isinstance(call.args[0], ast.BinOp)
                        and isinstance(call.args[0].op, ast.Mod)):
                    out.append(f"{path.relative_to(root)}:{line}")
    return out


def placeholders(text: str) -> set[tuple[str, str, str]]:
    """{name!conv:spec} fields of a str.format string, nested spec fields included."""
    out: set[tuple[str, str, str]] = set()
    for _literal, name, spec, conversion in string.Formatter().parse(text):
        if name is None:
            continue
        out.add((name, conversion or "", spec or ""))
        if spec and "{" in spec:
            out |= placeholders(spec)
    return out


def po_entries(path: Path = PO) -> dict[str, str]:
    """Every msgid in the .po, translated or not (catalog() drops the untranslated)."""
    out: dict[str, str] = {}
    for entry in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
        fields: dict[str, str] = {}
        key = None
        for line in entry.splitlines():
            line = line.strip()
            m = re.match(r"(msgid|msgstr)\s+(\".*\")$", line)
            if m:
                key = m.group(1)
                fields[key] = ast.literal_eval(m.group(2))
            elif line.startswith('"') and key:
                fields[key] += ast.literal_eval(line)
        if fields.get("msgid"):
            out[fields["msgid"]] = fields.get("msgstr", "")
    return out


# -- the catalog ------------------------------------------------------------------------------


def test_po_header_names_the_language_and_encoding() -> None:
    head = PO.read_text(encoding="utf-8").split("\n\n")[0]
    assert '"Language: zh_CN\\n"' in head
    assert '"Content-Type: text/plain; charset=UTF-8\\n"' in head


def test_extraction_finds_the_marked_strings() -> None:
    found = extract()
    assert "Recommended ({goal}): " in found  # engine/recommend.py
    assert " Did you mean {suggestion}?" in found  # engine/parse.py
    assert "GPU count, e.g. 8" in found  # N_() data in engine/parse.py


def test_no_f_strings_inside_marks() -> None:
    assert f_strings_in_marks() == []


def test_every_msgid_is_translated() -> None:
    translated = catalog("zh")
    missing = sorted(m for m in extract() if not translated.get(m, "").strip())
    assert missing == [], f"{len(missing)} msgid(s) without a zh translation: {missing}"


def test_translations_keep_the_placeholders() -> None:
    translated = catalog("zh")
    bad = []
    for msgid in extract():
        if msgid not in translated:
            continue
        try:
            same = placeholders(msgid) == placeholders(translated[msgid])
        except ValueError:  # not a format string: braces must then match literally
            same = (msgid.count("{"), msgid.count("}")) == (translated[msgid].count("{"),
                                                            translated[msgid].count("}"))
        if not same:
            bad.append(msgid)
    assert bad == []


def test_no_stale_entries() -> None:
    stale = sorted(set(po_entries()) - set(extract()))
    assert stale == [], f"msgids in the .po that no source marks any more: {stale}"


def test_template_strings_survive_jinja_percent_formatting() -> None:
    """jinja2.ext.i18n's new-style gettext returns `translation % variables`: a bare % breaks."""
    translated = catalog("zh")
    for msgid, refs in extract().items():
        if any(ref.startswith("templates/") for ref in refs):
            for text in (msgid, translated.get(msgid, "")):
                assert "%" not in text.replace("%%", ""), msgid


def test_catalog_reads_every_entry() -> None:
    assert len(catalog("zh")) == len(po_entries())


def test_translations_keep_mrkdwn_and_newlines() -> None:
    for msgid, msgstr in catalog("zh").items():
        assert msgid.count("\n") == msgstr.count("\n"), msgid
        assert msgid.count("`") == msgstr.count("`"), msgid
        assert msgid.count("*") == msgstr.count("*"), msgid
        indent = len(msgid) - len(msgid.lstrip(" "))
        if indent >= 2:  # terminal indentation
            assert msgstr.startswith(" " * indent), msgid


def test_catalog_is_packaged() -> None:
    from importlib import resources

    po = resources.files("engine.locale").joinpath("zh", "LC_MESSAGES", "gpusize.po")
    assert po.is_file() and "msgid" in po.read_text(encoding="utf-8")


def test_recipe_text_is_memory_recipe_text_in_english() -> None:
    from engine import memory
    from engine.explain import recipe_text

    for optimizer, text in memory.RECIPE_TEXT.items():
        assert recipe_text(optimizer) == text
        with language("zh"):
            assert CHINESE.search(recipe_text(optimizer))


# -- the language at work ------------------------------------------------------------------------


def test_language_switches_and_restores() -> None:
    with language("zh"):
        assert CHINESE.search(_("fastest"))
        with language("en"):
            assert _("fastest") == "fastest"
    assert _("fastest") == "fastest"
    with language("fr"):  # unknown languages answer in English
        assert _("fastest") == "fastest"


def test_engine_answer_in_chinese() -> None:
    import engine
    from engine.resolve import resolve_model

    with language("zh"):
        ans = engine.ask("13B lora")
    assert CHINESE.search(ans.recommendation)
    assert ans.recommendation.startswith("推荐")
    _spec, notes = resolve_model("13B")  # the model resolver's notes are not marked (English)
    ours = [line for line in ans.assumptions if line not in notes]
    assert len(ours) >= 10 and all(CHINESE.search(line) for line in ours)
    assert ans.trial is not None and CHINESE.search(ans.trial.note)
    english = engine.ask("13B lora")
    assert not CHINESE.search(english.recommendation)
    assert not any(CHINESE.search(line) for line in english.assumptions)


def test_parse_error_in_the_language_set() -> None:
    from engine.parse import ParseError, parse

    with language("zh"), pytest.raises(ParseError) as zh:
        parse("7B lroa")
    with language("en"), pytest.raises(ParseError) as en:
        parse("7B lroa")
    assert CHINESE.search(str(zh.value)) and "lroa" in str(zh.value) and "lora" in str(zh.value)
    assert str(en.value).startswith("unexpected word lroa") and "Did you mean lora?" in str(en.value)
    assert not CHINESE.search(str(en.value))
    assert (zh.value.token, zh.value.accepted, zh.value.suggestion) == (
        en.value.token, en.value.accepted, en.value.suggestion)


@pytest.mark.parametrize("text", ["7B lora seq=", "7B full-finetune quant=q4_k_m", "7B",
                                  "7B lora budget=abc", "7B lora gpu=rtx9999"])
def test_parse_errors_with_hints_are_chinese(text: str) -> None:
    from engine.parse import ParseError, parse

    with language("zh"), pytest.raises(ParseError) as info:
        parse(text)
    assert CHINESE.search(str(info.value)) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("amount", "currency", "lang", "text"),
    [(150_000, "CNY", "zh", "¥15万"), (120_000_000, "CNY", "zh", "¥1.2亿"),
     (150_000, "CNY", "en", "150k CNY"), (20_000, "USD", "zh", "$2万"),
     (1_200_000, "CNY", "en", "1.20M CNY"), (None, "CNY", "en", "n/a")],
)
def test_money(amount: float | None, currency: str, lang: str, text: str) -> None:
    assert money(amount, currency, lang) == text
    with language(lang):
        assert money(amount, currency) == text


def test_money_none_in_chinese_is_translated() -> None:
    with language("zh"):
        assert money(None, "CNY") == _("n/a") != "n/a"


@pytest.mark.parametrize(
    ("locale", "lang"),
    [("zh-CN", "zh"), ("zh_CN.UTF-8", "zh"), ("zh_TW", "zh"), ("en_US.UTF-8", "en"), ("", "en"),
     (None, "en"), ("C", "en")],
)
def test_from_locale(locale: str | None, lang: str) -> None:
    assert from_locale(locale) == lang
