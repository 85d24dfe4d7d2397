"""The English phrase table: "budget 300 thousand", "8k context", "20 concurrent users", "two
8-GPU servers", "1T tokens", "4-bit" into the grammar's tokens.

Rows feed the same key table as the Chinese ones (engine/zh_input.py) and read numbers the same
way (engine/numbers.py: thousand, million, billion, k, M, B, T, number words). They run on a
command line and on a thread reply alike, never inside a key=value the user typed.
"""

from __future__ import annotations

import re

from engine import datasize, numbers
from engine.frameworks import FRAMEWORK_WORDS
from engine.phrases import (
    BARE_LENGTH,
    CARD,
    SERVER_GPUS,
    Phrase,
    Rewrite,
    card_name,
    cards,
    distill,
    keyed,
    number,
    words,
)

N = (rf"(?P<n>(?<![\d.,])\d+(?:,\d{{3}})*(?:\.\d+)?(?![\d,])|{numbers.EN_NUMBER_WORD})\s*"
     rf"(?P<u>{numbers.EN_SCALE}|[kmbt](?=\b|cny|usd|rmb|yuan))?")
NOT_BITS = r"(?![- ]?bits?\b)"  # "context 4-bit": the 4 is the format's width
# "context to 50 people": a number its own word follows is that word's
NOT_COUNTED = (r"(?!\s*(?:users?|people|persons|concurrent|simultaneous|streams|sessions|gpus?|"
               r"cards?|servers?|nodes?|requests?|days?|weeks?|months?|in\b|out\b))")
SAY = r"\s*(?:of|is|to|at|around|about|~|:)?\s*"
MONEY = (r"(?P<sym>us\$|[$¥￥])?\s*" + N.replace("[kmbt]", "[kmbtw]")
         + r"\s*(?P<cur>cny|rmb|yuan|usd|dollars?|bucks)?\b")
CURRENCIES = {"$": "usd", "us$": "usd", "¥": "cny", "￥": "cny", "cny": "cny", "rmb": "cny",
              "yuan": "cny", "usd": "usd", "dollar": "usd", "dollars": "usd", "bucks": "usd"}


def _money(m: re.Match[str], *, needs_mark: bool = False) -> str | None:
    """300 thousand -> 300k, $20k -> 20kusd, 1.5 million yuan -> 1.5mcny; a bare 300 stays 300
    (the key table asks whether 300k was meant)."""
    sym, cur = (m.group("sym") or "").lower(), (m.group("cur") or "").lower()
    if needs_mark and not (sym or cur):
        return None
    amount = numbers.value(m.group("n"), m.group("u"))
    if amount is None:
        return None
    currencies = {CURRENCIES[c] for c in (sym, cur) if c}
    return amount + (currencies.pop() if len(currencies) == 1 else "")


def _budget(regex: str, example: str, *, needs_mark: bool = False) -> Phrase:
    def emit(m: re.Match[str], _kept: list[str]) -> str | None:
        got = _money(m, needs_mark=needs_mark)
        return None if got is None else f"budget={got}"
    return Phrase(regex, emit, example)


def _count(m: re.Match[str], group: str = "n") -> int | None:
    value = numbers.to_number(m.group(group) or "")
    return int(value) if value is not None and value == int(value) and value > 0 else None


def _servers(m: re.Match[str], _kept: list[str]) -> str | None:
    servers = _count(m, "s") if m.group("s") else 1
    per = _count(m, "per") if m.group("per") else SERVER_GPUS
    if servers is None or per is None:
        return None
    return cards(servers * per, m)


def _one_card(m: re.Match[str]) -> str | None:
    """"a single L20", "one L4": one card, its name as written (L4 is shorter than CARD's)."""
    short = m.group("short")
    if short:
        name = card_name(short)
        return None if name is None else f"gpus=1 gpu={name}"
    return cards(1, m, known=True)


DAYS_PER = {"hour": 1 / 24, "day": 1, "week": 7, "month": 30}  # a month of 30 days


def _deadline(m: re.Match[str]) -> str | None:
    word = m.group("n").lower()
    value = 1.0 if word in ("a", "one") else numbers.to_number(word)
    if value is None or value <= 0:
        return None
    return f"days={numbers.plain(value * DAYS_PER[m.group('unit').lower().rstrip('s')])}"


def _horizon(m: re.Match[str]) -> str | None:
    word = m.group("n").lower()
    value = 1.0 if word in ("a", "one") else numbers.to_number(word)
    if value is None or value <= 0:
        return None
    return numbers.plain(value * (12 if m.group("unit").lower().startswith("y") else 1))


BYTES = r"(?P<n>(?<![\w.])\d+(?:\.\d+)?)\s*(?P<b>[kmgt]b)\b"




def _hours_a_day(m: re.Match[str]) -> str | None:
    value = numbers.to_number(m.group("n"))
    return f"{float(value) * 730 / 24:.0f}" if value is not None and 0 < value <= 24 else None


EN_MODEL_ROWS: tuple[Phrase, ...] = (
    # models: "deepseek-r1 distill 32b"
    Phrase((r"(?<![a-z0-9.\-_/])(?P<model>[a-z][a-z0-9.\-_/]*)\s+distill(?:ed)?\s+(?P<size>\d+(?:\.\d+)?b)\b"),
           lambda m, _k: distill(m.group("model"), m.group("size")), "deepseek-r1 distill 32b"),
)
COUNT = rf"(?P<s>\d+|{numbers.EN_NUMBER_WORD})"
EN_PHRASES: tuple[Phrase, ...] = (
    # sentence punctuation after a word ("70B inference?", "lora, please")
    Phrase(r"[?!,;]+(?=\s|$)|(?<=[a-z])\.(?=\s|$)", lambda m, _k: ""),
    *EN_MODEL_ROWS,
    # budgets: "budget 300 thousand", "budget of $20k", "150k budget", "under $20k"
    _budget(r"\bbudget\s*(?:of|is|to|at|around|about|under|below|up to|max(?:imum)?|~|:)?\s*" + MONEY,
            "budget 300k"),
    _budget(MONEY + r"\s*budget\b", "300k budget"),
    _budget(r"\b(?:under|below|up to|at most|max|within|no more than)\s+" + MONEY, "under $20k",
            needs_mark=True),
    _budget(r"(?<![a-z0-9])" + MONEY, "$200k", needs_mark=True),
    # traffic: "10k requests/day", "2k in, 500 out", "prompt 2k", "answers of 500 tokens"
    keyed(r"\b" + N + r"\s*(?:requests?|reqs?|calls|queries|conversations|chats)\s*(?:/|per|a|each)\s*day\b",
          "requests", number, "10k requests/day"),
    keyed(r"\b(?:requests?|calls|queries)\s*(?:/|per|a)\s*day" + SAY + N, "requests", number,
          "requests per day 10k"),
    Phrase((r"\b(?P<n>\d+(?:\.\d+)?)\s*(?P<u>k)?\s*(?:tokens?\s+)?in\s*(?:/|,|and)?\s*(?P<n2>\d+(?:\.\d+)?)\s*"
            r"(?P<u2>k)?\s*(?:tokens?\s+)?out\b"),
           lambda m, _k: (f"prompt={m.group('n')}{m.group('u') or ''} "
                          f"output={m.group('n2')}{m.group('u2') or ''}"), "2k in, 500 out"),
    # "500 input 200 output tokens", "2k prompt / 500 completion"
    Phrase((r"\b(?P<n>\d+(?:\.\d+)?)\s*(?P<u>k)?\s*(?:input|prompt)(?:\s+tokens?)?\s*(?:,|/|\+|and)?\s*"
            r"(?P<n2>\d+(?:\.\d+)?)\s*(?P<u2>k)?\s*(?:output|answer|completion)(?:\s+tokens?)?\b"),
           lambda m, _k: (f"prompt={m.group('n')}{m.group('u') or ''} "
                          f"output={m.group('n2')}{m.group('u2') or ''}"), "500 input 200 output tokens"),
    keyed(r"\b(?:prompts?|inputs?)(?:\s+(?:length|tokens?))?" + SAY + N + r"(?:\s*tokens?)?", "prompt",
          number, "prompt 2k"),
    keyed(r"\b(?:outputs?|answers?|completions?|responses?)(?:\s+(?:length|tokens?))?" + SAY + N
          + r"(?:\s*tokens?)?", "output", number, "output 500"),
    keyed(r"\b" + N + r"\s*(?:prompt|input)\s*tokens?\b", "prompt", number, "2k input tokens"),
    keyed(r"\b" + N + r"\s*(?:output|answer|completion)\s*tokens?\b", "output", number, "500 output tokens"),
    # first token: "first token under 1.5 s", "ttft 2s"
    Phrase((r"\b(?:first[- ]token|ttft|time to first token)(?:\s+(?:time|latency))?\s*(?:under|below|within|"
            r"in|of|at most|<=?|:)?\s*(?P<n>\d+(?:\.\d+)?)\s*(?P<t>ms|milliseconds?|s|secs?|seconds?)\b"),
           lambda m, _k: f"ttft={m.group('n')}{'ms' if m.group('t').startswith('m') else ''}",
           "first token under 1.5 s"),
    Phrase((r"\b(?P<n>\d+(?:\.\d+)?)\s*(?P<t>ms|milliseconds?|s|secs?|seconds?)\s*(?:to\s+first\s+token|"
            r"ttft|first[- ]token(?:\s+(?:time|latency))?)\b"),
           lambda m, _k: f"ttft={m.group('n')}{'ms' if m.group('t').startswith('m') else ''}",
           "500ms TTFT"),
    # a deadline: "in 3 weeks", "within 10 days", "in a month"
    Phrase((r"\b(?:in|within|under|inside|deadline(?:\s+of)?|by)\s+(?:the\s+next\s+)?(?P<n>\d+(?:\.\d+)?|"
            + numbers.EN_NUMBER_WORD + r"|a|one)\s*(?P<unit>hours?|days?|weeks?|months?)\b"),
           lambda m, _k: _deadline(m), "in 3 weeks"),
    # a horizon: "over 2 years", "across 36 months" (depreciation and the cost comparison)
    keyed(r"\b(?:over|across)\s+(?P<n>\d+(?:\.\d+)?|" + numbers.EN_NUMBER_WORD + r"|a|one)\s*"
          r"(?P<unit>years?|months?)\b(?!\s*(?:old|ago))",
          "months", lambda m: _horizon(m), "over 2 years"),
    # "max_len 4096", "max length 8k": the sequence (context= becomes seq= on a training run)
    keyed(r"\b(?:max[_ ]?(?:len|length|seq[_ ]?len)|cutoff[_ ]?len|max[_ ]model[_ ]len)" + SAY + N, "context",
          number, "max_len 4096"),
    # one card with a one-digit name: "1 L4", "2 T4s"
    Phrase((r"\b(?P<n>\d{1,3}|" + numbers.EN_NUMBER_WORD + r")\s*[x×]?\s*(?P<short>[a-z]\d)s?\b"),
           lambda m, _k: (f"gpus={_count(m)} gpu={card_name(m.group('short'))}"
                          if _count(m) and card_name(m.group("short")) else None), "2 L4s"),
    # a bare length of time is the deadline too, as 14天 is ("pretrain 7B, 100B tokens, 30 days"),
    # but not a rate ("8 hours a day", "5 days a week") or a horizon ("36 months")
    Phrase((r"(?<![\w./-])(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>days?|weeks?)\b"
            r"(?!\s*(?:a|per|each|every|of)\b)"),
           lambda m, _k: _deadline(m), "30 days"),
    # lengths: "8k context", "context of 32k", "sequence length 8k"
    # "32 context 32k": the number after the word is its own (a format's width is not)
    keyed(r"\b" + N + r"\s*(?:context|ctx|tokens? of context)\b(?!" + SAY + r"\d+(?:\.\d+)?\s*[km]?\b"
          + NOT_BITS + NOT_COUNTED + ")", "context", number, "32k context"),
    keyed(r"\b(?:context|ctx)(?:\s*(?:length|window|len))?" + SAY + N + NOT_BITS + NOT_COUNTED, "context",
          number, "context 32k"),
    # "32 concurrent at 8k": a length in thousands after "at" is the context (money was read above)
    keyed(r"\bat\s+(?P<n>\d{1,3})\s*(?P<u>k)\b(?!\s*(?:budget|usd|cny|rmb|yuan|dollars?|requests?|users?|"
          r"qps|rps|a\s+day|/day|per))", "context", number, "32 users at 8k"),
    keyed(r"\b(?:seq|sequence length|sequence len|seq len|sequence)" + SAY + N, "seq", number,
          "sequence length 8k"),
    keyed(r"\b" + N + r"\s*(?:sequence length|sequences?|seq len|seqs?)\b", "seq", number, "8k sequences"),
    keyed(r"\b(?:batch size|micro[- ]?batch(?: size)?|batch|bs|mbs)" + SAY + r"(?P<n>\d+)\b", "batch",
          number, "batch size 4"),
    # users: "20 users", "100 concurrent users", "concurrency 100"
    keyed(r"\b" + N + r"\s*(?:concurrent|simultaneous|parallel)\s*(?:users|streams|sessions|requests|"
          r"connections)?\b", "users", number, "100 concurrent users"),
    # a head count, not users at once (engine/rates.py reads it as traffic): "200 developers",
    # "a team of 30", "a 50-person company", "100 seats"
    keyed(r"\b" + N + r"\s*(?:employees|staff|staffers|engineers|developers|devs|programmers|"
          r"researchers|analysts|agents|seats|licen[cs]es|team\s+members|colleagues|students|"
          r"teachers|doctors|lawyers)\b", "people", number, "200 developers"),
    keyed(r"\b(?:team|company|org|organi[sz]ation|department|group|staff)\s+of\s+" + N
          + r"(?:\s*(?:people|persons|users|employees|engineers|developers|devs|researchers))?\b",
          "people", number, "a team of 30"),
    keyed(r"\b" + N + r"[- ]?(?:person|people|man|member|seat|engineer|developer)\s+"
          r"(?:team|company|org|startup|department|group|lab)\b", "people", number, "a 50-person team"),
    keyed(r"\b" + N + r"\s*(?:users|streams|sessions|people|persons)\b", "users", number, "20 users"),
    keyed(r"\b(?:users|concurrency|concurrent users)" + SAY + N, "users", number, "concurrency 100"),
    # servers and cards: "two 8-gpu servers", "2 nodes of 8 h800", "8x h100", "8 gpus"
    # "2 A800 servers (16 GPUs)": the total said wins; else 8 cards a server
    Phrase((r"\b" + COUNT + r"\s+" + CARD + r"\s+(?:servers?|nodes?|machines?|boxes)\b(?:\s*\(?\s*"
            r"(?P<total>\d{1,5})\s*(?:gpus|cards)\s*\)?)?"),
           lambda m, _k: cards(int(m.group("total")) if m.group("total") else
                               (_count(m, "s") or 1) * SERVER_GPUS, m, known=True),
           "2 A800 servers (16 GPUs)"),
    Phrase((r"\b(?:" + COUNT + r"\s+)?(?P<per>\d+)[- ]?(?:gpu|card)\s+(?:servers?|nodes?|machines?|"
                    r"boxes)\b(?:\s+(?:of|with)\s+" + CARD + r")?"),
           _servers, "two 8-gpu servers"),
    Phrase((r"\b" + COUNT + r"\s+(?:servers?|nodes?|machines?)(?:\s+(?:of|with)\s+(?P<per>\d+)"
                    r"(?:\s*x)?\s*(?:gpus|cards)?)?(?:\s+(?:of\s+)?" + CARD + r")?"),
           _servers, "2 servers of 8 h800"),
    # "2 x 8 A800": servers times cards each
    Phrase((r"\b(?P<s>\d{1,3})\s*[x×*]\s*(?P<n>\d{1,2})(?!\d)(?:\s+|\s*[x×*]\s*)" + CARD),
           lambda m, _k: cards(_count(m) * _count(m, "s"), m, known=True)
           if _count(m) and _count(m, "s") else None, "2 x 8 A800"),
    Phrase((r"\b(?P<n>\d+)\s*[x×*]\s*" + CARD), lambda m, _k: cards(_count(m), m, known=True),
           "8x h100"),
    Phrase((r"\b" + CARD + r"\s*[x×*]\s*(?P<n>\d{1,3})\b"),
           lambda m, _k: cards(_count(m), m, known=True), "RTX 5090 x2"),
    keyed(r"\b" + N + r"\s*(?:x\s*)?(?:gpus?|cards?)\b", "gpus", number, "8 gpus"),
    # one card: "a single L20", "one H100", "with a 5090"
    Phrase((r"\b(?:an?\s+)?(?:single|one)\s+(?:" + CARD + r"|(?P<short>[a-z]\d{1,2}))(?:\s+(?:gpu|card))?\b"),
           lambda m, _k: _one_card(m), "a single L20"),
    Phrase((r"\b(?:with|on|using|have|has|own)\s+an?\s+" + CARD + r"(?:\s+(?:gpu|card))?\b"),
           lambda m, _k: cards(1, m, known=True), "with a 5090"),
    Phrase((r"\b(?P<n>\d{1,3}|" + numbers.EN_NUMBER_WORD + r")\s+" + CARD + r"(?:\s+(?:gpus?|cards?))?\b"),
           lambda m, _k: cards(_count(m), m, known=True), "two 4090s"),
    # deadlines relative to today (engine/deadline.py counts the days)
    words(r"\b(?:(?:by|before|until)\s+)?(?:the\s+)?end\s+of\s+next\s+month\b|\bwithin\s+next\s+month\b",
          "due=next_month_end", "by end of next month"),
    words(r"\b(?:(?:by|before|until)\s+)?(?:the\s+)?end\s+of\s+(?:the\s+|this\s+)?month\b|"
          r"\bby\s+month[- ]end\b", "due=month_end", "by end of month"),
    words(r"\b(?:by|before|until)\s+next\s+month\b|\b(?:launch(?:ing)?|go(?:ing)?\s+live|ship(?:ping)?|"
          r"live|ready)\s+next\s+month\b", "due=next_month", "by next month"),
    words(r"\b(?:(?:by|before|until)\s+)?(?:the\s+)?end\s+of\s+(?:the\s+|this\s+)?year\b|"
          r"\bby\s+year[- ]end\b", "due=year_end", "by end of year"),
    words(r"\b(?:by|before|until|within)\s+next\s+week\b", "due=next_week", "by next week"),
    # host memory (offload to CPU) and card memory without a card's name: "512GB RAM", "24gb",
    # "48GB cards", "a 24 GB GPU"
    keyed(r"\b(?P<n>\d{1,4})\s*(?P<t>[gt])b?\s*(?:of\s+)?(?:system\s+|host\s+|cpu\s+|ddr[45]\s+)?"
          r"(?:ram|memory\s+on\s+the\s+host|host\s+memory|system\s+memory|cpu\s+memory)\b", "host_memory",
          datasize.gigabytes, "512GB RAM"),
    keyed(r"\b(?:ram|host\s+memory|system\s+memory)\s*(?:of|is|:)?\s*(?P<n>\d{1,4})\s*(?P<t>[gt])b?\b",
          "host_memory", datasize.gigabytes, "RAM 512GB"),
    # a data set in samples or bytes (engine/datasize.py turns it into tokens for training):
    # "50k samples", "100k conversations", "a 3GB dataset", "dataset of 3 GB", "3 epochs"
    Phrase((r"\b" + N + r"\s*(?:training\s+|fine[- ]?tuning\s+|sft\s+|chat\s+|instruction\s+)?"
            r"(?:samples|examples|conversations|dialogues|dialogs|instructions|qa\s+pairs|pairs|rows|"
            r"records)\b(?:\s+of\s+(?:training\s+)?data)?"),
           lambda m, _k: datasize.samples_token(m), "50k samples"),
    Phrase((BYTES + r"\s*(?:of\s+)?(?:training\s+|fine[- ]?tuning\s+|sft\s+)?(?:data(?:\s*set)?|text|corpus|"
            r"jsonl)\b"),
           lambda m, _k: datasize.bytes_token(m), "a 3GB dataset"),
    Phrase((r"\b(?:data\s*set|corpus|training\s+data|data)\s*(?:size\s*)?(?:of|is|:|~|=)?\s*" + BYTES),
           lambda m, _k: datasize.bytes_token(m), "dataset of 3 GB"),
    Phrase((r"\b(?P<n>\d{1,3}|" + numbers.EN_NUMBER_WORD + r")\s*epochs?\b|\bepochs?\s*(?:of|:|=)?\s*"
            r"(?P<n2>\d{1,3})\b"),
           lambda m, _k: datasize.epochs_token(m), "3 epochs"),
    keyed(r"\b" + N + r"\s*tokens?\s+of\s+(?:training\s+|fine[- ]?tuning\s+)?(?:data|text|corpus)\b",
          "tokens",
          number, "2B tokens of data"),
    # card memory without a card's name (after the data set's bytes)
    # "two 48GB cards": a count of cards of that memory
    Phrase((r"\b(?P<c>\d{1,3}|" + numbers.EN_NUMBER_WORD + r")\s+(?P<n>\d{1,3})\s*(?P<t>g)b?\s+"
            r"(?:cards|gpus)\b"),
           lambda m, _k: (f"gpus={_count(m, 'c')} card_memory={datasize.gigabytes(m)}"
                          if _count(m, "c") and datasize.gigabytes(m) else None), "two 48GB cards"),
    keyed(r"\b(?P<n>\d{1,3})\s*(?P<t>g)b?\b(?:\s*(?:of\s+)?(?:vram|gpu\s+memory|video\s+memory))?"
          r"(?:\s+(?:cards?|gpus?))?(?!\s*(?:of\s+)?(?:ram|system|host|cpu|ddr))", "card_memory",
          datasize.gigabytes, "48GB cards"),
    keyed(r"\b(?:vram|gpu\s+memory)\s*(?:of|is|:)?\s*(?P<n>\d{1,3})\s*(?P<t>g)b?\b", "card_memory",
          datasize.gigabytes, "VRAM 24GB"),
    # training tokens, LoRA rank, hours
    keyed(r"\b" + N + r"\s*tokens?\b(?!\s*(?:/|per\b|a\s+(?:day|second|sec|minute|min|hour|month)\b))",
          "tokens", number, "1T tokens"),
    keyed(r"\brank" + SAY + r"(?P<n>\d+)\b", "rank", number, "rank 32"),
    keyed(r"\b(?P<n>\d+)\s*h(?:ours)?\s*(?:a|per)\s*day\b", "hours", _hours_a_day, "8 hours a day"),
    words(r"\b24\s*/\s*7\b|\baround the clock\b", "hours=730", "24/7"),
    keyed(r"\b(?P<n>\d+)\s*h(?:ours)?\s*(?:a|per)\s*month\b", "hours", number, "300 hours a month"),
    keyed(r"\bhours" + SAY + r"(?P<n>\d+)\b", "hours", number, "hours 300"),
    # formats and recipes: "8-bit adam", "fp8 kv cache", "4-bit", "zero-3", "cpu offload"
    words(r"\b8[- ]?bit\s+adamw?\b|\badamw?\s+8[- ]?bit\b", "optimizer=adamw-8bit", "8-bit adam"),
    words(r"\bfp8\s+kv(?:[- ]cache)?\b|\bkv(?:[- ]cache)?\s+(?:in\s+)?fp8\b", "kv=fp8", "fp8 kv cache"),
    Phrase((r"\b(?P<b>[248])[- ]?bits?\b"), lambda m, _k: f"{m.group('b')}bit", "4-bit"),
    keyed(r"\bzero[- ]?(?:stage[- ]?)?(?P<n>[0-3])\b", "zero", lambda m: m.group("n"), "zero-3"),
    words(r"\b(?:cpu[- ]offload(?:ing)?|offload(?:ing)?\s+(?:the\s+)?optimizer(?:\s+states)?"
          r"(?:\s+to\s+cpu)?|offload(?:ing)?\s+to\s+cpu)\b", "offload=optimizer", "cpu offload"),
    words(r"\bno\s+(?:gradient\s+|activation\s+)?checkpointing\b", "checkpointing=none", "no checkpointing"),
    words(r"\b(?:gradient|activation)\s+checkpointing\b", "checkpointing=full", "gradient checkpointing"),
    words(r"\bvllm\b", "engine=vllm", "vllm"),
    # training frameworks, named in one place (engine/frameworks.py)
    *(words(regex, f"framework={name}", example) for regex, name, example in FRAMEWORK_WORDS),
    words(r"\b(?:llama\.cpp|llamacpp|ollama)\b", "engine=llama.cpp", "llama.cpp"),
    # rank, currency, rent or buy (mode=)
    words(r"\b(?:fastest|quickest|as fast as possible)\b", "goal=time", "fastest"),
    words(r"\b(?:cheapest|lowest cost|as cheap as possible)\b", "goal=cost", "cheapest"),
    Phrase((r"\bin\s+(?P<c>usd|cny|rmb|dollars|yuan)\b"),
           lambda m, _k: f"currency={CURRENCIES[m.group('c').lower()].upper()}", "in usd"),
    words(r"\b(?:rent\s+(?:or|vs\.?|versus)\s+buy|buy\s+(?:or|vs\.?|versus)\s+rent)\b", ""),
    # self-hosting against an API: the answer's API comparison, not a purchase
    words(r"\bself[- ]?host(?:ed|ing)?\s+(?:or|vs\.?|versus)\s+(?:using\s+|calling\s+|paying\s+for\s+)?"
          r"(?:an?\s+|the\s+)?apis?\b|"
          r"\bapis?\s+(?:or|vs\.?|versus)\s+self[- ]?host(?:ed|ing)?\b", "inference", "self-host or API"),
    # where the cards are bought or rented (market=)
    words(r"\b(?:in|inside|within)\s+(?:mainland\s+)?(?:china|the\s+prc)\b", "market=china", "in China"),
    words(r"\b(?:in\s+the\s+(?:us|usa|states|eu|west)|in\s+(?:the\s+)?(?:us|usa|europe|america)|"
          r"overseas|abroad|outside\s+(?:of\s+)?china)\b", "market=global", "in the US"),
    words(r"\bfrom\s+scratch\b", "pretrain", "pretrain from scratch"),
    # self-hosting said apart from the API it is weighed against: serving, compared with APIs
    words(r"\bself[- ]?host(?:ed|ing)?\b", "inference", "self-host"),
    words(r"\b(?:using\s+|calling\s+|via\s+)?(?:an?\s+|the\s+)?(?:hosted\s+)?apis?\b", "", "an API"),
    words(r"\bhow\s+long(?:\s+(?:will|would|does)\s+it\s+take)?\b", "", "how long"),
    # the question itself (read from the prose as fewest / capacity): nothing to skip
    words(r"\b(?:at\s+(?:the\s+)?minimum|minimum)\b|\bhow\s+many\s+(?:concurrent\s+)?(?:users|people)\b|"
          r"\bmax(?:imum)?\s+(?:concurrency|concurrent\s+users|users)\b",
          "", "at minimum"),
    words(r"\b(?:rent(?:ing|ed)?|rental|lease|leasing)\b", "mode=rent", "rent"),
    words(r"\b(?:buy(?:ing)?|purchas(?:e|ing)|on[- ]prem(?:ises)?)\b", "mode=buy", "buy"),
)


# words that carry nothing for the grammar in a command ("70B inference on two 8-gpu servers"),
# whole words only (not the a of not-a-model);
# the last row, after every phrase that uses them
FILLER = Phrase((r"(?<![\w-])(?:how\s+(?:much|many)\s+(?:gpu\s+)?(?:memory|vram|gpus|cards|servers)|"
                 r"(?:gpu\s+)?memory|vram|with|on|and|a|an|the|for|using|use|please|we|i|need|want|of|"
                 r"at|in|to|what|do|does|is|it|about|maybe|run|running)(?![\w-])\??"), lambda m, _k: "")


def rewrite(rw: Rewrite) -> Rewrite:
    """Run the English table over a text being rewritten."""
    return rw.run((*EN_PHRASES, BARE_LENGTH, FILLER))
