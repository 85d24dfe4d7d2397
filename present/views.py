"""Modals and the App Home tab as Block Kit views, checked against Slack's limits for views: a
title of at most 24 characters, at most 100 blocks in a modal and 100 on a home tab, 3,000
characters in a section. Every label goes through `_()`.

A detail (the memory breakdown, rent vs buy, the assumptions, the guides' advice, the bill of
materials, how to run it) is read by the presser alone in a modal; the thread keeps the decision.
"""

from __future__ import annotations

from typing import Any

from engine.i18n import N_, _
from engine.request import Request
from present import blockkit
from present.actions import Action, Detail, View

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
    return total + len((view.get("title") or {}).get("text", ""))


# -- the sizing form -------------------------------------------------------------------------------

# The form's inputs: block id -> the grammar key it fills (the model and the method are words)
FORM_KEYS = {"model": "model", "method": "method", "budget": "budget", "way": "mode",
             "currency": "currency", "users": "users", "context": "context", "gpu": "gpu",
             "gpus": "gpus", "market": "market", "channel": "channel"}
CURRENCIES = ("CNY", "USD")


def _option(text: str, value: str) -> dict[str, Any]:
    return {"text": _plain(text, 75), "value": value[:150]}


def _input(block_id: str, label: str, element: dict[str, Any], *, hint: str = "",
           optional: bool = True) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "input", "block_id": block_id, "label": _plain(label, 2000),
                             "optional": optional, "element": element}
    if hint:
        block["hint"] = _plain(hint, 2000)
    return block


def _select(action_id: str, placeholder: str, options: list[dict[str, Any]],
            initial: str | None) -> dict[str, Any]:
    element: dict[str, Any] = {"type": "static_select", "action_id": action_id,
                               "placeholder": _plain(placeholder, 150), "options": options[:100]}
    chosen = next((o for o in options if o["value"] == initial), None)
    if chosen is not None:
        element["initial_option"] = chosen
    return element


def _text_input(action_id: str, placeholder: str, initial: object = None) -> dict[str, Any]:
    element: dict[str, Any] = {"type": "plain_text_input", "action_id": action_id,
                               "placeholder": _plain(placeholder, 150)}
    if initial not in (None, ""):
        element["initial_value"] = str(initial)[:3000]
    return element


def _number_input(action_id: str, initial: object = None) -> dict[str, Any]:
    element: dict[str, Any] = {"type": "number_input", "action_id": action_id,
                               "is_decimal_allowed": False, "min_value": "1"}
    if isinstance(initial, int | float) and initial >= 1:
        element["initial_value"] = f"{int(initial)}"
    return element


def form_view(*, methods: list[tuple[str, str]], gpus: list[tuple[str, str]],
              markets: list[tuple[str, str]], prefill: dict[str, Any] | None = None,
              model_label: str = "", metadata: str = "", ask_channel: bool = False,
              read_from: str = "", notes: list[str] | None = None) -> dict[str, Any]:
    """The sizing form: what `/gpusize MODEL METHOD key=value ...` asks, as inputs. `methods`,
    `gpus`, `markets`: (value, label) of each choice; `prefill`: the grammar's values to start
    from (what the shortcut read); `model_label`: how the prefilled model is shown;
    `ask_channel`: no conversation is known (App Home), so the form asks where to post;
    `read_from`: the message the shortcut read, quoted above the inputs with `notes` on how it
    was read (what was assumed, two readings to pick from)."""
    given = prefill or {}
    model: dict[str, Any] = {"type": "external_select", "action_id": Action.FORM_MODEL.value,
                             "placeholder": _plain(_("Type a model name or a Hub id"), 150),
                             "min_query_length": 1}
    if given.get("model"):
        model["initial_option"] = _option(model_label or str(given["model"]), str(given["model"]))
    budget = given.get("budget") if isinstance(given.get("budget"), dict) else None
    way = given.get("mode") if given.get("mode") in ("buy", "rent") else None
    amount = None
    if budget is not None:
        months = int(given.get("months") or Request.model_fields["months"].default)
        figure = float(budget.get("amount") or 0)
        # the form asks for rent per month; a thread keeps the whole horizon's money
        amount = figure / months if way == "rent" else figure
        amount = f"{amount:,.0f}".replace(",", "")
    currency = (budget or {}).get("currency") or given.get("currency")
    blocks: list[dict[str, Any]] = []
    if read_from:
        said = _("Read from the message: “{text}”").format(
            text=read_from if len(read_from) <= 300 else read_from[:299] + "…")
        blocks.append(context("\n".join([said, *(f"⚠ {note}" for note in (notes or [])[:3])])))
    blocks += [
        _input("model", _("Model"), model, optional=False,
               hint=_("A catalog model, a size such as 13B or 8x7B, or a Hugging Face id "
                      "(org/name).")),
        _input("method", _("What to do"), _select(
            "form_method", _("Pick one"), [_option(label, value) for value, label in methods],
            given.get("method")), optional=False),
        _input("budget", _("Budget"), _text_input("form_budget", _("e.g. 150k or 1.2M"),
                                                 amount),
               hint=_("Money to spend; leave empty to rank by cost.")),
        _input("way", _("Buy or rent"), {
            "type": "radio_buttons", "action_id": "form_way",
            "options": [_option(_("buy: the budget is paid up front"), "buy"),
                        _option(_("rent: the budget is per month"), "rent")],
            **({"initial_option": _option(_("buy: the budget is paid up front"), "buy")
                if way == "buy" else _option(_("rent: the budget is per month"), "rent")}
               if way else {})}),
        _input("currency", _("Currency"), _select(
            "form_currency", _("The market's own"), [_option(c, c) for c in CURRENCIES],
            currency)),
        _input("users", _("Users at once (serving)"), _number_input("form_users",
                                                                    given.get("users"))),
        _input("context", _("Context (serving)"), _text_input(
            "form_context", _("e.g. 8k or 32k"), _tokens(given.get("context")))),
        _input("gpu", _("Cards you own (optional)"), _select(
            "form_gpu", _("Any card"), [_option(label, value) for value, label in gpus],
            given.get("gpu"))),
        _input("gpus", _("How many of them"), _number_input("form_gpus", given.get("gpus"))),
        _input("market", _("Market"), _select(
            "form_market", _("Where you buy or rent"),
            [_option(label, value) for value, label in markets], given.get("market"))),
    ]
    if ask_channel:
        blocks.append(_input("channel", _("Post the answer in"), {
            "type": "conversations_select", "action_id": "form_channel",
            "default_to_current_conversation": True,
            "placeholder": _plain(_("A channel the team reads"), 150),
            "filter": {"include": ["public", "private"], "exclude_bot_users": True}},
            hint=_("Leave it empty to get the answer as a direct message.")))
    return modal(_("Size a GPU server"), blocks, callback_id=View.FORM, submit=_("Size it"),
                 private_metadata=metadata)


def _tokens(value: object) -> str | None:
    if not isinstance(value, int | float):
        return None
    return f"{value / 1024:g}k" if value >= 1024 and value % 1024 == 0 else f"{value:g}"


def model_options(query: str, models: list[tuple[str, str, str]], *,
                  limit: int = 100) -> list[dict[str, Any]]:
    """The form's model menu for what has been typed: catalog models whose name, display name
    or Hub id contains it (those starting with it first), and what was typed itself when no
    catalog model is exactly it (a size like 13B, a Hub id). `models`: (name, label, words)."""
    typed = " ".join(query.split())[:150]
    key = _squash(typed)
    if not key:
        return []
    starts, contains = [], []
    exact = False
    for name, label, words in models:
        squashed = [_squash(w) for w in words.split("\n")]
        if key in squashed:
            exact = True
        if any(w.startswith(key) for w in squashed):
            starts.append(_option(label, name))
        elif any(key in w for w in squashed):
            contains.append(_option(label, name))
    options = starts + contains
    if not exact:
        options.insert(0, _option(_("Use “{text}”").format(text=typed), typed.replace(" ", "-")))
    return options[:limit]


def _squash(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum() or ch == ".")


# -- App Home --------------------------------------------------------------------------------------

HOME_ROWS = 20  # subscriptions or quotes shown with their controls (each a section)


def _button(label: str, action_id: str, value: str, *, style: str = "") -> dict[str, Any]:
    button: dict[str, Any] = {"type": "button", "action_id": action_id,
                              "text": _plain(label, 75), "value": value[:2000]}
    if style:
        button["style"] = style
    return button


def home_view(*, recent: list[tuple[str, str, str]], language: str, language_scope: str,
              digests: list[dict[str, str]], quotes: list[dict[str, str]], notice: str = "",
              run_action: str, form_action: str) -> dict[str, Any]:
    """The App Home tab: "New sizing" first, the person's recent answers as links, their
    language with its controls, then the workspace's digest subscriptions and team quotes with
    theirs. `recent`: (url, title, when); `digests`, `quotes`: rows with a control, each its
    "text" (mrkdwn), its button's "label" and the sub-command it "run"s (bot/subcommands.py: the
    same checks as typed); `run_action`: the controls' action id; `notice`: what the last
    control did."""
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": _plain(_("gpusize: GPU servers for LLMs"), 150)},
        {**section(_("Size a GPU server for fine-tuning or serving a model: the cards, the "
                     "price, and the why.")),
         "accessory": _button(_("New sizing"), form_action, "", style="primary")},
    ]
    if notice:
        blocks.append(context(notice))
    lines = [f"• {blockkit_link(url, title)} · {when}" for url, title, when in recent]
    blocks += [{"type": "divider"}, section(_("*Your recent answers*") + "\n" + (
        "\n".join(lines) if lines else _("None yet: press *New sizing*, or type `/gpusize` in "
                                         "any channel.")))]
    blocks += [section(_("*Language*: {language} ({scope})").format(
        language=language, scope=language_scope)),
        {"type": "actions", "elements": [
            _button("English", run_action, "lang en"), _button("中文", run_action, "lang zh"),
            _button(_("Follow my Slack settings"), run_action, "lang auto")]}]
    for heading, rows, empty in (
            (_("*Price digests in this workspace*"), digests,
             _("No digest subscriptions: `/gpusize digest subscribe #channel weekly` in a "
               "channel sets one up.")),
            (_("*This workspace's quotes*"), quotes,
             _("No quotes yet: `/gpusize quote CARD buy|rent AMOUNT vendor=\"Name\"` adds "
               "one."))):
        blocks += [{"type": "divider"}, section(heading + ("" if rows else "\n" + empty))]
        for row in rows[:HOME_ROWS]:
            blocks.append({**section(row["text"]),
                           "accessory": _button(row["label"], run_action, row["run"],
                                                style="danger")})
        if len(rows) > HOME_ROWS:
            blocks.append(context(_("… and {count} more").format(count=len(rows) - HOME_ROWS)))
    return {"type": "home", "blocks": blocks[:HOME_BLOCKS]}


def blockkit_link(url: str, title: str) -> str:
    """A link the bot makes, or the title alone when the URL is not a plain http(s) one."""
    return blockkit.link_ref(url, title.replace("\n", " ")[:150])
