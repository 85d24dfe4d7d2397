"""A training set said as people count it, into the tokens a run trains on (issue 20 gaps).

Teams say how much data they have in samples (数据5万条, 10万条对话, 50k samples), in bytes
(数据集3GB, a 3GB dataset) or in tokens (2B tokens of data). Tokens are what a training run's
time and cost follow (engine/cost.py job_tokens), so the first two are converted, each with
its assumption said:

- A sample is one conversation of LMSYS-Chat-1M's average shape: 2.0 turns of a 69.5-token
  prompt and a 214.5-token answer, 568 tokens (Zheng et al., "LMSYS-Chat-1M", ICLR 2024,
  arXiv 2309.11998, Table 1: a million real conversations with 25 chat models, April-August
  2023). Instruction sets run shorter and long-document sets longer: tokens= says it exactly.
- A byte of text is a quarter of a token: OpenAI's rule of thumb that a token is about four
  characters of common English text (help.openai.com, "What are tokens and how to count
  them?"), one byte each in UTF-8. Chinese takes three bytes a character and about 1.5
  characters a token in Qwen's and DeepSeek's vocabularies, so about as many bytes a token
  again: the same rule, within the spread of what a file also holds (JSON keys, markup).

The data set is one epoch of the run; `epochs` (3 epochs, 训练3轮) multiplies it. Serving has no
use for it, and the reader says so.
"""

from __future__ import annotations

import re

from engine import numbers
from engine.i18n import _

LMSYS_TURNS = 2.0  # Zheng et al. 2023 (arXiv 2309.11998), Table 1
LMSYS_PROMPT_TOKENS = 69.5
LMSYS_ANSWER_TOKENS = 214.5
TOKENS_PER_SAMPLE = round(LMSYS_TURNS * (LMSYS_PROMPT_TOKENS + LMSYS_ANSWER_TOKENS))  # 568
BYTES_PER_TOKEN = 4.0  # OpenAI: a token is ~4 characters of common English text
BYTE_UNITS = {"": 1.0, "b": 1.0, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9,
              "t": 1e12, "tb": 1e12}
SCALE_WORDS = {**{k: float(v) for k, v in numbers.CN_SCALES.items()},
               "k": 1e3, "thousand": 1e3, "grand": 1e3, "m": 1e6, "million": 1e6, "mil": 1e6,
               "mn": 1e6, "b": 1e9, "billion": 1e9, "bn": 1e9}


def amount(number: str, scale: str | None = None) -> float | None:
    """A count as written with its scale word: ("5", "万") -> 50000, ("50", "k") -> 50000."""
    n = numbers.to_number(number)
    if n is None or n <= 0:
        return None
    scale = (scale or "").strip()
    factor = SCALE_WORDS.get(scale, SCALE_WORDS.get(scale.lower())) if scale else 1.0
    return None if factor is None else n * factor


def from_samples(samples: float, epochs: float = 1) -> tuple[int, str]:
    """(tokens, the note saying how): samples x TOKENS_PER_SAMPLE x epochs."""
    tokens = round(samples * TOKENS_PER_SAMPLE * epochs)
    note = _("A data set of {samples:,.0f} samples read as {tokens} training tokens: {each} tokens a "
             "sample, LMSYS-Chat-1M's average conversation (2.0 turns of 69.5 + 214.5 tokens, "
             "arXiv 2309.11998){epochs}; set tokens= if you know the count.").format(
                 samples=samples, tokens=short_count(tokens), each=TOKENS_PER_SAMPLE,
                 epochs=_epochs(epochs))
    return tokens, note


def from_bytes(size: float, epochs: float = 1) -> tuple[int, str]:
    """(tokens, the note saying how): bytes / BYTES_PER_TOKEN x epochs."""
    tokens = round(size / BYTES_PER_TOKEN * epochs)
    note = _("A data set of {size} read as {tokens} training tokens: {per:g} bytes a token (about "
             "four characters of English a token, OpenAI's rule of thumb; Chinese in UTF-8 comes "
             "out about the same){epochs}; set tokens= if you know the count.").format(
                 size=_bytes(size), tokens=short_count(tokens), per=BYTES_PER_TOKEN,
                 epochs=_epochs(epochs))
    return tokens, note


def _epochs(epochs: float) -> str:
    return "" if epochs == 1 else _(", times {epochs:g} epochs").format(epochs=epochs)


def short_count(count: float) -> str:
    """28400000 -> 28.4M: counts as people write them."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if count >= scale:
            return numbers.plain(round(count / scale, 2)) + suffix
    return numbers.plain(count)


def _bytes(size: float) -> str:
    for scale, suffix in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if size >= scale:
            return numbers.plain(round(size / scale, 2)) + " " + suffix
    return f"{numbers.plain(size)} B"


# -- what the phrase rows (engine/zh_input.py, engine/en_input.py) emit -------------------------
# groups: n (a number), u (its scale word), b (a byte unit), t (g or t for memory), n2 (epochs)

def gigabytes(m: re.Match[str]) -> str | None:
    """24G, 512GB, 1T (a memory size): GB as a key's value (a terabyte is 1024 GB)."""
    size = numbers.to_number(m.group("n"))
    if not size:
        return None
    return numbers.plain(size * (1024 if m.group("t").lower() == "t" else 1))


def samples_token(m: re.Match[str]) -> str | None:
    count = amount(m.group("n"), m.groupdict().get("u"))
    return None if count is None else f"samples={numbers.plain(count)}"


def bytes_token(m: re.Match[str]) -> str | None:
    size = amount(m.group("n"))
    unit = BYTE_UNITS.get(m.group("b").lower())
    return None if size is None or unit is None else f"databytes={numbers.plain(size * unit)}"


def epochs_token(m: re.Match[str]) -> str | None:
    count = numbers.to_number(m.group("n") or m.groupdict().get("n2") or "")
    return None if not count or count <= 0 else f"epochs={numbers.plain(count)}"
