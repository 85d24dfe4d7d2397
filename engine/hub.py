"""Hugging Face Hub look-up: the one engine module that touches the network.

Fetches a repo's config.json (the URL and auth headers from huggingface_hub, which honours
HF_ENDPOINT, HF_TOKEN and HF_HUB_OFFLINE) into memory under one total deadline, maps it to a
ModelSpec and keeps the mapped spec in a local JSON cache so a later offline run still knows the
model. Misses are cached too (for HUB_MISS_TTL_S), so a bad repo id is not fetched again and
again. The cache is bounded in entries and bytes (least recently used evicted first), and
nothing is written to huggingface_hub's own download cache.

`cached` answers from the local cache only (never the network): the bot validates with it
before acknowledging Slack, and looks the rest up afterwards, in an answer worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from datetime import date
from pathlib import Path
from typing import Any

from engine import config
from engine.architecture import ModelSpec
from engine.i18n import _
from engine.resolve import UnknownModel, closest_text

ARCH_MLP_PLAIN = ("gpt2", "gpt_neox", "phi", "falcon", "bloom", "opt", "starcoder2")
# The Hub's own rule for repo ids (owner/name, no "--" or ".." anywhere): anything else is
# refused before it reaches a file name or a URL.
REPO_ID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?/"
                     r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?")
CONFIG_MAX_BYTES = 1 << 20  # a transformers config.json is a few KiB
TRANSIENT_MISS_TTL_S = 60.0  # a timeout or a 5xx may pass: retry sooner than a 404


def timeout_s() -> float:
    """The total deadline of one look-up (connect, headers and body together)."""
    return config.number(config.HUB_TIMEOUT_S)


def miss_ttl_s() -> float:
    return config.number(config.HUB_MISS_TTL_S)


def max_entries() -> int:
    return int(config.number(config.HUB_CACHE_MAX_ENTRIES))


def max_bytes() -> int:
    return int(config.number(config.HUB_CACHE_MAX_BYTES))


def cache_dir() -> Path:
    return config.cache_root() / "models"


def _cache_path(repo_id: str) -> Path:
    return cache_dir() / (repo_id.replace("/", "--") + ".json")


def _miss_path(repo_id: str) -> Path:
    return cache_dir() / "misses" / (repo_id.replace("/", "--") + ".json")


def _first(cfg: dict[str, Any], *keys: str, default: Any = None) -> Any:
    for key in keys:
        if cfg.get(key) is not None:
            return cfg[key]
    return default


def config_to_spec(repo_id: str, cfg: dict[str, Any], *, source: str, retrieved: str) -> ModelSpec:
    """Map a transformers config.json to our fields; text_config for multimodal wrappers."""
    if "text_config" in cfg and "hidden_size" not in cfg:
        cfg = {**cfg["text_config"], "model_type": cfg.get("model_type", "")}
    model_type = str(cfg.get("model_type", ""))
    hidden = int(_first(cfg, "hidden_size", "n_embd", "d_model"))
    heads = int(_first(cfg, "num_attention_heads", "n_head"))
    kv_heads = int(_first(cfg, "num_key_value_heads", "multi_query_group_num", default=heads))
    head_dim = int(_first(cfg, "head_dim", default=hidden // heads))
    experts = int(_first(cfg, "num_local_experts", "num_experts", "n_routed_experts", default=0))
    is_mla = bool(cfg.get("kv_lora_rank"))
    window = cfg.get("sliding_window") if cfg.get("use_sliding_window", True) else None
    layers = int(_first(cfg, "num_hidden_layers", "n_layer", "num_layers"))
    fields: dict[str, Any] = {
        "name": repo_id.lower(),
        "display": repo_id,
        "hf_repo": repo_id,
        "family": model_type or "unknown",
        "layers": layers,
        "hidden": hidden,
        "intermediate": int(_first(cfg, "intermediate_size", "ffn_hidden_size", default=4 * hidden)),
        "heads": heads,
        "kv_heads": heads if is_mla else kv_heads,
        "head_dim": int(cfg.get("v_head_dim", head_dim)) if is_mla else head_dim,
        "vocab": int(_first(cfg, "vocab_size", "padded_vocab_size")),
        "tied_embeddings": bool(cfg.get("tie_word_embeddings", False)),
        "mlp": "plain" if model_type in ARCH_MLP_PLAIN else "gated",
        "qkv_bias": bool(_first(cfg, "attention_bias", "add_qkv_bias", default=model_type == "qwen2")),
        "attention": "mla" if is_mla else ("gqa" if kv_heads < heads else "mha"),
        "max_context": int(_first(cfg, "max_position_embeddings", "seq_length", default=4096)),
        "qk_norm": model_type in ("qwen3", "qwen3_moe", "gemma3", "gemma3_text"),
        "norms_per_layer": 4 if model_type.startswith("gemma2") or model_type.startswith("gemma3") else 2,
        "source": source,
        "retrieved": retrieved,
    }
    if window:
        pattern = cfg.get("sliding_window_pattern")
        fields["sliding_window"] = int(window)
        fields["sliding_layers"] = (layers - layers // int(pattern)) if pattern else layers
    if experts:
        fields |= {
            "experts": experts,
            "active_experts": int(_first(cfg, "num_experts_per_tok", "top_k", default=2)),
            "shared_experts": int(_first(cfg, "n_shared_experts", default=0)),
            "moe_intermediate": int(_first(cfg, "moe_intermediate_size", "intermediate_size")),
            "dense_layers": int(_first(cfg, "first_k_dense_replace", default=0)),
        }
        if cfg.get("shared_expert_intermediate_size"):
            fields |= {"shared_experts": 1,
                       "shared_intermediate": int(cfg["shared_expert_intermediate_size"]),
                       "shared_expert_gate": True}
    if is_mla:
        fields |= {k: int(cfg.get(k) or 0) for k in ("q_lora_rank", "kv_lora_rank",
                                                      "qk_nope_head_dim", "qk_rope_head_dim",
                                                      "v_head_dim")}
        fields["router_bias"] = cfg.get("topk_method") == "noaux_tc"
    return ModelSpec(**fields)



class HubOffline(ConnectionError):
    """HF_HUB_OFFLINE is set: nothing is fetched."""


def _endpoint() -> str:
    return config.hf_endpoint()


def _unknown(repo_id: str, endpoint: str, reason: str) -> UnknownModel:
    return UnknownModel(_(
        "unknown model {model}: not in the catalog, and its config.json could not be fetched "
        "from {endpoint} ({reason}). Closest catalog entries: {closest}.").format(
        model=repo_id, endpoint=endpoint, reason=reason, closest=closest_text(repo_id)))


def is_repo_id(text: str) -> bool:
    """Whether `text` could name a Hub repo (owner/name in the Hub's own alphabet)."""
    return bool(REPO_ID.fullmatch(text)) and "--" not in text and ".." not in text


def cached(repo_id: str) -> ModelSpec | None:
    """From the local cache only, never the network: the spec if it was fetched before,
    UnknownModel if a recent look-up missed (or the Hub cannot have such a repo), None if it has
    not been looked up yet."""
    if not is_repo_id(repo_id):
        raise UnknownModel(_("unknown model {model}: not in the catalog (closest: {closest}).")
                           .format(model=repo_id, closest=closest_text(repo_id)))
    path = _cache_path(repo_id)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        text = None
    if text is not None:
        try:
            spec = ModelSpec(**json.loads(text))
        except (ValueError, TypeError):
            path.unlink(missing_ok=True)  # a corrupt cache entry: fetch again
        else:
            _touch(path)
            return spec
    miss = _read_miss(repo_id)
    if miss is not None:
        raise _unknown(repo_id, str(miss.get("endpoint", "")), str(miss.get("reason", "")))
    return None


def lookup(repo_id: str) -> ModelSpec:
    """The spec for a Hub repo id: from the local cache, else fetched within HUB_TIMEOUT_S;
    UnknownModel if neither (and the miss is remembered)."""
    spec = cached(repo_id)
    if spec is not None:
        return spec
    endpoint = _endpoint()
    try:
        cfg = _fetch_config(repo_id, endpoint)
        spec = config_to_spec(repo_id, cfg, source=f"{endpoint}/{repo_id}/blob/main/config.json",
                              retrieved=date.today().isoformat())
    except ImportError as err:
        raise UnknownModel(_("unknown model {model}: it is not in the catalog and huggingface_hub "
                             "is not installed (pip install 'gpusize[hub]').").format(
            model=repo_id)) from err
    except Exception as err:  # network, 404, gated repo, malformed config: one clear line
        code = _http_code(err)
        reason = f"HTTP {code}" if code is not None else type(err).__name__
        _remember_miss(repo_id, endpoint, reason, ttl_s=_miss_ttl_for(err))
        raise _unknown(repo_id, endpoint, reason) from err
    _write(_cache_path(repo_id), spec.model_dump_json())
    return spec


def _miss_ttl_for(err: Exception) -> float:
    """A repo the Hub says is not there (or whose config we cannot read) is remembered for
    HUB_MISS_TTL_S; a timeout, a refused connection or a 5xx only briefly."""
    code = _http_code(err)
    definitive = (code is not None and 400 <= code < 500 and code not in (408, 429)) \
        or isinstance(err, (ValueError, TypeError, KeyError))
    return miss_ttl_s() if definitive else min(TRANSIENT_MISS_TTL_S, miss_ttl_s())


def _http_code(err: Exception) -> int | None:
    """The HTTP status of a failed fetch, None for any other failure."""
    import urllib.error  # lazily: urllib costs the CLI ~20 ms of start-up, and only a fetch needs it

    return err.code if isinstance(err, urllib.error.HTTPError) else None


def _fetch_config(repo_id: str, endpoint: str) -> dict[str, Any]:
    """config.json, into memory, under one total deadline. At the deadline the connection is shut
    down under the fetching thread, which then ends: a Hub that trickles a byte at a time keeps
    neither a thread nor a socket past HUB_TIMEOUT_S."""
    import huggingface_hub

    if getattr(getattr(huggingface_hub, "constants", None), "HF_HUB_OFFLINE", False):
        raise HubOffline("HF_HUB_OFFLINE is set")
    url = huggingface_hub.hf_hub_url(repo_id, "config.json", endpoint=endpoint)
    # Not build_hf_headers: it may ask the Hub for more (an agent registry), outside the deadline
    headers = {"user-agent": "gpusize"}
    token = getattr(huggingface_hub, "get_token", lambda: None)()  # HF_TOKEN: gated repos
    if token:
        headers["authorization"] = f"Bearer {token}"
    budget = timeout_s()
    outcome: dict[str, Any] = {}
    fetch = _Fetch(url, headers, deadline=time.monotonic() + budget)

    def run() -> None:
        try:
            outcome["config"] = fetch.config()
        except Exception as err:
            outcome["error"] = err

    worker = threading.Thread(target=run, name="hub-fetch", daemon=True)
    worker.start()
    worker.join(budget)
    if worker.is_alive():
        fetch.abort()
        worker.join(ABORT_JOIN_S)
        raise TimeoutError(f"no config.json within {budget:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["config"]


MAX_REDIRECTS = 5
ABORT_JOIN_S = 1.0  # a shut-down socket wakes its reader at once; this only bounds the wait
REDIRECTS = (301, 302, 303, 307, 308)
CREDENTIALS = ("authorization", "cookie", "proxy-authorization")


def _origin(url: str) -> tuple[str, str, int | None]:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port


class _Fetch:
    """One GET of config.json with its redirects, read by http.client so that the caller can
    shut the connection down at the deadline. Credentials (HF_TOKEN's Authorization) go only to
    the origin they were given for: a redirect to another scheme, host or port drops them, as
    browsers and requests do."""

    def __init__(self, url: str, headers: dict[str, str], *, deadline: float) -> None:
        self.url, self.headers, self.deadline = url, dict(headers), deadline
        self.connection: Any = None
        self.aborted = False
        self.lock = threading.Lock()

    def remaining(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0 or self.aborted:
            raise TimeoutError("config.json arrived too slowly")
        return left

    def abort(self) -> None:
        import socket

        with self.lock:
            self.aborted = True
            sock = getattr(self.connection, "sock", None)
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    sock.close()

    def _connect(self, url: str) -> Any:
        import http.client
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        if parts.scheme not in ("https", "http"):
            raise ValueError(f"not an http(s) URL: {parts.scheme}")
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        connection = kind(parts.hostname or "", parts.port, timeout=self.remaining())
        with self.lock:
            if self.aborted:
                raise TimeoutError("config.json arrived too slowly")
            self.connection = connection
        connection.connect()
        with self.lock:  # abort() may have run while connecting, before there was a socket
            if self.aborted:
                connection.close()
                raise TimeoutError("config.json arrived too slowly")
        return connection

    def config(self) -> dict[str, Any]:
        import urllib.error
        from urllib.parse import urljoin, urlsplit

        url, headers = self.url, dict(self.headers)
        for _hop in range(MAX_REDIRECTS + 1):
            connection, response = self._connect(url), None
            try:
                parts = urlsplit(url)
                connection.request("GET", (parts.path or "/") + (f"?{parts.query}" if parts.query
                                                                 else ""), headers=headers)
                response = connection.getresponse()
                if response.status in REDIRECTS and response.getheader("location"):
                    target = urljoin(url, response.getheader("location"))
                    if _origin(target) != _origin(url):
                        headers = {k: v for k, v in headers.items() if k.lower() not in CREDENTIALS}
                    url = target
                    continue
                if response.status != 200:
                    raise urllib.error.HTTPError(url, response.status, response.reason,
                                                 response.msg, None)
                return _parse(self._read(response))
            finally:  # the response holds the socket's file too: both, or the fd stays open
                if response is not None:
                    response.close()
                connection.close()
        raise ValueError(f"more than {MAX_REDIRECTS} redirects")

    def _read(self, response: Any) -> bytes:
        data = b""
        while True:
            self.remaining()
            chunk = response.read1(16384)  # what has arrived, not a full buffer: the deadline holds
            if not chunk:
                return data
            data += chunk
            if len(data) > CONFIG_MAX_BYTES:
                raise ValueError("config.json is larger than any model config")


def _parse(data: bytes) -> dict[str, Any]:
    config = json.loads(data)
    if not isinstance(config, dict):
        raise ValueError("config.json is not an object")
    return config


# -- the bounded local cache ------------------------------------------------------------------


def _read_miss(repo_id: str) -> dict[str, Any] | None:
    path = _miss_path(repo_id)
    try:
        miss = json.loads(path.read_text(encoding="utf-8"))
        if float(miss["until"]) > time.time():
            return miss
    except (OSError, ValueError, TypeError, KeyError):
        return None
    path.unlink(missing_ok=True)  # expired: the next look-up asks the Hub again
    return None


def _remember_miss(repo_id: str, endpoint: str, reason: str, *, ttl_s: float) -> None:
    if ttl_s > 0:
        _write(_miss_path(repo_id), json.dumps({"endpoint": endpoint, "reason": reason,
                                                "until": time.time() + ttl_s}))


def _touch(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.utime(path)  # the file's mtime is its last use: eviction goes oldest first


def _write(path: Path, text: str) -> None:
    """Write atomically (answer workers share the directory), then keep the cache in bounds."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
        evict()
    except OSError:
        pass  # a read-only or full cache costs a fetch next time, not an answer


def evict(*, entries: int | None = None, size: int | None = None) -> int:
    """Remove least recently used entries (specs and misses alike) until the cache holds at most
    `entries` files and `size` bytes (HUB_CACHE_MAX_ENTRIES / HUB_CACHE_MAX_BYTES); the count
    removed."""
    entries = max_entries() if entries is None else entries
    size = max_bytes() if size is None else size
    root = cache_dir()
    files: list[tuple[float, int, Path]] = []
    for folder in (root, root / "misses"):
        try:
            with os.scandir(folder) as found:
                for item in found:
                    if item.is_file() and item.name.endswith(".json"):
                        stat = item.stat()
                        files.append((stat.st_mtime, stat.st_size, Path(item.path)))
        except OSError:
            continue
    files.sort(key=lambda f: f[0])
    total = sum(f[1] for f in files)
    removed = 0
    while files and (len(files) > entries or total > size):
        _mtime, length, path = files.pop(0)
        path.unlink(missing_ok=True)
        total -= length
        removed += 1
    return removed


def cache_usage() -> tuple[int, int]:
    """Entries and bytes the cache holds now."""
    count = total = 0
    root = cache_dir()
    for folder in (root, root / "misses"):
        if folder.is_dir():
            for path in folder.glob("*.json"):
                count += 1
                total += path.stat().st_size
    return count, total
