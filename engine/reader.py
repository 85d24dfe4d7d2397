"""The sentence reader: what a message asks, wherever it says it (issue 20).

A message is read as a sentence, not as a command whose every word must parse: the slots (model,
method, cards and count, users, context, tokens, budget, deadline, first-token time, format,
buy or rent, region, traffic) are found anywhere, in any order, with or without spaces, in Chinese,
English or both; the words the answer does not need are skipped and reported. One reader serves
the CLI's arguments, the slash command, mentions and thread follow-ups.

- `key=value` is the exact form: it is read first and wins over anything read from prose.
- Models are found through a compact-key index of the catalog's names (`llama3.1 8b`,
  `Llama 4 Scout`, `r1 32b`), before the phrase tables run, so no table reads a model's digits.
- The phrase tables (engine/zh_input.py, engine/en_input.py) turn the rest into key=value.
- Two readings of one slot (two models, two budgets) and a negated card or model (`不要4090`,
  `not H20`) are never guessed: `Ambiguous` says both readings.

Reading is linear in the input: the text is cut to MAX_INPUT_CHARS before any pattern runs,
whitespace runs are collapsed, and every pattern is anchored so that none backtracks over the
whole input (tests/engine/test_reader.py fuzzes long, repeated and mixed-script input).
"""

from __future__ import annotations

import bisect
import math
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from typing import Any

from engine import catalog, datasize, deadline, en_input, i18n, numbers, rates, zh_input
from engine.i18n import N_, _
from engine.keys import (
    BITS,
    MODES,
    SIZE_RE,
    ParseError,
    _bare_card,
    _format_of_width,
    _gpu,
    _grammar_word,
    _parse_model,
    parse_option,
)
from engine.methods import METHOD_WORDS, METHODS, SERVING_QUANTS
from engine.phrases import CARD, Rewrite, _compiled, card_name, has_cjk
from engine.request import LARGEST_MODEL, LARGEST_WORDS


class _Lazy:
    """A pattern compiled on its first use: a command in the grammar's own words never pays for
    the question and negation patterns (the CLI's start-up, issue 11)."""

    def __init__(self, regex: str) -> None:
        self.regex = regex

    def __getattr__(self, name: str) -> Any:
        return getattr(_compiled(self.regex), name)


MAX_INPUT_CHARS = 1000  # a message is cut here before any pattern reads it
_SEPARATORS = " -_/:"  # what a model's name may have between its parts ("llama 3.1 8b")
# a key=value the user typed: ASCII key, a value up to a space or a Chinese comma; a Chinese scale
# word may follow the digits (budget=15万)
_OPTION = _Lazy(r"(?<![A-Za-z0-9_=.])([A-Za-z_][A-Za-z0-9_]{0,39})="
                     r"([^\s，。；、\u3400-\u9fff]{0,80}"
                     r"(?:[十百千万亿]{1,3}(?:元|块|人民币|美元|美金)?)?)")
_CN_AMOUNT = _Lazy(r"(\d+(?:\.\d+)?)([十百千万亿]{1,3})(元|块|人民币|美元|美金)?")
_MENTION = _Lazy(r"<@[A-Z0-9]{1,20}>")
# sentence punctuation, not a thousands comma (1,200) or a decimal point
_PUNCT = _Lazy(r"(?<!\d),|,(?!\d{3}(?!\d))|[;!?。、！？；“”《》【】]")
_CJK_PUNCT = _Lazy(r"[，。、？！：；（）“”《》【】]")
# brackets, and a colon that ends a word ("qwen3-32b: self-hosted?"), not one inside a name
# (qwen3:32b, an Ollama tag): words apart, never a skipped word
_BRACKETS = _Lazy(r"[()\[\]{}\"`|]|:(?![A-Za-z0-9])|(?<![A-Za-z0-9]):")
# rates typed as key=value (QPS=10, dau=5000): words for engine/rates.py, not keys
_RATE_KEYS = frozenset(("qps", "rps", "rpm", "dau", "mau"))
# what phrase rows read that no key holds: a head count (engine/rates.py), a data set in samples
# or bytes and its epochs (engine/datasize.py), turned into requests= or tokens= by the reader
_SAID_ONLY = frozenset(("people", "samples", "databytes", "epochs"))
# a range (30-50人, 2~3万, 1到2周, 30 to 50 users): sized for its upper end, said in a note
# (not a name's digits: 千问2.5-72B, gpu=4090-48gb; the upper end ends where its number does)
_RANGE = _Lazy(r"(?<![A-Za-z0-9.\-=])(?P<low>\d+(?:\.\d+)?)\s*(?P<unit>[kw万千亿]?)\s*(?:-|~|–|—|到|至)\s*"
               r"(?=(?P<high>\d+(?:\.\d+)?)(?:[kw万千亿](?![a-z])|(?![\d.a-z])))|"
               r"(?<![A-Za-z0-9.\-])(?P<elow>\d+)\s+to\s+(?=(?P<ehigh>\d+)\s*(?:users|people|concurrent|"
               r"requests|gpus|cards)\b)")
# a share of the people said to be online at once (500人的公司，同时在线10%; 10% concurrent)
_SHARE = _Lazy(r"(?:同时在线|同时使用|同时用|并发)\s*(?:率|比例|比率)?\s*(?:大概|大约|约|是|为|按|有)?\s*"
               r"(?P<p>\d+(?:\.\d+)?)\s*%|(?<![\d.])(?P<q>\d+(?:\.\d+)?)\s*%\s*(?:的人)?\s*(?:同时在线|同时使用|在线|并发)|"
               r"(?<![\w.])(?P<e>\d+(?:\.\d+)?)\s*%\s*(?:of\s+(?:them|those|whom)\s+)?(?:are\s+)?"
               r"(?:concurrent(?:ly)?|online\s+at\s+once|active\s+at\s+once|at\s+once|at\s+the\s+same\s+time|"
               r"simultaneous(?:ly)?)\b|\bconcurrency\s*(?:of|at|:|~)?\s*(?P<c>\d+(?:\.\d+)?)\s*%")
# nicknames: ds v3, ds-r1 (DeepSeek); a repo's suffixes: -instruct, -chat, -it say the tuned
# release of the same shapes, -awq, -gptq, -fp8, -int4 its weight format
_NICKNAME = _Lazy(r"(?<![a-z0-9])(?:ds|dpsk|deepsk)(?=\s*-?\s*[vr]\d)")
# a release date after a name (deepseek-v3-0324, deepseek-r1-0528): the same shapes, when the
# catalog knows the name without it and not with it
_DATED = _Lazy(r"(?<![\w.\-])(?P<name>[a-z][\w.\-]{1,60}?)-(?P<date>\d{4})(?![\w.\-])")
_TUNED_SUFFIX = _Lazy(r"(?<=[a-z0-9])-(?:instruct|chat|it|base|hf)(?![\w.\-])")
_FORMAT_SUFFIX = _Lazy(r"(?<=[a-z0-9])-(?:(?P<q>awq|gptq|fp8|int4|int8)|gguf)(?![\w.\-])")
# a family and a size the catalog has once (Yi 34B, qwen-72b): that model
_FAMILY_SIZE = _Lazy(r"(?<![a-z0-9.\-])(?P<fam>[a-z]{2,10})[\s\-_]?(?P<size>\d+(?:\.\d+)?b)(?![a-z0-9.])")
# two cards asked against each other (L20还是H20, 4090 or A800, H100 vs H200): compared, not two
# readings of one card
# (buy H20s or rent H100s: each card with its verb; the same verb on both stays, two say both ways)
_VERB = r"(?:(?P<{}>buy|rent|use|租用|租|买|购买|用)\s*)?"
_VERSUS = _Lazy(r"(?<![a-z0-9])" + _VERB.format("av")
                + CARD.replace("?P<card>", "?P<a>").replace("?P<mem>", "?P<am>") + r"s?"
                + r"\s*(?:还是|或者|或是|或|对比|比较|\bor\b|\bvs\.?|\bversus\b)\s*" + _VERB.format("bv")
                + CARD.replace("?P<card>", "?P<b>").replace("?P<mem>", "?P<bm>") + r"s?(?![a-z0-9])")

# families named without a size (満血/full): their full model, as teams mean it
FULL_MODELS = {"deepseek": "deepseek-r1", "r1": "deepseek-r1", "deepseekr1": "deepseek-r1",
               "deepseekv3": "deepseek-v3", "v3": "deepseek-v3", "kimi": "kimi-k2",
               "kimik2": "kimi-k2", "glm": "glm-4.6", "minimax": "minimax-m2",
               "qwen3": "qwen3-235b-a22b", "llama4": "llama-4-maverick"}
_FULL_WORDS = _Lazy(r"满血|完整版|full[- ]?(?:size|model|version)?|原版")

# a negated card or model: 不要4090, 不用H20, not H20, no 4090s, without A800
_NEGATION = _Lazy(r"(?:不要|不用|别用|不想用|不考虑|不买|不能用|排除|除了|\bnot|\bno|\bwithout|\bexcept|"
                       r"\bavoid|\bexcluding)\s?(?:用|买)?\s?(?P<word>[A-Za-z0-9][A-Za-z0-9.\-]{0,30})")

# question words: a verdict for the named cards, the fewest cards, what a box can serve
_FITS = _Lazy(r"够吗|够不够|够用|能不能|能跑|能否|行不行|行吗|可以吗|放得下|装得下|跑得动|"
                   r"跑得起来|撑得住|扛得住|\bdoes (?:it|that|this) fit\b|\bfits?\??$|"
                   r"\bwill (?:it|that) (?:fit|run|work)\b|"
                   r"\bis it (?:possible|feasible|doable)\b|\bany chance\b|"
                   r"\bwould (?:[\w.\-]{1,40} ){1,5}?be enough\b|"
                   r"\bis (?:that|it|this|\w+) enough\b|\benough\b|"
                   # can two RTX 6000 Ada serve: up to five words between (bounded, linear)
                   r"\bcan (?:[\w.\-]{1,40} ){1,5}?(?:serve|run|handle|fit|train|do)\b|\bcan i\b|\bcan we\b")
_FEWEST = _Lazy(r"最少|至少|几张|多少张|几块|多少块|几台|多少台|\bhow many\b|\bat (?:the )?minimum\b|"
                     r"\bfewest\b|\bminimum number\b")
_CAPACITY = _Lazy(r"多少人|多少用户|多少并发|多少个用户|几个并发|几个人|几个用户|几路并发|最大并发|"
                       r"\bhow many (?:users|people|concurrent)\b|\bhow much traffic\b|"
                       r"\bmax(?:imum)? (?:concurrency|concurrent users|users)\b")
# weight formats only a serving engine loads (GGUF's k-quants, AWQ, GPTQ): no method said is serving
_SERVING_FORMAT = _Lazy(r"q\d(?:_k)?(?:_[msl0-9])?|q8_0|q4_0|awq|gptq")
# words for fine-tuning that name no method: full fine-tuning unless LoRA or QLoRA is said
GENERIC_FINE_TUNE = frozenset(("fine-tune", "finetune", "fine-tuning", "finetuning", "fine-tuned"))
_TRAIN_WORDS = _Lazy(r"训练|\btrain(?:ing)?\b|\bfine[- ]?tun")
_FULL_FT_WORDS = _Lazy(r"全参|全量|监督微调|\bfull\b|\bfft\b|\bsft\b|full[- ]fine")

# English words that are not slots: a skipped word list stays short ("please", "can", ...)
_QUIET = frozenset((
    "a", "an", "the", "of", "to", "for", "on", "in", "at", "with", "and", "or", "is", "it", "be",
    "do", "does", "can", "could", "would", "will", "we", "i", "you", "our", "my", "me", "us",
    "please", "what", "how", "much", "many", "if", "make", "change", "switch", "use", "using",
    "need", "want", "run", "running", "model", "models", "gpu", "gpus", "card", "cards", "server",
    "servers", "fit", "fits", "enough", "'s", "'re", "'m", "'ve", "'d", "should", "have", "own",
    "each",
    "which", "are", "there", "any", "this", "that", "these", "those", "so", "just", "also",
    "vs", "versus", "or", "get", "go", "hi", "hey", "thanks", "pls", "plz", "team", "folks",
    "they", "them", "got", "option", "options", "hardware", "setup", "config", "configuration",
    "best", "params", "parameters", "param", "done", "node", "nodes", "box", "one", "recommend",
    "budget", "cost", "way", "long", "avg", "average", "total", "must", "finish", "already",
    "doable", "ok", "okay", "peak", "possible", "feasible", "realistic", "train", "training",
    "latency", "p99", "p95", "p50", "number", "handle", "chance", "runs", "cluster", "expect",
    "via", "framework",
))


class Ambiguous(ParseError):
    """Two readings of one slot, or a card or model the message says not to use: never guessed.
    `readings` holds both, for the bot to ask which."""

    def __init__(self, message: str, *, token: str, readings: tuple[str, str]) -> None:
        super().__init__(message, token=token)
        self.readings = readings


@dataclass(frozen=True)
class Reading:
    """What a message said: the Draft's values, the read line's parts, the skipped words, the
    kind of question, and notes on what was assumed."""

    values: dict[str, Any]
    read: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    question: str | None = None  # "fits" | "fewest" | "capacity"
    notes: tuple[str, ...] = field(default=())
    traffic: str | None = None  # requests= as said (1000 daily active users, QPS 20), if so

    def __bool__(self) -> bool:
        return bool(self.values)


def normalize(text: str) -> str:
    """NFKC (full-width digits and letters), the length cap, Slack mentions and private-use
    characters out, whitespace runs collapsed: before any pattern reads the text."""
    text = text[: MAX_INPUT_CHARS * 4]  # NFKC can only grow a text; cut a paste before it
    text = unicodedata.normalize("NFKC", text)[:MAX_INPUT_CHARS]
    text = _MENTION.sub(" ", text)
    text = _PUNCT.sub(" ", text)  # "serve，please" (NFKC made the comma ASCII): words apart
    text = _BRACKETS.sub(" ", text)
    text = re.sub("[\ue000-\uf8ff]", " ", text)
    return " ".join(text.split())


# -- models -----------------------------------------------------------------------------------------

@cache
def _model_keys() -> tuple[dict[str, str], tuple[str, ...], int]:
    """The catalog's names compacted (lower case, no separators): key -> model, the keys
    sorted, and the longest key."""
    index: dict[str, str] = {}
    for spec in catalog.models().values():
        names = [spec.name, spec.display, *spec.aliases]
        if spec.hf_repo:
            names += [spec.hf_repo, spec.hf_repo.split("/", 1)[-1]]
        for name in names:
            key = _compact(name)
            if len(key) >= 3:
                index.setdefault(key, spec.name)
    return index, tuple(sorted(index)), max(map(len, index))


def _is_prefix(prefix: str, keys: tuple[str, ...]) -> bool:
    """Whether some key starts with `prefix` (keys sorted): a bisection, no prefix table to build."""
    at = bisect.bisect_left(keys, prefix)
    return at < len(keys) and keys[at].startswith(prefix)


def _compact(text: str) -> str:
    return "".join(c for c in text.lower() if c not in _SEPARATORS)


def _word_char(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == ".")


def _joined(text: str, at: int) -> bool:
    """The character at `at` joins the word it touches: a letter, digit or dot, or a - _ / that
    another one follows (someone/llama-3.1-8b-custom is one name, not llama-3.1-8b)."""
    c = text[at]
    if _word_char(c):
        return True
    return c in "-_/" and 0 < at < len(text) - 1 and _word_char(text[at + 1]) and _word_char(text[at - 1])


@cache
def _card_keys() -> tuple[dict[str, str], tuple[str, ...], int]:
    """The GPU catalog's names and aliases compacted, as `_model_keys` does for models: key ->
    the shortest of the card's own names that the phrase tables read back as that card (so
    `one RTX PRO 6000` becomes `one pro6000`, which the count rows then read)."""
    card_re = _compiled(r"(?:" + CARD + r")")
    index: dict[str, str] = {}
    for spec in catalog.gpus().values():
        names = [spec.name, spec.display, *spec.aliases]
        written = sorted((n for n in names if n.isascii() and card_re.fullmatch(n.lower())
                          and card_name(n) == spec.name), key=len)
        if not written:
            continue
        for name in names:
            key = _compact(name)
            if len(key) >= 3:
                index.setdefault(key, written[0].lower())
    return index, tuple(sorted(index)), max(map(len, index))


def find_cards(text: str) -> list[tuple[int, int, str]]:
    """(start, end, name) for each card named in words apart (RTX PRO 6000, RTX 6000 Ada, H100
    PCIe): a card written as one word is left to the phrase tables, which read its count."""
    return [(start, end, name) for start, end, name in find_models(text, _card_keys())
            if " " in text[start:end].strip()]


def find_models(text: str, keys_index: tuple[dict[str, str], tuple[str, ...], int] | None = None
                ) -> list[tuple[int, int, str]]:
    """(start, end, model) for each catalog model named in `text`, longest match first at each
    word start; at most the longest key's length is looked at from each start (linear)."""
    index, keys, longest = keys_index or _model_keys()
    low = text.lower()
    found: list[tuple[int, int, str]] = []
    i, n = 0, len(low)
    while i < n:
        if not (low[i].isascii() and low[i].isalnum()) or (i and _joined(low, i - 1)):
            i += 1
            continue
        key, best, j = "", None, i
        while j < n and len(key) < longest:
            c = low[j]
            if c in _SEPARATORS:
                if c == " " and j + 1 < n and not low[j + 1].isascii():
                    break  # a space before Chinese ends a name
                j += 1
                continue
            if not _word_char(c) or not _is_prefix(key + c, keys):
                break
            key += c
            j += 1
            if key in index and (j == n or not _joined(low, j)):
                best = (i, j, index[key])
        if best is not None:
            found.append(best)
            i = best[1]
        else:
            while i < n and _word_char(low[i]):
                i += 1  # the rest of this word starts no name
    return found


def _family(word: str, text: str) -> str | None:
    """A family named without a size (满血deepseek, full DeepSeek): its full model."""
    model = FULL_MODELS.get(_compact(word))
    if model is None:
        return None
    if _compact(word) in ("deepseek", "kimi", "minimax") or _FULL_WORDS.search(text):
        return model
    return None


# -- reading ----------------------------------------------------------------------------------------

# "we have / 我们有" right before a count and a card: the team owns those cards (a budget, a
# deadline or "we have 50 users" is not a card, so the count and card must follow the words)
_OWNED_WORDS = (r"(?:(?:我们|我|咱们|公司|团队|实验室)\s*(?:手上|手里|手头|现在|目前)?"
                r"\s*(?:只|就|一共|总共|共)?\s*(?:已经有|已有|有)"
                r"|(?:手上|手里|手头|现在|目前)\s*(?:已经有|已有|有)|现有|已有|拥有"
                r"|\b(?:we|i)\s*(?:already\s+)?(?:have|own|'ve\s+got|have\s+got|got)"
                r"|\bwe've\s+got|\bour)")
_OWNED_COUNT = (r"(?:\d{1,6}|[一二两三四五六七八九十百千单双]{1,4}"
                r"|an?|one|two|three|four|five|six|seven|eight|nine|ten|twelve|sixteen|"
                r"thirty-two|sixty-four)")
# 两台8卡H800; two servers with 8 A800 each; 2 nodes of 8 H100
_OWNED_SERVERS = (r"(?:(?:\d{1,3}|[一二两三四五六七八九十]{1,3})\s*(?:台|机)\s*"
                  r"|(?:\d{1,3}|an?|one|two|three|four|five|six|seven|eight)\s+"
                  r"(?:servers?|nodes?|machines?|boxes)\s+(?:with|of)\s+)?")
_OWNED = re.compile(_OWNED_WORDS + r"\s*(?:了)?\s*" + _OWNED_SERVERS + _OWNED_COUNT
                    + r"\s*(?:张|块|个|卡|张卡|x|×|\*)?\s*(?:的)?\s*(?:nvidia\s*|英伟达\s*)?"
                    + r"(?:" + CARD + r"|(?P<short>[a-z]\d)s?(?![a-z0-9]))",  # 8 T4s, 两张L4
                    re.IGNORECASE)


def owns_cards(text: str) -> bool:
    """Whether the message says the team already has the cards it names, with a count."""
    return any(card_name(m.group("card") or m.group("short"), m.group("mem")) is not None
               for m in _OWNED.finditer(normalize(text)))


def read(text: str, *, reply: bool = False, today: date | None = None) -> Reading:
    """A message as a Reading. `reply`: a thread follow-up (changes to a request already made:
    nothing is assumed); `today`: the date a deadline like 月底前 counts from (default: today).
    Raises ParseError for a bad key=value, Ambiguous for two readings."""
    notes: list[str] = []
    if len(text) > MAX_INPUT_CHARS:
        notes.append(_("The message is {count:,} characters: the first {limit:,} were read.").format(
            count=len(text), limit=MAX_INPUT_CHARS))
    text = _ranges(normalize(text), notes)
    exact, prose = _exact_options(text)
    plain = all(_grammar_word(word) for word in prose.split())
    if not plain:
        _check_negations(prose)
    rw = Rewrite(prose)
    rw.text = _CJK_PUNCT.sub(" ", rw.text)
    for name, family in zh_input.NAMES.items():
        rw.text = rw.text.replace(name, f" {family}")  # 上下文8k千问3: 8k, then qwen3
    rw.text = _NICKNAME.sub("deepseek", rw.text)
    rw.text = _TUNED_SUFFIX.sub("", rw.text)
    rw.text = _DATED.sub(lambda m: m.group("name") if catalog.find_model(m.group(0)) is None
                         and catalog.find_model(m.group("name")) is not None else m.group(0), rw.text)
    rw.text = _FORMAT_SUFFIX.sub(lambda m: f" {m.group('q') or ''} ", rw.text)
    rw.run(zh_input.ZH_MODEL_ROWS + en_input.EN_MODEL_ROWS)
    for start, end, model in reversed(find_models(rw.text)):
        rw.text = rw.text[:start] + rw.keep(f"model={model}") + rw.text[end:]
    rw.text = _FAMILY_SIZE.sub(lambda m: _family_size(m, rw), rw.text)
    for start, end, card in reversed(find_cards(rw.text)):
        rw.text = f"{rw.text[:start]} {card} {rw.text[end:]}"
    said: list[rates.Said] = []
    share = None
    if not plain:
        rw.text = _VERSUS.sub(lambda m: _versus(m, notes), rw.text)
        share, rw.text = _share(rw.text)
        # active users and request rates before the tables (日活1000人 is not 1000 users)
        rw.run(rates.rows(said, peak=exact.get("peak")))
        notes.extend(s.note for s in said)
        # a line in the grammar's own words skips the tables: no table compiled, start-up fast
        zh_input.rewrite(rw)
        if not all(_grammar_word(word) for word in rw.text.split()):
            en_input.rewrite(rw)  # English left to read (a Chinese question often has none)
    values, skipped = _classify(rw.result().split(), prose, notes, reply=reply)
    if "gpu" in values and owns_cards(prose):
        values["owned"] = True
    people = values.pop("people", None)
    people = None if people is None else int(people)
    if share is not None:
        _apply_share(share, values, notes, people)
    elif people is not None:
        _head_count(people, values, said, notes, exact=exact)
    for key, value in exact.items():
        values[key] = value  # the exact form wins over prose
    if has_cjk(text):
        values.setdefault("asked_in", "zh")
    question = None if plain else _question(prose)
    if not reply:
        _assume(values, question, notes, exact=set(exact), prose=prose)
    _data_set(values, notes, exact=exact)
    _relative_deadline(values, notes, today or date.today())
    _memory_said(values, notes)
    traffic = next((s.label for s in said if s.requests == values.get("requests")), None)
    return Reading(values=values, read=tuple(read_line(values, traffic=traffic)),
                   skipped=tuple(skipped), question=question, notes=tuple(notes), traffic=traffic)


@cache
def _sized(stem: str, size: str) -> str | None:
    """The one catalog model whose name starts with `stem` and has `size` (no variant: vision,
    coder, distill), or None when there are none or several (llama 70b is four models)."""
    found = [name for name in catalog.models() if name.startswith(stem)
             and re.search(rf"(?<![\d.]){re.escape(size)}(?![\d.a-z])", name)
             and not re.search(r"-(?:vl|coder|distill)", name)]
    return found[0] if len(found) == 1 else None


def _family_size(m: re.Match[str], rw: Rewrite) -> str:
    name = _sized(m.group("fam").lower(), m.group("size").lower())
    return m.group(0) if name is None else rw.keep(f"model={name}")


def _ranges(text: str, notes: list[str]) -> str:
    """30-50人 -> 50人: a range is sized for its upper end, and the note says so."""
    def upper(m: re.Match[str]) -> str:
        low, high = m.group("low") or m.group("elow"), m.group("high") or m.group("ehigh")
        if float(low) >= float(high):
            return m.group(0)  # not a range: a card, then a count (on 3090 to 50 users)
        notes.append(_("{low}-{high} read as {high}, the upper end of the range.").format(
            low=low + (m.group("unit") or ""), high=high))
        return ""
    return _RANGE.sub(upper, text)


def _versus(m: re.Match[str], notes: list[str]) -> str:
    """Two cards asked against each other: neither is pinned, every card is ranked."""
    first, second = card_name(m.group("a"), m.group("am")), card_name(m.group("b"), m.group("bm"))
    if first is None or second is None or first == second:
        return m.group(0)
    notes.append(_("{first} or {second}: compared, not pinned; the answer ranks every card, these "
                   "two among them.").format(first=first, second=second))
    verbs = {m.group(v).lower() for v in ("av", "bv") if m.group(v)}
    return f" {verbs.pop()} " if len(verbs) == 1 else " "  # 租4090还是A800: still renting


def _share(text: str) -> tuple[float | None, str]:
    """A share of the people online at once (同时在线10%), taken out of the text."""
    m = _SHARE.search(text)
    if m is None:
        return None, text
    percent = float(next(g for g in m.group("p", "q", "e", "c") if g))
    if not 0 < percent <= 100:
        return None, text
    return percent / 100, text[:m.start()] + " " + text[m.end():]


def _apply_share(share: float, values: dict[str, Any], notes: list[str],
                 head_count: int | None = None) -> None:
    """给500人用，同时在线10%: the users in flight are that share of the people (the head count,
    else the users said)."""
    people = head_count if head_count is not None else values.get("users")
    if people is None:
        notes.append(_("{percent:g}% online at once, of no number of people: say how many use it "
                       "(e.g. 500人).").format(percent=share * 100))
        return
    values["users"] = max(1, math.ceil(people * share))
    notes.append(_("{percent:g}% of {people:,} people online at once: {users:,} users.").format(
        percent=share * 100, people=people, users=values["users"]))


def _head_count(people: int, values: dict[str, Any], said: list[rates.Said], notes: list[str], *,
                exact: dict[str, Any]) -> None:
    """给200个开发者用, a team of 200: a head count is traffic (engine/rates.py), never users in
    flight; users or requests said as well win, and a training run has no use for it."""
    method = values.get("method") or exact.get("method")
    if method and METHODS[method].training:
        notes.append(_("A head count of {count:,} is not used by a training run.").format(count=people))
        return
    if "users" in values or "users" in exact or "requests" in values or "requests" in exact:
        notes.append(_("A head count of {count:,} read beside the traffic said: the traffic said "
                       "is used.").format(count=people))
        return
    got = rates.head_count(people)
    said.append(got)
    notes.append(got.note)
    values["requests"] = got.requests


def _relative_deadline(values: dict[str, Any], notes: list[str], today: date) -> None:
    """下个月, 月底前, by end of month: days from today (engine/deadline.py); days said win."""
    kind = values.pop("due", None)
    if kind is None:
        return
    if "days" in values:
        return
    values["days"], note = deadline.days_until(kind, today)
    notes.append(note)


def _memory_said(values: dict[str, Any], notes: list[str]) -> None:
    """24G显存 beside a named card says nothing new; 512G内存 is used only by CPU offload."""
    memory = values.get("card_memory")
    if memory is not None and values.get("gpu"):
        values.pop("card_memory")  # A100 40G版本: the named card's variant of that memory
        variant = _variant(values["gpu"], memory)
        if variant is not None and variant != values["gpu"]:
            notes.append(_("{card} with {gb:g} GB: read as {variant}.").format(
                card=values["gpu"], gb=memory, variant=variant))
            values["gpu"] = variant
    elif memory is not None:
        notes.append(_("{gb:g} GB said with no card named: compared among the cards of that memory "
                       "(gpu= names one).").format(gb=memory))
    if "host_memory" in values:
        notes.append(_("{gb:g} GB of host RAM: used where the plan offloads to the CPU "
                       "(offload=), and said as not used otherwise.").format(gb=values["host_memory"]))


def _variant(card: str, memory: float) -> str | None:
    """The catalog card of the named card's family (a100-80gb -> a100) with that memory."""
    family = card.split("-")[0]
    found = [g.name for g in catalog.gpus().values() if g.name.split("-")[0] == family
             and round(g.memory_gb) == round(memory)]
    return card if card in found else (found[0] if found else None)


def _data_set(values: dict[str, Any], notes: list[str], *, exact: dict[str, Any]) -> None:
    """数据5万条, a 3GB dataset, 3 epochs: the tokens a training run trains on
    (engine/datasize.py, its assumption said); tokens= said wins; serving has no use for it."""
    samples, size = values.pop("samples", None), values.pop("databytes", None)
    epochs = values.pop("epochs", None) or 1
    if samples is None and size is None and epochs == 1:
        return
    method = values.get("method")
    if not (method and METHODS[method].training):
        notes.append(_("The data set said is not used: serving needs no training data."))
        return
    if "tokens" in exact:
        notes.append(_("tokens= said: the data set read beside it is not used."))
        return
    if samples is None and size is None:  # 1B tokens, 3 epochs: each epoch trains on them again
        if "tokens" in values:
            values["tokens"] = round(values["tokens"] * epochs)
            notes.append(_("{epochs:g} epochs of the tokens said: {tokens} tokens in all.").format(
                epochs=epochs, tokens=_big(values["tokens"])))
        else:
            notes.append(_("{epochs:g} epochs of no data set said: the answer assumes one epoch "
                           "of its own; say the data set (50k samples, 3GB) or tokens=.").format(
                               epochs=epochs))
        return
    if "tokens" in values:
        notes.append(_("Tokens said beside a data set in samples or bytes: the tokens are used."))
        return
    tokens, note = (datasize.from_samples(samples, epochs) if samples is not None
                    else datasize.from_bytes(size, epochs))
    values["tokens"] = tokens
    notes.append(note)


def check_model_asked(reading: Reading) -> None:
    """How many users cards serve depends wholly on the model: a capacity question with no
    model named is a ParseError asking for one, never answered for the largest model assumed."""
    values = reading.values
    if reading.question != "capacity" or "model" in values:
        return
    cards = (f"{values['gpus']}x{values['gpu']}" if values.get("gpu") and values.get("gpus")
             else str(values.get("gpu") or ""))
    raise ParseError(_("missing MODEL: how many users the cards serve depends on the model; name "
                       "it, e.g. {example}.").format(example=" ".join(("qwen3-32b", cards)).strip()),
                     token="")


def has_slot(text: str) -> bool:
    """Whether a thread message has anything for the bot (chatter has not): cheap enough to
    call before a message costs a job slot. Two readings count: the bot asks which."""
    try:
        return bool(read(text, reply=True).values.keys() - {"asked_in"})
    except ParseError:
        return True


def _exact_options(text: str) -> tuple[dict[str, Any], str]:
    """The key=value words, converted (ParseError for a bad one), and the prose around them."""
    exact: dict[str, Any] = {}

    def take(m: re.Match[str]) -> str:
        key, value = m.group(1), m.group(2)
        if key.lower() in _RATE_KEYS:
            return f" {key} {value} "  # QPS=10: a rate, read by engine/rates.py
        if key.lower() == "model":
            exact["model"] = _parse_model(value)
            return " "
        if key.lower() == "method":
            word = value.lower()
            if word not in METHOD_WORDS:
                raise ParseError(_("method={value} is not one of {choices}.").format(
                    value=value[:40], choices=", ".join(METHODS)), token=m.group(0))
            exact["method"] = METHOD_WORDS[word]
            return " "
        name, converted = parse_option(f"{key}={_cn_amount(key, value)}")
        exact[name] = converted
        return " "

    prose = _OPTION.sub(take, text)
    return exact, " ".join(prose.split())


def _cn_amount(key: str, value: str) -> str:
    """budget=15万 -> budget=150000cny; users=1万 -> users=10000 (万 and 亿 read as numbers)."""
    m = _CN_AMOUNT.fullmatch(value)
    if not m:
        return value
    amount = numbers.value(m.group(1), m.group(2))
    if amount is None:
        return value
    if key.lower() in ("budget",):
        return amount + ("usd" if m.group(3) in ("美元", "美金") else "cny")
    return amount


def _check_negations(prose: str) -> None:
    for m in _NEGATION.finditer(prose):
        word = m.group("word")
        card = card_name(word) if _bare_card(word) or _bare_card(word.rstrip("sS")) else None
        model = catalog.find_model(word)
        if card is None and model is None:
            continue
        name = card or (model.name if model else word)
        said = m.group(0)
        raise Ambiguous(_("“{said}” reads two ways: leave {name} out, or use {name}; I do not "
                          "guess which. Name what to use instead (e.g. gpu=… or model=…).").format(
                              said=said, name=name),
                        token=said, readings=(_("without {name}").format(name=name), name))


def _classify(words: list[str], prose: str, notes: list[str], *,
              reply: bool = False) -> tuple[dict[str, Any], list[str]]:
    """The rewritten words into Draft values; what no slot takes is skipped. In a thread reply
    a word with a slash is not taken for a Hub repo id (paths, and/or): model= says one."""
    values: dict[str, Any] = {}
    seen: dict[str, list[Any]] = {}
    skipped: list[str] = []
    methods: list[str] = []
    bits = 0

    def put(key: str, value: Any) -> None:
        if value not in seen.setdefault(key, []):
            seen[key].append(value)
        values[key] = value

    for word in words:
        low = word.lower()
        if "=" in word and not word.startswith("="):
            key, _sep, value = word.partition("=")
            if key == "model":
                put("model", value)
                continue
            if key == "due":  # a deadline relative to today: days once the date is known
                put("due", value)
                continue
            if key in _SAID_ONLY:  # a head count, a data set: converted once the method is known
                put(key, float(value))
                continue
            name, converted = parse_option(word)
            put(name, converted)
        elif low in GENERIC_FINE_TUNE:
            methods.append("fine-tune")  # full fine-tuning unless an adapter method is named
        elif low in METHOD_WORDS:
            methods.append(METHOD_WORDS[low])
        elif low in BITS:
            bits = BITS[low]
        elif low in ("bf16", "fp16", "fp32"):
            put("precision", low)
        elif low in MODES:
            put("mode", low)
        elif low.replace("-", "_") in SERVING_QUANTS:
            put("quant", low.replace("-", "_"))
        elif SIZE_RE.match(low) or low in LARGEST_WORDS:
            put("model", _parse_model(word))  # a size, or "the largest" a box runs
        elif (spec := catalog.find_model(word)) is not None:
            put("model", spec.name)  # a name a phrase row made (the R1 distills)
        elif (family := _family(word, prose)) is not None:
            put("model", family)
        elif _bare_card(word) or (low.endswith("s") and _bare_card(word[:-1])):
            put("gpu", _gpu("gpu", low if _bare_card(word) else low[:-1]))
        elif not reply and re.fullmatch(r"[A-Za-z0-9][\w.\-]{0,95}/[\w.\-]{1,96}", word):
            put("model", _parse_model(word))  # a Hugging Face repo id
        else:
            skipped.append(word)
    _method(methods, values, notes, prose)
    if "method" not in values and not reply:
        _near_method(skipped)
    if bits and "quant" not in values:
        values["quant"] = _format_of_width(bits, values.get("method"))
    _size_as_card(seen, values)
    _conflicts(seen, skipped)
    if len(seen.get("model", [])) == 1:
        values["model"] = seen["model"][0]  # deepseek 671b: the named model, not its size
    if "model" not in values and not reply:
        _unknown_model(skipped, values)
    shown = [w if len(w) <= 24 else w[:23] + "…" for w in skipped
             if w.lower() not in _QUIET and not w.isdigit() and _has_word(w)]
    notes.extend(_near_keywords(skipped))
    return values, shown


def _has_word(word: str) -> bool:
    """A letter, digit or Chinese character in it: punctuation alone is never a skipped word."""
    return any(c.isalnum() for c in word)


def _method(methods: list[str], values: dict[str, Any], notes: list[str], prose: str) -> None:
    """Serving words (推理, 部署, serve) yield to a training word in the same message; two
    training methods are two readings."""
    generic = "fine-tune" in methods  # "lora fine-tune": LoRA; "fine-tune" alone: full
    methods = [m for m in methods if m != "fine-tune"]
    if generic and not any(METHODS[m].training for m in methods):
        methods.insert(0, "full-finetune")
    training = sorted({m for m in methods if METHODS[m].training}, key=methods.index)
    if len(training) > 1:
        raise Ambiguous(_("two methods read: {first} and {second}; say which one.").format(
            first=training[0], second=training[1]), token=" ".join(training),
            readings=(training[0], training[1]))
    if training:
        values["method"] = training[0]
        if training[0] == "full-finetune" and not _FULL_FT_WORDS.search(prose):
            notes.append(_("“fine-tune” alone reads as full fine-tuning (the default); say LoRA or "
                           "QLoRA for adapters."))
    elif methods:
        values["method"] = methods[0]


def _near_method(skipped: list[str]) -> None:
    """No method read, and a skipped word is a method mistyped (lroa): say so rather than ask
    for the method."""
    import difflib  # only on this path

    words = [w for w in dict.fromkeys(skipped) if w.isascii() and len(w) >= 4
             and w.lower() not in _QUIET][:8]  # a paste is not spell-checked word by word
    for word in words:
        hits = difflib.get_close_matches(word.lower(), list(METHOD_WORDS), n=1, cutoff=0.75)
        if hits:
            raise ParseError(_("unexpected word {word}: after MODEL give METHOD ({methods}) and "
                               "key=value options.").format(word=word[:40],
                                                            methods=", ".join(METHODS)),
                             token=word, accepted=tuple(METHODS),
                             suggestion=METHOD_WORDS[hits[0]])


def _near_keywords(skipped: list[str]) -> list[str]:
    """A skipped Chinese word that is a keyword mistyped (并法 for 并发): a note with an example."""
    notes = []
    words = list(dict.fromkeys(w for w in skipped if has_cjk(w) and len(w) <= 8))[:8]
    for word in words:  # the first few: a pasted paragraph is not spell-checked word by word
        if len(notes) == 2:
            break
        import difflib  # only for a skipped Chinese word

        hits = difflib.get_close_matches(word, list(zh_input.KEYWORDS), n=1, cutoff=0.5)
        if (hits and hits[0] != word and hits[0][0] == word[0]
                and len(hits[0]) == len(word)):  # 并法 -> 并发; not 几张 -> 张卡, 服务 -> 服务化
            notes.append(_("Skipped {word}: did you mean {keyword}? For example: {example}.").format(
                word=word, keyword=hits[0], example=zh_input.KEYWORDS[hits[0]]))
    return notes[:2]


def _conflicts(seen: dict[str, list[Any]], skipped: list[str]) -> None:
    models = seen.get("model", [])
    named = [m for m in models if not SIZE_RE.match(str(m).lower())]
    # "llama 70b or qwen 72b": a family word of another model (llama, too many to name one) keeps
    # the size its own model, a second reading, however near the named model's size
    other = any(len(w) >= 3 and not any(str(n).startswith(w.lower()) for n in named)
                and any(name.startswith(w.lower()) for name in catalog.models()) for w in skipped)
    if named and not other:  # "72B推理 qwen2.5-72b", "deepseek 671b": a size the named model has repeats it
        models[:] = [m for m in models if m in named or not any(_same_size(str(m), n) for n in named)]
    for key in ("model", "budget", "gpu", "gpus", "users", "context", "tokens", "days", "requests",
                "people", "card_memory", "host_memory", "due"):
        got = seen.get(key, [])
        if len(got) > 1:
            first, second = (_value_text(key, v) for v in got[:2])
            raise Ambiguous(_("two values read for {key}: {first} and {second}; say which one "
                              "(e.g. {key}={example}).").format(key=key, first=first, second=second,
                                                                example=second),
                            token=f"{first} {second}", readings=(first, second))


def _size_as_card(seen: dict[str, list[Any]], values: dict[str, Any]) -> None:
    """用910B部署qwen3-32b, 13B lora on 910b: beside a named model or another size, a bare size
    that is also a card's name (910B, the Ascend 910B) is the card, not a second model; alone it
    stays a size."""
    models = seen.get("model", [])
    cards = [m for m in models if SIZE_RE.match(str(m).lower()) and card_name(str(m))]
    # the model: one named, or a size no card has (13B lora on 910b: 13B is the model)
    named = [m for m in models if m not in cards]
    if not named or len(cards) != 1 or seen.get("gpu"):
        return
    models.remove(cards[0])
    values["gpu"] = card_name(str(cards[0]))
    seen["gpu"] = [values["gpu"]]
    values["model"] = named[0]


def _same_size(size: str, name: str) -> bool:
    """Whether a bare size (72B) is the named model's own: in its name, or within 10% of its
    parameters."""
    if re.search(rf"(?<![\d.]){re.escape(size.lower())}", name):
        return True
    spec = catalog.find_model(name)
    m = SIZE_RE.match(size.lower())
    if spec is None or not m or m.group(1):
        return False
    billions = float(m.group(2)) / (1000 if m.group(3) == "m" else 1)
    return abs(spec.params / 1e9 - billions) <= 0.1 * billions


def _value_text(key: str, value: Any) -> str:
    if key == "budget":
        amount = numbers.plain(value["amount"])
        return amount + (value.get("currency") or "").lower()
    return str(value)


def _unknown_model(skipped: list[str], values: dict[str, Any]) -> None:
    """No model read: a skipped word that looks like one gets the grammar's own error (with its
    nearest name); otherwise the model is left for the caller to ask for."""
    for word in skipped:
        if re.fullmatch(r"\d+(?:\.\d+)?(?!gb?\b|k\b|m\b|w\b|t\b|s\b|h\b|ms\b|x\b|bit\b)[a-z]{1,3}", word,
                        re.IGNORECASE):
            _parse_model(word)  # 13Q: a size mistyped, with the size it most likely meant
        if (re.fullmatch(r"[A-Za-z][\w.]*(?:\d|-[A-Za-z])[\w.\-]*", word) and not _bare_card(word)
                and not re.fullmatch(r"[A-Za-z]?\d+(?:gb?|k|m|w|bit|x)?", word, re.I)):
            values["model"] = _parse_model(word)
            skipped.remove(word)
            return
        if word.isascii() and word.startswith(("-", "+")) and SIZE_RE.match(word[1:].lower()):
            _parse_model(word)


def _question(prose: str) -> str | None:
    if _CAPACITY.search(prose):
        return "capacity"
    if _FEWEST.search(prose):
        return "fewest"
    if _FITS.search(prose):
        return "fits"
    return None


def _assume(values: dict[str, Any], question: str | None, notes: list[str], *,
            exact: set[str], prose: str) -> None:
    """What a whole question leaves unsaid and the answer assumes, said in the notes (never
    over a key=value: context= stays context=)."""
    # a training framework named (with megatron, 用deepspeed) says training too
    if "method" not in values and (_TRAIN_WORDS.search(prose) or "framework" in values):
        values["method"] = "full-finetune"  # 训练 / train with no method named: the default
        notes.append(_("“fine-tune” alone reads as full fine-tuning (the default); say LoRA or "
                       "QLoRA for adapters."))
    if "method" not in values and (
            {"gpu", "gpus", "users", "requests", "ttft", "context", "engine", "card_memory"} & values.keys()
            or question
            or _SERVING_FORMAT.fullmatch(str(values.get("quant", "")))):
        values["method"] = "inference"
        notes.append(_("No method named: read as inference (serving)."))
    if question == "fewest" and values.get("gpu") and "gpus" in values and "gpus" not in exact:
        # 我们有8张4090，最少几张能跑: the fewest of that card, not the count they have
        notes.append(_("Asked for the fewest {card}: sized from one card up ({count} said)."
                       ).format(card=values["gpu"], count=values.pop("gpus")))
    method = values.get("method")
    if method and METHODS[method].serving and "framework" in values:
        # a training framework says nothing of serving: engine= names the serving engine
        notes.append(_("{framework} is a training framework: not used for serving (engine= "
                       "names the serving engine: vllm, llama.cpp or transformers).").format(
            framework=values.pop("framework")))
    if (method and METHODS[method].training and "context" in values and "seq" not in values
            and "context" not in exact):
        values["seq"] = values.pop("context")
        notes.append(_("On a training run, context means the sequence length: seq = {count:,} "
                       "tokens.").format(count=values["seq"]))


# -- the read line ----------------------------------------------------------------------------------

METHOD_LABELS = {"inference": N_("inference"), "full-finetune": N_("full fine-tune"),
                 "lora": "LoRA", "qlora": "QLoRA", "pretrain": N_("pretraining")}


def _tokens(count: int) -> str:
    """8192 -> 8k, 131072 -> 128k, 2000 -> 2000: as people write lengths."""
    return f"{count // 1024}k" if count >= 1024 and count % 1024 == 0 else f"{count:,}"


_big = datasize.short_count


def _wan(amount: float) -> str:
    """150000 -> 15万, 2e8 -> 2亿: amounts as Chinese readers count them."""
    for scale, word in ((1e8, "亿"), (1e4, "万")):
        if amount >= scale:
            return numbers.plain(round(amount / scale, 2)) + word
    return numbers.plain(amount)


def _money(budget: dict[str, Any]) -> str:
    currency = budget.get("currency")
    amount = budget["amount"]
    if i18n.current() == "zh":
        return (_wan(amount) + ("美元" if currency == "USD" else "元" if currency == "CNY" else ""))
    if currency == "CNY":
        return _("{amount} CNY").format(amount=_big(amount))
    if currency == "USD":
        return f"${_big(amount)}"
    return _big(amount)


def read_line(values: dict[str, Any], *, traffic: str | None = None) -> list[str]:
    """The read line's parts, in a fixed order: model · method · cards · the rest; `traffic`:
    requests= as the message said it (1000 daily active users), shown beside the requests."""
    parts: list[str] = []
    if values.get("model") == LARGEST_MODEL:
        parts.append(_("the largest model the cards run"))
    elif values.get("model"):
        parts.append(str(values["model"]))
    if values.get("method"):
        parts.append(_(METHOD_LABELS.get(values["method"], values["method"])))
    gpu, gpus = values.get("gpu"), values.get("gpus")
    cards = f"{gpus}×{gpu}" if gpu and gpus else str(gpu) if gpu else (
        _("{count} cards").format(count=gpus) if gpus else "")
    if cards:
        parts.append(_("your {cards}").format(cards=cards) if values.get("owned") else cards)
    labels = {
        "users": lambda v: _("{count} users").format(count=v),
        "context": lambda v: _("context {tokens}").format(tokens=_tokens(v)),
        "seq": lambda v: _("sequence {tokens}").format(tokens=_tokens(v)),
        "tokens": lambda v: _("{count} tokens").format(count=_big(v)),
        "budget": lambda v: _("budget {amount}").format(amount=_money(v)),
        "days": lambda v: _("within {days} days").format(days=numbers.plain(v)),
        "ttft": lambda v: _("first token ≤{seconds}s").format(seconds=numbers.plain(v)),
        "mode": lambda v: _(N_("buy") if v == "buy" else N_("rent")),
        "market": lambda v: _(N_("China market") if v == "china" else N_("market outside China")),
        "requests": lambda v: (_("{said} ≈ {count} requests/day").format(said=traffic, count=_big(v))
                               if traffic else _("{count} requests/day").format(count=_big(v))),
        "card_memory": lambda v: _("{gb:g} GB cards").format(gb=v),
        "host_memory": lambda v: _("host RAM {gb:g} GB").format(gb=v),
        "prompt": lambda v: _("prompt {tokens}").format(tokens=_tokens(v)),
        "output": lambda v: _("answer {tokens}").format(tokens=_tokens(v)),
    }
    for key, value in values.items():
        if key in ("model", "method", "gpu", "gpus", "asked_in", "owned"):
            continue
        label = labels.get(key)
        parts.append(label(value) if label else f"{key}={value}")
    return parts


def summary(read: list[str] | tuple[str, ...], skipped: list[str] | tuple[str, ...]) -> str:
    """The one line an answer begins with: what was read, and what was skipped, if anything."""
    line = _("Read: {slots}").format(slots=" · ".join(read) if read else _("nothing"))
    if skipped:
        line += "  " + _("(skipped: {words})").format(words=" ".join(skipped[:8]))
    return line


def read_summary(values: dict[str, Any], text: str = "") -> str:
    """The read line for a request already read (a Slack card: the thread's request), with the
    words `text` (the message it came from) skipped and what its reading assumed."""
    skipped: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    traffic = None
    if text:
        try:
            reading = read(text)
            skipped, notes = reading.skipped, reading.notes
            if reading.values.get("requests") == values.get("requests"):
                traffic = reading.traffic
        except ParseError:
            pass
    return " ".join([summary(read_line(values, traffic=traffic), skipped), *notes])
