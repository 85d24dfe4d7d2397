"""The key table: every `key=value` the grammar reads, the converter that checks its value, the
words for each key (aliases), model names and sizes, and the Request a read Draft becomes.

Every failure is a ParseError whose one-line message names the bad token, the accepted values and,
where one is close, a suggestion. engine/reader.py reads sentences into these keys, and
engine/parse.py is the grammar's front door (parse, parse_fields, read_reply).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from engine import catalog
from engine.errors import UserError
from engine.family import SIZE_RE
from engine.frameworks import FRAMEWORK_ALIASES, FRAMEWORK_NAMES, FRAMEWORKS
from engine.i18n import N_, _
from engine.methods import METHOD_NAMES, METHOD_WORDS, METHODS, SERVING_QUANTS, method
from engine.phrases import has_cjk, rewritten
from engine.quant import canonical_quant
from engine.request import LARGEST_MODEL, LARGEST_WORDS, Draft, Money, Request


class ParseError(UserError, ValueError):
    """A user-facing input error: `str(err)` is one line, safe to show as is."""

    def __init__(self, message: str, *, token: str = "", accepted: tuple[str, ...] = (),
                 suggestion: str | None = None) -> None:
        self.message = message
        self.token = token
        self.accepted = accepted
        self.suggestion = suggestion
        line = message
        if suggestion:
            line += _(" Did you mean {suggestion}?").format(suggestion=suggestion)
        super().__init__(line)


def _short(token: str, limit: int = 40) -> str:
    """A token as an error message quotes it: one line, printable, at most `limit` chars."""
    token = "".join(c if c.isprintable() else "?" for c in token)
    return token if len(token) <= limit else token[: limit - 1] + "…"


def _suggest(word: str, choices: tuple[str, ...] | list[str]) -> str | None:
    hits = catalog.closest(word, list(choices), n=1)
    return hits[0] if hits else None


# -- values -----------------------------------------------------------------------------

_NUMBER = r"(\d+(?:\.\d+)?)"


def _count(key: str, value: str, *, kilo: int, example: str) -> int:
    """A positive whole count with an optional k/m suffix (8k, 1.5m)."""
    m = re.fullmatch(_NUMBER + r"([km]?)", value)
    if not m:
        raise ParseError(_("{key}={value} is not a count: use a whole number like {example}.").format(
            key=key, value=_short(value), example=example), token=f"{key}={value}")
    scale = {"": 1, "k": kilo, "m": kilo * kilo}[m.group(2)]
    number = float(m.group(1)) * scale
    if not math.isfinite(number) or number != int(number) or number < 1:
        raise ParseError(_("{key}={value} must be a whole number of at least 1, like {example}.").format(
            key=key, value=_short(value), example=example), token=f"{key}={value}")
    return int(number)


def _tokens_count(key: str, value: str) -> int:
    # Sequence and context lengths: 8k = 8192, as model cards write them.
    return _count(key, value, kilo=1024, example=_("{key}=2048 or {key}=8k").format(key=key))


def _plain_count(key: str, value: str) -> int:
    return _count(key, value, kilo=1000, example=f"{key}=8")


def _training_tokens(key: str, value: str) -> int:
    m = re.fullmatch(_NUMBER + r"([kmbt]?)", value)
    if not m:
        raise ParseError(_("tokens={value} is not a token count: write it like tokens=2T or "
                           "tokens=300B.").format(value=_short(value)), token=f"tokens={value}")
    scale = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}[m.group(2)]
    number = float(m.group(1)) * scale
    if not math.isfinite(number):
        raise ParseError(_("tokens={value} is not a token count: write it like tokens=2T or "
                           "tokens=300B.").format(value=_short(value)), token=f"tokens={value}")
    number = int(number)
    if number < 1:
        raise ParseError(_("tokens= must be at least 1."), token=f"tokens={value}")
    return number


def _choice(key: str, value: str, choices: tuple[str, ...], aliases: dict[str, str] | None = None) -> str:
    value = (aliases or {}).get(value, value)
    if value in choices:
        return value
    raise ParseError(_("{key}={value} is not one of {choices}.").format(
                         key=key, value=_short(value), choices=", ".join(choices)),
                     token=f"{key}={value}", accepted=choices,
                     suggestion=(f"{key}={s}" if (s := _suggest(value, choices)) else None))


def _fraction(key: str, value: str) -> float:
    m = re.fullmatch(_NUMBER + r"(%?)", value)
    if not m:
        raise ParseError(_("{key}={value} is not a fraction: use {key}=0.2 or {key}=20%.").format(
            key=key, value=_short(value)), token=f"{key}={value}")
    number = float(m.group(1)) / (100 if m.group(2) else 1)
    if not 0 <= number <= 1:
        raise ParseError(_("{key}={value} must be between 0 and 1 (0% to 100%).").format(
            key=key, value=_short(value)), token=f"{key}={value}")
    return number


IMPLAUSIBLE_BUDGET = 1000  # a bare amount under this is asked about, not taken
CURRENCY_WORDS = {"cny": "CNY", "rmb": "CNY", "yuan": "CNY", "¥": "CNY", "￥": "CNY",
                  "usd": "USD", "$": "USD", "us$": "USD"}


def parse_money(key: str, value: str) -> Money:
    """`150k`, `1.2M`, `$20k`, `¥150k`, `150kCNY`, `20k usd` (one token)."""
    return Money(**_money(key, value))


def _money(key: str, value: str) -> dict[str, Any]:
    """An amount as a Draft holds it: {"amount": 150000.0, "currency": "CNY" or None}."""
    m = re.fullmatch(r"(\$|us\$|¥|￥)?" + _NUMBER + r"([kmwb]?)(cny|rmb|yuan|usd)?", value)
    if not m:
        raise ParseError(_("{key}={value} is not an amount: write it like {key}=150k, "
                           "{key}=1.2M or {key}=$20k.").format(key=key, value=_short(value)),
                         token=f"{key}={value}")
    symbol, number, scale, word = m.groups()
    if symbol and word and CURRENCY_WORDS[symbol] != CURRENCY_WORDS[word]:
        raise ParseError(_("{key}={value} names two currencies.").format(key=key, value=value),
                         token=f"{key}={value}")
    amount = float(number) * {"": 1, "k": 1e3, "w": 1e4, "m": 1e6, "b": 1e9}[scale]
    if not math.isfinite(amount):
        raise ParseError(_("{key}={value} is not an amount: write it like {key}=150k, "
                           "{key}=1.2M or {key}=$20k.").format(key=key, value=_short(value)),
                         token=f"{key}={value}")
    if amount <= 0:
        raise ParseError(_("{key}= must be more than zero.").format(key=key), token=f"{key}={value}")
    return {"amount": amount, "currency": CURRENCY_WORDS.get(symbol or word or "")}


def _budget(key: str, value: str) -> dict[str, Any]:
    """A budget; a bare number under IMPLAUSIBLE_BUDGET is asked about, not taken: "budget 300"
    is rarely 300 yuan, a thousand left out more often than not (300cny says it is meant)."""
    money = _money(key, value)
    if money["amount"] < IMPLAUSIBLE_BUDGET and re.fullmatch(_NUMBER, value):
        raise ParseError(_("I read {key} {value}, with no unit: too little for any server (write "
                           "{value}cny or {value}usd if you mean it).").format(key=key, value=value),
                         token=f"{key}={value}", suggestion=f"{value}k")
    return money


def _gpu(key: str, value: str) -> str:
    spec = catalog.find_gpu(value)
    if spec is None:
        names = tuple(catalog.gpus())
        hits = catalog.closest_gpus(value, n=1)
        raise ParseError(_("unknown GPU {key}={value}; known cards: {cards}.").format(
                             key=key, value=_short(value), cards=", ".join(names)),
                         token=f"{key}={value}", accepted=names,
                         suggestion=f"{key}={hits[0]}" if hits else None)
    return spec.name


def _zero(key: str, value: str) -> int:
    value = {"fsdp": "3", "full_shard": "3", "full-shard": "3", "ddp": "0"}.get(value, value)
    if value in ("0", "1", "2", "3"):
        return int(value)
    raise ParseError(_("zero={value} is not a ZeRO stage: use 0, 1, 2 or 3 (FSDP full shard = 3).").format(
                         value=_short(value)),
                     token=f"zero={value}", accepted=("0", "1", "2", "3"))


def _quant(key: str, value: str) -> str:
    # one alias table for every format (engine/quant.py); requests take the user-facing ones
    typed, canonical = value.replace("-", "_"), canonical_quant(value)
    return _choice(key, typed, SERVING_QUANTS,
                   {typed: canonical} if canonical in SERVING_QUANTS else {})


def _positive(key: str, value: str) -> float:
    if re.fullmatch(_NUMBER, value) and float(value) > 0:
        return float(value)
    raise ParseError(_("{key}={value} must be a positive number, like {key}=0.9.").format(
        key=key, value=_short(value)), token=f"{key}={value}")


def _flag(key: str, value: str) -> bool:
    if value in ("true", "yes", "on", "1"):
        return True
    if value in ("false", "no", "off", "0"):
        return False
    raise ParseError(_("{key}={value} is not true or false.").format(key=key, value=_short(value)),
                     token=f"{key}={value}",
                     accepted=("true", "false"))


def _region(key: str, value: str) -> str:
    if re.fullmatch(r"[a-z][a-z0-9-]{0,39}", value):
        return value
    raise ParseError(_("region={value} is not a region name: use letters, like region=chengdu.").format(
        value=_short(value)), token=f"region={value}")


def _seconds(key: str, value: str) -> float:
    """`2`, `2s`, `500ms`."""
    m = re.fullmatch(_NUMBER + r"(ms|s)?", value)
    if not m or float(m.group(1)) <= 0:
        raise ParseError(_("{key}={value} is not a time: write it like {key}=2 or {key}=500ms.")
                         .format(key=key, value=_short(value)), token=f"{key}={value}")
    return float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)


def _hours(key: str, value: str) -> float:
    m = re.fullmatch(_NUMBER, value)
    if not m or not 0 < float(value) <= 744:
        raise ParseError(_("hours={value} must be GPU hours per month between 1 and 744.").format(
            value=_short(value)), token=f"hours={value}")
    return float(value)


Converter = Callable[[str, str], Any]
KEYS: dict[str, tuple[str, Converter, str]] = {
    # canonical key: (field, converter, accepted values for help)
    "gpu": ("gpu", _gpu, N_("a card, e.g. 4090, a100-80gb, h800")),
    "gpus": ("gpus", _plain_count, N_("GPU count, e.g. 8")),
    "seq": ("seq", _tokens_count, N_("training sequence length, e.g. 2048 or 8k")),
    "batch": ("batch", _plain_count, N_("micro-batch per GPU, e.g. 4")),
    "precision": ("precision", lambda k, v: _choice(k, v, ("bf16", "fp16", "fp32", "fp8"),
                                                   {"bfloat16": "bf16", "float16": "fp16",
                                                    "float32": "fp32"}), "bf16|fp16|fp32|fp8"),
    "optimizer": ("optimizer", lambda k, v: _choice(
        k, v.replace("_", "-"), ("adamw", "adamw-bf16", "adamw-8bit", "paged-adamw-8bit", "sgd"),
        {"adam": "adamw", "adamw8bit": "adamw-8bit", "adam8bit": "adamw-8bit",
         "paged-adamw8bit": "paged-adamw-8bit", "pagedadamw8bit": "paged-adamw-8bit"}),
        "adamw|adamw-bf16|adamw-8bit|paged-adamw-8bit|sgd"),
    "checkpointing": ("checkpointing", lambda k, v: _choice(
        k, v, ("none", "selective", "full", "attention"),
        {"off": "none", "no": "none", "false": "none", "on": "full", "yes": "full", "true": "full",
         "core_attn": "attention", "core-attn": "attention", "megatron-selective": "attention"}),
        "none|selective|full|attention"),
    "zero": ("zero", _zero, "0|1|2|3"),
    "offload": ("offload", lambda k, v: _choice(k, v, ("none", "optimizer", "all", "activations"),
                                                {"cpu": "optimizer", "off": "none", "no": "none",
                                                 "acts": "activations"}),
                "none|optimizer|all|activations"),
    "tp": ("tp", _plain_count, N_("tensor-parallel size, e.g. 2")),
    "ep": ("ep", _plain_count, N_("expert-parallel size for MoE, e.g. 8")),
    "cp": ("cp", _plain_count, N_("context-parallel size for long-sequence training, e.g. 2 "
                                  "(1: none)")),
    "pp": ("pp", _plain_count, N_("pipeline-parallel stages for training, e.g. 4 (1: none)")),
    "rank": ("rank", _plain_count, N_("LoRA rank, e.g. 16")),
    "targets": ("targets", lambda k, v: _choice(k, v, ("attn", "all"),
                                                {"attention": "attn", "all-linear": "all",
                                                 "linear": "all"}), "attn|all"),
    "quant": ("quant", _quant, " ".join(SERVING_QUANTS)),
    "context": ("context", _tokens_count, N_("tokens per sequence when serving, e.g. 8k")),
    "users": ("users", _plain_count, N_("concurrent sequences, e.g. 20")),
    "prompt": ("prompt", _tokens_count, N_("prompt tokens per request when serving, e.g. 2k")),
    "output": ("output", _tokens_count, N_("answer tokens per request when serving, e.g. 32k")),
    "kv": ("kv", lambda k, v: _choice(k, v, ("fp16", "fp8"), {"bf16": "fp16", "f16": "fp16"}),
           "fp16|fp8"),
    "tokens": ("tokens", _training_tokens, N_("training tokens, e.g. 2T or 300B")),
    "headroom": ("headroom", _fraction, N_("fraction kept free, e.g. 0.2")),
    "loss": ("loss", lambda k, v: _choice(k, v, ("full", "chunked", "fused")),
             "full|chunked|fused"),
    "fused_step": ("fused_step", lambda k, v: _flag(k, v), "true|false"),
    "compile": ("compile", lambda k, v: _flag(k, v), "true|false"),
    "packing": ("packing", lambda k, v: _flag(k, v),
                N_("true|false: every batch of one length (packed or fixed-length sequences), "
                   "or SFT samples of varying length (Hugging Face trainers' default)")),
    "engine": ("engine", lambda k, v: _choice(k, v, ("vllm", "transformers", "llama.cpp"),
                                              {"hf": "transformers", "llamacpp": "llama.cpp",
                                               "ollama": "llama.cpp"}),
               "vllm|transformers|llama.cpp"),
    "build": ("build", lambda k, v: _choice(k, v, ("mmq", "cublas"),
                                            {"current": "mmq", "latest": "mmq", "new": "mmq",
                                             "legacy": "cublas", "old": "cublas",
                                             "force_cublas": "cublas"}),
              N_("mmq|cublas: llama.cpp builds since June 2024 (the default) or older ones")),
    "framework": ("framework", lambda k, v: _choice(k, v.replace("_", "-"), FRAMEWORK_NAMES,
                                                     FRAMEWORK_ALIASES), "|".join(FRAMEWORK_NAMES)),
    "budget": ("budget", _budget, N_("e.g. 150k, 1.2M, $20k")),
    "currency": ("currency", lambda k, v: _choice(k, v.upper(), ("CNY", "USD"), {"RMB": "CNY"}),
                 "CNY|USD"),
    "region": ("region", _region, N_("e.g. chengdu, jiangsu")),
    "hours": ("hours", _hours, N_("GPU hours per month, e.g. 300")),
    "months": ("months", _plain_count, N_("months to depreciate a purchase over, e.g. 36")),
    "power_price": ("power_price", lambda k, v: _positive(k, v), N_("per kWh in the answer's currency")),
    "goal": ("goal", lambda k, v: _choice(k, v, ("cost", "time")), "cost|time"),
    "market": ("market", lambda k, v: _choice(k, v, ("china", "global"),
                                              {"cn": "china", "prc": "china", "mainland": "china",
                                               "intl": "global", "international": "global",
                                               "us": "global", "world": "global"}),
               "china|global"),
    "mode": ("mode", lambda k, v: _choice(k, v, ("buy", "rent"),
                                          {"purchase": "buy", "own": "buy", "cloud": "rent",
                                           "lease": "rent"}), "buy|rent"),
    "owned": ("owned", lambda k, v: _flag(k, v),
              N_("true: the team already has gpu= (gpus=), priced at running cost only")),
    "min_speed": ("min_speed", lambda k, v: _positive(k, v.removesuffix("tok/s")),
                  N_("tokens/s each user must get when serving, e.g. 20")),
    "ttft": ("ttft", lambda k, v: _seconds(k, v), N_("seconds to the first token, e.g. 2")),
    "replicas": ("replicas", _plain_count, N_("independent copies of the model, e.g. 2")),
    "gpu_util": ("gpu_util", _fraction, N_("share of the card vLLM may use (its "
                                           "gpu_memory_utilization), e.g. 0.95")),
    "card_memory": ("card_memory", lambda k, v: _positive(k, v.lower().removesuffix("gb").removesuffix("g")),
                    N_("memory of each card in GB, no card named: cards of that memory, e.g. 24")),
    "host_memory": ("host_memory", lambda k, v: _positive(k, v.lower().removesuffix("gb").removesuffix("g")),
                    N_("host RAM per server in GB, for CPU offload, e.g. 512")),
    "days": ("days", lambda k, v: _positive(k, v.removesuffix("d")),
             N_("days a tokens= training run may take, e.g. 14")),
    "requests": ("requests", _plain_count, N_("requests per day when serving, e.g. 10k")),
    "peak": ("peak", lambda k, v: _positive(k, v.removesuffix("x")),
             N_("busiest hour's traffic over the day's average, e.g. 3")),
}
KEY_ALIASES = {
    "have": "owned", "own": "owned", "have_cards": "owned", "owned_cards": "owned",
    "card": "gpu", "cards": "gpus", "count": "gpus", "n": "gpus", "ngpus": "gpus",
    "seqlen": "seq", "seq_len": "seq", "max_seq_len": "seq", "sequence": "seq",
    "bs": "batch", "micro_batch": "batch", "microbatch": "batch", "mbs": "batch",
    "dtype": "precision", "optim": "optimizer", "opt": "optimizer",
    "ckpt": "checkpointing", "gc": "checkpointing", "recompute": "checkpointing",
    "activation_checkpointing": "checkpointing", "fsdp": "zero", "r": "rank", "lora_rank": "rank",
    "target": "targets", "quantization": "quant", "q": "quant", "weights": "quant",
    "ctx": "context", "context_length": "context", "concurrency": "users",
    "concurrent": "users", "streams": "users", "kv_cache": "kv", "kv_dtype": "kv",
    "tensor_parallel": "tp", "pipeline_parallel": "pp", "power": "power_price", "electricity": "power_price",
    "sort": "goal", "rank_by": "goal", "horizon": "months",
    "speed": "min_speed", "min_tps": "min_speed", "tps": "min_speed", "deadline": "days",
    "replica": "replicas", "first_token": "ttft", "time_to_first_token": "ttft",
    "gpu_memory_utilization": "gpu_util", "mem_util": "gpu_util",
    "optimizer_in_bwd": "fused_step", "fused": "fused_step",
    "torch_compile": "compile", "packed": "packing", "sample_packing": "packing", "backend": "engine",
    "trainer": "framework", "training_framework": "framework", "fw": "framework",
    # the names training and serving configs give them (LLaMA-Factory, HF Trainer, vLLM)
    "cutoff_len": "seq", "max_length": "seq", "per_device_train_batch_size": "batch",
    "lora_r": "rank", "max_model_len": "context", "max_num_seqs": "users",
    "input": "prompt", "input_len": "prompt", "prompt_len": "prompt", "answer": "output",
    "output_len": "output", "max_tokens": "output", "max_new_tokens": "output",
    # serving traffic
    "requests_per_day": "requests", "rpd": "requests", "daily_requests": "requests",
    "input_tokens": "prompt", "prompt_tokens": "prompt", "in": "prompt",
    "output_tokens": "output", "answer_tokens": "output", "completion_tokens": "output",
    "out": "output", "peak_factor": "peak",
}


def _parse_model(token: str) -> str:
    """Validate MODEL syntax: a size, a catalog entry, or a Hub repo id (resolved later)."""
    low = token.lower()
    if low.startswith("-") or low.startswith("+"):
        raise ParseError(_("model size {token} must be a positive number of parameters, "
                           "like 7B, 0.5B or 8x7B.").format(token=_short(token)), token=token,
                         suggestion=low.lstrip("+-").upper() if SIZE_RE.match(low.lstrip("+-")) else None)
    if low in LARGEST_WORDS:
        return LARGEST_MODEL  # the largest model the box gpu= gpus= runs (engine/capacity.py)
    m = SIZE_RE.match(low)
    if m:
        experts, size, unit = m.groups()
        billions = float(size) / (1000 if unit == "m" else 1)
        if not 0.01 <= billions <= 10_000:
            raise ParseError(_("model size {token} is outside 10M to 10,000B parameters.").format(
                token=token), token=token)
        if experts is not None and not 2 <= int(experts) <= 512:
            raise ParseError(_("{token}: an MoE needs 2 to 512 experts.").format(token=token),
                             token=token)
        return low.upper()
    if catalog.find_model(token) is not None:
        return catalog.find_model(token).name  # type: ignore[union-attr]
    if re.fullmatch(r"[A-Za-z0-9][\w.\-]{0,95}/[\w.\-]{1,96}", token):
        return token  # a Hugging Face repo id outside the catalog: resolved online
    near = re.fullmatch(r"(\d+(?:\.\d+)?)[a-z]+", low)
    suggestion = f"{near.group(1)}B" if near else (catalog.closest_models(token, n=1) or [None])[0]
    raise ParseError(
        _("unknown model {token}: give a size like 13B or 8x7B, a catalog name such as "
          "llama-3.1-8b, or a Hugging Face repo id.").format(token=_short(token)),
        token=token, suggestion=suggestion)


def _grammar_word(word: str) -> bool:
    """A word the grammar reads as it stands: key=value, a method, size, format, model or card."""
    if has_cjk(word) or not word.isascii():
        return rewritten(word)
    low = word.lower()
    key, sep, _value = low.partition("=")
    return bool((sep and key.replace("_", "").isalnum()) or low in METHOD_WORDS or low in MODES
                or low in SERVING_QUANTS or low in BITS or SIZE_RE.match(low)
                or catalog.find_model(word) is not None or _bare_card(word))


MODES = ("buy", "rent")  # the words for mode=: only buying, or only renting
# "4bit", "8bit": the method's own format of that width (NF4 for QLoRA, int4 for serving)
BITS = {"2bit": 2, "4bit": 4, "8bit": 8}
FORMATS_BY_BITS = {2: ("q2_k",), 4: ("int4", "nf4", "awq", "gptq", "q4_k_m"),
                   8: ("int8", "fp8", "q8_0")}
def _bare_card(word: str) -> bool:
    """A card named alone after the model ("70B serve h100", "推理 4090")."""
    return (catalog.find_gpu(word) is not None and not (word.isdigit() and len(word) < 4)
            and not SIZE_RE.match(word.lower()))


def parse_option(token: str) -> tuple[str, Any]:
    """One `key=value` token into (field, value)."""
    key, sep, value = token.partition("=")
    key, value = key.strip().lower().replace("-", "_"), value.strip()
    if not sep or not key:
        raise ParseError(_("{token} is not key=value.").format(token=_short(token)), token=token)
    key = KEY_ALIASES.get(key, key)
    if key not in KEYS:
        raise ParseError(_("unknown key {key}= ; keys: {keys}.").format(
                             key=_short(key), keys=", ".join(KEYS)),
                         token=token,
                         accepted=tuple(KEYS),
                         suggestion=(f"{s}=" if (s := _suggest(key, tuple(KEYS))) else None))
    if not value:
        raise ParseError(_("{key}= has no value; expected {expected}.").format(
            key=key, expected=_(KEYS[key][2])), token=token)
    if key == "rank" and value.lower() in ("cost", "time"):
        key = "goal"  # rank=cost|time ranks the plans; rank=16 is the LoRA rank
    name, convert, _help = KEYS[key]
    return name, convert(key, value.lower() if key not in ("currency",) else value)


def _format_of_width(bits: int, name: str | None) -> str:
    """The method's own format of that width; else a kindred method's (LoRA's 4-bit base is
    QLoRA's NF4, and the key table then says to use qlora); else the plain intN."""
    formats = FORMATS_BY_BITS[bits]
    if name is None:
        return formats[0]
    row = method(name)
    kin = [m for m in METHODS.values() if (m.adapters, m.serving) == (row.adapters, row.serving)]
    for quants in (row.quants, *(m.quants for m in kin)):
        found = next((f for f in formats if f in quants), None)
        if found:
            return found
    return formats[0]


def check_method_options(name: str, options: dict[str, Any]) -> None:
    """Reject options that contradict the method (e.g. a GGUF quant for full fine-tuning)."""
    row = method(name)
    quant = options.get("quant")
    if quant is not None and quant not in row.quants:
        suggestion = None
        if quant in method("qlora").quants and row.adapters:
            suggestion = "qlora"  # a 4-bit base is QLoRA
        elif quant in SERVING_QUANTS and not row.serving:
            suggestion = "inference"
        raise ParseError(_("quant={quant} does not apply to {method} ({hint}); accepted: "
                           "{accepted}.").format(quant=quant, method=name, hint=_(row.quant_hint),
                                                 accepted=", ".join(row.quants)),
                         token=f"quant={quant}", accepted=row.quants,
                         suggestion=suggestion)
    if options.get("owned") and not options.get("gpu"):
        # owned prices the named cards at their running cost: with no card there is none
        raise ParseError(_("owned=true needs the cards you have: add gpu= (and gpus=)."),
                         token="owned=true")
    framework = FRAMEWORKS.get(options.get("framework") or "")
    if framework and not framework.model_parallel:
        parallelism = {"tp": N_("tensor parallelism"), "ep": N_("expert parallelism"),
                       "cp": N_("context parallelism"), "pp": N_("pipeline parallelism")}
        for key, parallel in parallelism.items():
            if (options.get(key) or 1) > 1:
                raise ParseError(_("{key}={value} needs a framework with {parallel} "
                                   "(framework={choices}); {framework} runs data parallel "
                                   "only.").format(
                    key=key, value=options[key], framework=framework.name,
                    parallel=_(parallel),
                    choices="|".join(n for n, f in FRAMEWORKS.items() if f.model_parallel)),
                    token=f"{key}={options[key]}")
    if options.get("tp") and options.get("gpus") and options["gpus"] % options["tp"]:
        raise ParseError(_("tp={tp} does not divide gpus={gpus}.").format(
            tp=options["tp"], gpus=options["gpus"]), token=f"tp={options['tp']}")
    if options.get("pp") and options.get("gpus") and options["gpus"] % (
            options["pp"] * (options.get("tp") or 1)):
        raise ParseError(_("pp={pp} x tp={tp} does not divide gpus={gpus}.").format(
            pp=options["pp"], tp=options.get("tp") or 1, gpus=options["gpus"]),
            token=f"pp={options['pp']}")


def build_request(draft: Draft) -> Request:
    """A Draft with model and method into a validated Request."""
    options = draft.options
    box = bool(options.get("gpu") and options.get("gpus"))
    if draft.model is None and box and draft.method is not None:
        draft = Draft({**draft.values, "model": LARGEST_MODEL})  # what can this box run?
    if draft.model is None:
        raise ParseError(_("missing MODEL: start with a size like 13B, a name like llama-3.1-8b, "
                           "or a Hugging Face repo id."), token="")
    if draft.method is None:
        raise ParseError(_("missing METHOD after {model}: one of {methods}.").format(
            model=draft.model, methods=", ".join(METHOD_NAMES)), token="", accepted=METHOD_NAMES)
    options = draft.options
    check_method_options(draft.method, options)
    try:
        return Request.from_values({"model": draft.model, "method": draft.method, **options})
    except ValidationError as err:
        first = err.errors()[0]
        loc = first["loc"]
        key = str(loc[0]) if loc else "input"
        value = options.get(key, "")
        if len(loc) > 1 and isinstance(value, dict):  # budget={"amount": -5.0, ...}
            value = value.get(str(loc[1]), "")
        raise ParseError(_("{key}={value}: {problem}.").format(
            key=key, value=_bound(value) if isinstance(value, float) else value,
            problem=validation_problem(first["type"], first.get("ctx") or {})),
                         token=f"{key}={value}") from None


# What pydantic's validation errors say, in its own English words (lower case) and marked for
# translation; the bound or the choices come from the error's context.
VALIDATION_PROBLEMS = {
    "less_than_equal": N_("input should be less than or equal to {limit}"),
    "less_than": N_("input should be less than {limit}"),
    "greater_than_equal": N_("input should be greater than or equal to {limit}"),
    "greater_than": N_("input should be greater than {limit}"),
    "literal_error": N_("input should be {choices}"),
    "int_parsing": N_("input should be a valid integer, unable to parse string as an integer"),
    "int_type": N_("input should be a valid integer"),
    "int_from_float": N_("input should be a valid integer, got a number with a fractional part"),
    "float_parsing": N_("input should be a valid number, unable to parse string as a number"),
    "float_type": N_("input should be a valid number"),
    "bool_parsing": N_("input should be a valid boolean, unable to interpret input"),
    "bool_type": N_("input should be a valid boolean"),
    "string_type": N_("input should be a valid string"),
    "extra_forbidden": N_("extra inputs are not permitted"),
    "model_type": N_("input should be a valid dictionary or instance of {name}"),
    "missing": N_("field required"),
}
_LIMITS = ("le", "lt", "ge", "gt")


def _bound(number: Any) -> str:
    """A bound as pydantic prints it: 4096, 0.3, 1 (not 1.0)."""
    if isinstance(number, float) and number.is_integer():
        return str(int(number))
    return str(number)


def validation_problem(kind: str, ctx: dict[str, Any]) -> str:
    """pydantic's error `kind` in the current language, with its bound or choices."""
    limit = next((ctx[k] for k in _LIMITS if k in ctx), "")
    choices = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
    quoted = [f"'{c}'" for c in choices]
    listed = (", ".join(quoted[:-1]) + _(" or ") + quoted[-1]) if len(quoted) > 1 else "".join(
        quoted)
    template = VALIDATION_PROBLEMS.get(kind)
    if template is None:
        return _("not a valid value ({kind})").format(kind=kind)
    return _(template).format(limit=_bound(limit), choices=listed,
                              name=ctx.get("class_name", ""))
