"""Hub look-up against a local stand-in of the Hugging Face Hub (HF_ENDPOINT)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

import pytest

from engine import hub
from engine.resolve import UnknownModel, resolve_model
from tests.harness import serve_http

# A small Qwen2-style config (fields as transformers writes them).
CONFIG = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
    "intermediate_size": 4864, "num_attention_heads": 14, "num_key_value_heads": 2,
    "num_hidden_layers": 24, "vocab_size": 151936, "tie_word_embeddings": True,
    "max_position_embeddings": 32768, "use_sliding_window": False, "sliding_window": 32768,
}
COMMIT = "a" * 40


class FakeHub(BaseHTTPRequestHandler):
    requests: ClassVar[list[str]] = []
    delay_s: ClassVar[float] = 0.0  # a slow Hub (far away, or throttled)

    def _answer(self, body: bool) -> None:
        FakeHub.requests.append(f"{self.command} {self.path}")
        if FakeHub.delay_s:
            time.sleep(FakeHub.delay_s)
        if (self.path.startswith("/test-org/tiny-") and "/resolve/" in self.path
                and self.path.endswith("/config.json")):
            data = json.dumps(CONFIG).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("ETag", '"' + hashlib.sha1(data).hexdigest() + '"')
            self.send_header("X-Repo-Commit", COMMIT)
            self.end_headers()
            if body:
                self.wfile.write(data)
            return
        self.send_response(404)
        self.send_header("X-Error-Code", "RepoNotFound")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch, tmp_path) -> Iterator[str]:
    server = serve_http(FakeHub)
    endpoint = f"http://127.0.0.1:{server.server_port}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("GPUSIZE_CACHE", str(tmp_path / "gpusize"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    import huggingface_hub.constants as constants

    # huggingface_hub reads HF_ENDPOINT once at import; a process started with it set (the CLI
    # test in tests/gpusize) needs nothing more, an already-imported module needs its constants.
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                        endpoint + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    FakeHub.requests = []
    FakeHub.delay_s = 0.0
    yield endpoint
    FakeHub.delay_s = 0.0
    server.shutdown()
    server.server_close()


def test_lookup_fetches_maps_and_caches(fake_hub: str) -> None:
    spec = hub.lookup("test-org/tiny-qwen")
    # Qwen2.5-0.5B's shapes: 494,032,768 parameters (qkv bias, tied embeddings)
    assert spec.params == 494_032_768
    assert (spec.kv_heads, spec.head_dim, spec.tied_embeddings, spec.qkv_bias) == (2, 64, True, True)
    assert spec.source.startswith(fake_hub)
    assert any("config.json" in r for r in FakeHub.requests)
    # a second look-up is served from the local cache: no new request
    FakeHub.requests = []
    assert hub.lookup("test-org/tiny-qwen") == spec
    assert FakeHub.requests == []


def test_resolve_names_the_hub_source(fake_hub: str) -> None:
    spec, notes = resolve_model("test-org/tiny-qwen", hub=hub.lookup)
    assert spec.name == "test-org/tiny-qwen"
    assert "Hugging Face Hub" in notes[0]


def test_unknown_repo_says_what_it_could_not_fetch(fake_hub: str) -> None:
    with pytest.raises(UnknownModel) as info:
        hub.lookup("test-org/llama-3.1-8c")
    message = str(info.value)
    assert "could not be fetched" in message and fake_hub in message
    assert "llama-3.1-8b" in message  # closest catalog entries


def test_unreachable_hub_is_a_clear_line(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    import huggingface_hub.constants as constants

    dead = "http://127.0.0.1:9"  # discard port: connection refused
    monkeypatch.setenv("HF_ENDPOINT", dead)
    monkeypatch.setenv("GPUSIZE_CACHE", str(tmp_path))
    monkeypatch.setattr(constants, "ENDPOINT", dead)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                        dead + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(UnknownModel) as info:
        hub.lookup("someone/qwen2.5-7b-finetune")
    assert "could not be fetched" in str(info.value)
    assert "qwen2.5-7b" in str(info.value) or "Closest" in str(info.value)


def test_catalog_repo_ids_resolve_offline() -> None:
    spec, notes = resolve_model("meta-llama/Llama-3.1-8B", hub=None)
    assert spec.params == 8_030_261_248 and notes == ()


def test_a_miss_is_remembered_and_not_fetched_again(fake_hub: str) -> None:
    for _attempt in range(3):
        with pytest.raises(UnknownModel, match="could not be fetched"):
            hub.lookup("test-org/no-such-model")
    assert len(FakeHub.requests) == 1, FakeHub.requests
    # the bot's check before the ack sees the miss too, without a request
    with pytest.raises(UnknownModel, match="HTTP 404"):
        hub.cached("test-org/no-such-model")
    assert len(FakeHub.requests) == 1


def test_the_miss_expires(fake_hub: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUB_MISS_TTL_S", "0.2")
    with pytest.raises(UnknownModel):
        hub.lookup("test-org/no-such-model")
    time.sleep(0.3)
    assert hub.cached("test-org/no-such-model") is None
    with pytest.raises(UnknownModel):
        hub.lookup("test-org/no-such-model")
    assert len(FakeHub.requests) == 2


def test_cached_never_asks_the_hub(fake_hub: str) -> None:
    assert hub.cached("test-org/tiny-qwen") is None
    assert FakeHub.requests == []
    spec = hub.lookup("test-org/tiny-qwen")
    assert hub.cached("test-org/tiny-qwen") == spec
    assert len(FakeHub.requests) == 1


def test_a_slow_hub_is_cut_at_the_deadline(fake_hub: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUB_TIMEOUT_S", "0.5")
    FakeHub.delay_s = 4
    start = time.monotonic()
    with pytest.raises(UnknownModel, match="TimeoutError"):
        hub.lookup("test-org/tiny-slow")
    assert time.monotonic() - start < 3  # the Hub takes 4 s: the deadline ended it
    # remembered briefly, so a retry storm does not reach the Hub either
    with pytest.raises(UnknownModel):
        hub.cached("test-org/tiny-slow")


def test_not_a_repo_id_is_refused_without_a_request(fake_hub: str) -> None:
    for text in ("../../etc/passwd", "a--b/c", "org/" + "x" * 200, "org/na me"):
        with pytest.raises(UnknownModel):
            hub.lookup(text)
    assert FakeHub.requests == []


def test_the_cache_is_bounded_least_recently_used_first(
        fake_hub: str, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("HUB_CACHE_MAX_ENTRIES", "3")
    for name in ("x", "y"):  # misses count against the bound too
        with pytest.raises(UnknownModel):
            hub.lookup(f"test-org/missing-{name}")
    hub.lookup("test-org/tiny-a")
    time.sleep(0.01)
    for name in ("b", "c", "d", "e"):
        hub.lookup("test-org/tiny-a")  # used again: kept
        time.sleep(0.01)
        hub.lookup(f"test-org/tiny-{name}")
        time.sleep(0.01)
    entries, size = hub.cache_usage()
    assert entries <= 3
    assert hub.cached("test-org/tiny-a") is not None
    monkeypatch.setenv("HUB_CACHE_MAX_BYTES", str(size // 2))
    hub.evict()
    assert hub.cache_usage()[1] <= size // 2
    # huggingface_hub's own download cache is not used at all
    hf = tmp_path / "hf"
    assert not hf.exists() or not any(p.is_file() for p in hf.rglob("*"))
