"""Every button and menu id the bot's messages carry, and what a press's value asks for.

`Action` is the one list of `action_id`s: present/slack.py and the templates put them on
messages, bot/listeners/actions registers a listener per family, bot/presses.py dispatches on
them. Some ids carry a suffix (`answer_method_lora`, `whatif_method_qlora`): `Action.of` reads
an id back to its member. A button's value is "VERSION|PAYLOAD" (`present.slack.split_value`);
a menu option's payload is a `Detail` word or a "key=value" what-if.

Adding a button: a member here, its data in present/slack.py, and where the bot handles it
(bot/presses.py for anything under an answer card; a new family also needs a listener in
bot/listeners/actions). Ids of buttons no longer posted stay while old messages may carry them.
"""

from __future__ import annotations

from enum import StrEnum


class Action(StrEnum):
    # the questions of an incomplete /gpusize
    ANSWER_METHOD = "answer_method"  # + "_<method>": one button per method
    ANSWER_BUDGET = "answer_budget"  # the budget select
    ANSWER_BUDGET_SKIP = "answer_budget_skip"  # "No budget, just rank by cost"
    # under an answer card
    WHATIF = "whatif"  # + "_<key>_<value>": a what-if button (value "V|key=value")
    WHATIF_GOAL = "whatif_goal"  # "Fastest instead" / "Cheapest instead"
    RENT_VS_BUY = "show_rent_vs_buy"
    MORE = "card_more"  # the overflow menu: its options' payloads are `Detail` words
    # posted by earlier versions, still answered on old cards
    SHOW_BREAKDOWN = "show_breakdown"
    SHOW_CHART = "show_chart"
    SHOW_PRICE_CHART = "show_price_chart"  # value: the card whose prices to draw
    # the form (a modal): opened by an empty /gpusize, the shortcut, App Home and help
    OPEN_FORM = "open_form"  # a button that opens the form (value: "" or a command's text)
    RUN_IT = "run_it"  # an error's corrected command, run as typed (value: the command text)
    ALL_OPTIONS = "all_options"  # help's button: every key the grammar reads, in a modal
    SHOW_PRICES = "show_prices"  # help's button: the workspace's prices, privately
    FORM_MODEL = "form_model"  # the form's model menu (an external select over the catalog)
    HOME_RUN = "home_run"  # an App Home control: its value is the sub-command it runs

    @classmethod
    def of(cls, action_id: str) -> Action | None:
        """The member an id is, or starts with (`answer_method_lora` is ANSWER_METHOD)."""
        try:
            return cls(action_id)
        except ValueError:
            pass
        for prefix in (cls.ANSWER_METHOD, cls.WHATIF):
            if action_id.startswith(f"{prefix}_"):
                return prefix
        return None

    def suffixed(self, *parts: str) -> str:
        """An id of a family that carries a suffix: answer_method_lora, whatif_method_qlora."""
        return "_".join((self.value, *parts))

    def pattern(self) -> str:
        """A regular expression for the ids of this member (with their suffixes)."""
        suffix = "_.+" if self in (Action.ANSWER_METHOD, Action.WHATIF) else ""
        return f"^{self.value}{suffix}$"


# the ids an answer card's buttons and menu carry (one listener, bot/presses.py dispatches)
CARD_ACTIONS = (Action.WHATIF, Action.WHATIF_GOAL, Action.RENT_VS_BUY, Action.MORE,
                Action.SHOW_BREAKDOWN, Action.SHOW_CHART, Action.SHOW_PRICE_CHART)
# buttons that start something new: help's, an error's and App Home's (not tied to a card)
START_ACTIONS = (Action.OPEN_FORM, Action.RUN_IT, Action.ALL_OPTIONS, Action.SHOW_PRICES)
# presses that draw a chart (limited per user before they are queued)
CHART_ACTIONS = (Action.SHOW_CHART, Action.SHOW_PRICE_CHART)


class Detail(StrEnum):
    """What a menu option (or the "Rent vs buy" button) asks to see: charts are uploaded into
    the thread, everything else opens in a modal for the presser alone (MODAL_DETAILS)."""

    COST = "cost"  # rent vs buy
    BREAKDOWN = "breakdown"  # the memory breakdown
    CHARTS = "charts"  # the memory chart, and the top card's price history where there is one
    ASSUMPTIONS = "assumptions"
    ADVICE = "advice"  # the buying guides' advice
    BOM = "bom"  # the bill of materials: the whole server
    LAUNCH = "launch"  # how to run it: the engines' commands


# details read in a modal (views.open with the press's trigger): the thread keeps the decision
MODAL_DETAILS = (Detail.COST, Detail.BREAKDOWN, Detail.ASSUMPTIONS, Detail.ADVICE, Detail.BOM,
                 Detail.LAUNCH)


# the message shortcut "Size this with gpusize" (deploy/slack/manifest.yml's callback_id)
SIZE_THIS = "size_this"


class View(StrEnum):
    """callback_ids of the bot's modals."""

    FORM = "sizing_form"  # the sizing form: its submission posts a card
    DETAIL = "detail"  # a detail (nothing to submit)
    KEYS = "all_options"  # every key the grammar reads
