"""The sizing form: a modal that asks what `/gpusize MODEL METHOD key=value ...` says, for people
who have not learnt the grammar. An empty `/gpusize`, the "Size this with gpusize" shortcut
(prefilled with what it read), App Home and help's button open it.

The form is read back into the grammar's own words (`read`), so its submission is checked by the
same intake as a typed command (bot/intake.py) and answered by the same job: the same card. A
problem is shown beside the input that caused it (response_action "errors"); the form stays
open with what was typed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from typing import Any

from bot.replies import Replies
from engine import catalog, reader
from engine.errors import UserError
from engine.i18n import _
from engine.methods import METHOD_WORDS, METHODS
from engine.parse import ParseError
from engine.request import Draft, Request
from present import slack, views
from present.labels import MARKETS, method_title

# a rent budget is per month in the form and over the request's horizon in the grammar: the
# request's default (engine.request.Request.months)
HORIZON_MONTHS = int(Request.model_fields["months"].default)
CLAUSES = re.compile(r"[,;，。；！？!?\n]+")  # where a message's clauses end
# the state's action ids, per block id (present.views.form_view)
ACTIONS = {block: f"form_{block}" for block in views.FORM_KEYS}


class FormProblem(UserError):
    """Something in the form that cannot be used: said beside its input (`block`)."""

    def __init__(self, block: str, message: str) -> None:
        self.block = block
        super().__init__(message)


@cache
def _catalog_models() -> list[tuple[str, str, str]]:
    """(name, label, the words it is known by) of every catalog model: the model menu's list."""
    rows = []
    for spec in catalog.models().values():
        words = [spec.name, spec.display, *spec.aliases]
        if spec.hf_repo:
            words.append(spec.hf_repo)
        label = spec.display if not spec.hf_repo else f"{spec.display} ({spec.hf_repo})"
        rows.append((spec.name, label, "\n".join(words)))
    return rows


def model_options(query: str) -> list[dict[str, Any]]:
    """The model menu's options for what has been typed (block_suggestion)."""
    return views.model_options(query, _catalog_models())


def read_message(text: str) -> tuple[Draft, list[str]]:
    """What a message says of a sizing question, read by the sentence reader (engine/reader.py),
    and the notes on what it assumed. Two readings of one input (two models, two methods) are
    never guessed: the message is then read clause by clause and word by word, each input
    taking its first reading, and the note says which readings there were, so the person
    picks in the form. Never raises: a message that says nothing gives an empty Draft."""
    try:
        reading = reader.read(text)
        return Draft(reading.values), list(reading.notes)
    except UserError as err:
        notes = [str(err)]
    values: dict[str, Any] = {}
    for clause in CLAUSES.split(text):
        whole = _read(clause)
        for draft in [whole] if whole is not None else [_read(word) for word in clause.split()]:
            for key, value in (draft.values if draft else {}).items():
                values.setdefault(key, value)
    return Draft(values), notes


def _read(text: str) -> Draft | None:
    try:
        return Draft(reader.read(text).values)
    except UserError:
        return None


def prefill_of(draft: Draft) -> tuple[dict[str, Any], str]:
    """A read Draft as the form's starting values, and the grammar's words for what the form
    has no input for (kept with the form and sent with its submission)."""
    inputs = set(views.FORM_KEYS.values())  # months= travels in the extra words
    extra = {k: v for k, v in draft.values.items() if k not in inputs and k != "asked_in"}
    return dict(draft.values), slack.command_text(extra)


def model_label(model: str) -> str:
    spec = catalog.find_model(model)
    return spec.display if spec is not None else model


def form(*, channel: str = "", prefill: dict[str, Any] | None = None, read_from: str = "",
         extra: str = "", notes: list[str] | None = None) -> dict[str, Any]:
    """The form in the current language. `channel`: where its answer is posted (none known: the
    form asks); `extra`: grammar words the form has no input for (what a shortcut read beyond
    them), kept and sent with the submission."""
    methods = [(name, method_title(name)) for name in METHODS]
    gpus = [(spec.name, spec.display) for spec in catalog.gpus().values()]
    markets = [(value, _(label)) for value, label in MARKETS.items()]
    metadata = json.dumps({"channel": channel, "extra": extra})
    model = (prefill or {}).get("model")
    return views.form_view(methods=methods, gpus=gpus, markets=markets, prefill=prefill,
                           model_label=model_label(model) if model else "", metadata=metadata,
                           ask_channel=not channel, read_from=read_from, notes=notes or [])


async def open_form(replies: Replies, trigger_id: str, **kw: Any) -> str:
    """Open the form with an interaction's trigger (3 s); its view id."""
    return await replies.open_view(trigger_id, form(**kw))


def _value(state: dict[str, Any], block: str) -> str:
    """What one input holds, as text ("" when empty)."""
    element = (state.get(block) or {}).get(ACTIONS[block]) or {}
    for key in ("selected_option",):
        if element.get(key):
            return str(element[key].get("value") or "")
    for key in ("selected_conversation", "value"):
        if element.get(key) is not None:
            return str(element[key])
    return ""


def read(view: dict[str, Any], *, user: str) -> tuple[str, str]:
    """A submitted form as (the command's text in the grammar, the channel to post in). The
    budget is checked here because the form asks for rent per month; everything else is
    checked by the intake like a typed command."""
    state = (view.get("state") or {}).get("values") or {}
    meta = json.loads(view.get("private_metadata") or "{}")
    model = _value(state, "model").strip()
    if not model:
        raise FormProblem("model", _("Pick a model, or type its name or Hub id."))
    words = [model.replace(" ", "-"), _value(state, "method")]
    budget = _value(state, "budget").strip().replace(",", "")
    currency = _value(state, "currency")
    way = _value(state, "way")
    if budget:
        figure = _amount(budget)
        if way == "rent":  # the form asks per month; the grammar's budget is the whole horizon
            said = re.search(r"(?<!\S)months=(\d+)(?!\S)", str(meta.get("extra") or ""))
            figure *= int(said.group(1)) if said else HORIZON_MONTHS
        words.append(f"budget={figure:.2f}".rstrip("0").rstrip("."))
        if way:
            words.append(f"mode={way}")
    elif way:
        words.append(f"mode={way}")
    if currency:
        words.append(f"currency={currency}")
    for block in ("users", "context", "gpu", "gpus", "market"):
        value = _value(state, block).strip()
        if value:
            words.append(f"{views.FORM_KEYS[block]}={value.replace(' ', '')}")
    if meta.get("extra"):
        words.append(str(meta["extra"]))
    channel = str(meta.get("channel") or _value(state, "channel") or user)
    return " ".join(w for w in words if w), channel


def _amount(text: str) -> float:
    """"150k", "1.2M", "300000" as a number; a FormProblem beside the budget otherwise."""
    scale = {"k": 1e3, "m": 1e6, "w": 1e4, "万": 1e4}
    number, unit = text.lower(), 1.0
    if number and number[-1] in scale:
        number, unit = number[:-1], scale[number[-1]]
    try:
        figure = float(number.lstrip("$¥")) * unit
    except ValueError:
        raise FormProblem("budget", _("A budget is an amount, e.g. 150k or 1.2M.")) from None
    if figure <= 0:
        raise FormProblem("budget", _("A budget is an amount, e.g. 150k or 1.2M."))
    return figure


def problem_block(err: UserError, text: str) -> str:
    """The input a problem with the command's text belongs beside."""
    if isinstance(err, FormProblem):
        return err.block
    token = err.token if isinstance(err, ParseError) else ""
    key = token.split("=", 1)[0] if "=" in token else ""
    for block, name in views.FORM_KEYS.items():
        if key and name == key:
            return "way" if name == "mode" else block
    if token and token in METHODS:
        return "method"
    return "model"


def corrected(text: str, check: Callable[[str], Any], *, tries: int = 3) -> str | None:
    """The command with each word the grammar suggested a fix for replaced by the fix (a
    misspelt method, key or model: `lroa` -> `lora`, `budegt=150k` -> `budget=150k`), when the
    result reads; None when there is no such correction."""
    fixed = text
    for _attempt in range(tries):
        try:
            check(fixed)
            return fixed if fixed != text else None
        except ParseError as err:
            # a word the grammar reads as typed (a method) is what was meant, never "fixed":
            # the problem is elsewhere (a format the method cannot use), and said as it is
            if not err.token or not err.suggestion or err.token.lower() in METHOD_WORDS:
                return None
            fix = err.suggestion
            if ("=" in fix) != ("=" in err.token):
                return None  # a key=value put right by a word (or back) is another question
            if fix.endswith("=") and "=" in err.token:  # a key's fix keeps the value typed
                fix += err.token.split("=", 1)[1]
            replaced = f" {fixed} ".replace(f" {err.token} ", f" {fix} ", 1).strip()
            if replaced == fixed:
                return None
            fixed = replaced
        except UserError:
            return None
    return None
