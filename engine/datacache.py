"""The bundled catalogs, parsed and validated once per version of the data.

Reading the TOML catalogs and validating every row takes longer than answering a question, so
the validated objects are pickled in the user's cache directory (as Python keeps .pyc files),
under a key made of the data files' bytes, the code that defines their classes, and the Python
and pydantic versions: any change to any of them is a new key, never a stale catalog. A cache
that cannot be read or written (read-only home, a container) only costs the parse.
"""

from __future__ import annotations

import os
import pickle
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pydantic

from engine import config

T = TypeVar("T")
ENGINE = Path(__file__).resolve().parent


def data_text(filename: str) -> str:
    # a plain path beside this module (the wheel ships engine/data/): importlib.resources would
    # cost the CLI more to import than reading the file
    return (ENGINE / "data" / filename).read_text(encoding="utf-8")


def _key(name: str, data: tuple[str, ...], code: tuple[str, ...]) -> str:
    # CRC-32 and Adler-32 of every input: a change anywhere is a new key (zlib is already loaded,
    # hashlib's OpenSSL binding is not)
    parts = [f"{sys.version}|{pydantic.VERSION}|{name}".encode()]
    parts += [data_text(filename).encode() for filename in data]
    parts += [(ENGINE / module).read_bytes() for module in code]
    blob = b"\0".join(parts)
    return f"{zlib.crc32(blob):08x}{zlib.adler32(blob):08x}{len(blob):x}"


def load(name: str, *, data: tuple[str, ...], code: tuple[str, ...], build: Callable[[], T]) -> T:
    """`build()`'s result, from the cache when the same data and code built it before."""
    if config.data_cache_off():
        return build()
    try:
        path = config.cache_root() / "catalogs" / f"{name}-{_key(name, data, code)}.pickle"
    except OSError:
        return build()
    try:
        with path.open("rb") as f:
            return pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError,
            TypeError, ValueError):
        pass  # not built yet, or unreadable: build it
    value = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new one
        for old in path.parent.glob(f"{name}-*.pickle"):
            if old != path:
                old.unlink(missing_ok=True)  # built from data or code that is gone
    except OSError:
        pass
    return value
