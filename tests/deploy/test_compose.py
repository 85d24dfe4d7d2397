"""deploy/compose.yaml and deploy/.env.example: a valid Compose file (strict Compose-spec parser,
offline) with the bot, Redis and the wiring between them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from compose_spec import PyCompose

from bot.settings import DEFAULT_METRICS_PORT, Settings, variables
from tests.deploy.conftest import BASE, DEPLOY, ROOT

COMPOSE = DEPLOY / "compose.yaml"
ENV_EXAMPLE = DEPLOY / ".env.example"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))


def env_file(service: dict[str, Any]) -> list[Path]:
    entries = service["env_file"]
    entries = entries if isinstance(entries, list) else [entries]
    return [(COMPOSE.parent / (e["path"] if isinstance(e, dict) else e)).resolve() for e in entries]


def read_env(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, sep, value = line.partition("=")
            assert sep, f"{path.name}: not KEY=VALUE: {line}"
            values[key.strip()] = value.strip()
    return values


INTERPOLATION = re.compile(r"\$\$|\$\{(?P<name>\w+)(?:(?P<op>:-|:\?)(?P<arg>[^}]*))?\}")


def interpolate(text: str, values: dict[str, str]) -> str:
    """Compose's own ${VAR}, ${VAR:-default}, ${VAR:?error} and $$, applied before it parses."""
    def one(match: re.Match[str]) -> str:
        if match[0] == "$$":
            return "$"
        if values.get(match["name"]):
            return values[match["name"]]
        if match["op"] == ":?":
            raise ValueError(f"{match['name']}: {match['arg']}")
        return match["arg"] or ""
    return INTERPOLATION.sub(one, text)


def test_strict_compose_spec_parse() -> None:
    text = interpolate(COMPOSE.read_text(encoding="utf-8"), read_env(ENV_EXAMPLE))
    parsed = PyCompose.from_yaml(text)  # ValueError on any typo
    parsed.validate()  # every volume/network a service names is declared
    assert {"bot", "redis"} <= set(parsed.service_names())
    # a REDIS_PASSWORD is required (Redis holds data); METRICS_PORT from deploy/.env moves the port
    with pytest.raises(ValueError, match="REDIS_PASSWORD"):
        interpolate(COMPOSE.read_text(encoding="utf-8"), {})
    moved = yaml.safe_load(interpolate(COMPOSE.read_text(encoding="utf-8"),
                                       {"REDIS_PASSWORD": "x", "METRICS_PORT": "9560"}))
    assert moved["services"]["bot"]["ports"][1] == "127.0.0.1:9560:9560"
    assert moved["services"]["bot"]["environment"]["METRICS_PORT"] == "9560"


def test_redis_is_the_datastore_kubernetes_runs(compose: dict[str, Any]) -> None:
    """The same redis.conf as deploy/k8s (AOF, snapshots, maxmemory + noeviction), a memory
    limit above the cap, a password required from deploy/.env, data on a named volume."""
    redis = compose["services"]["redis"]
    assert redis["image"].split(":")[0] == "redis" and redis["image"].split(":")[1].startswith("7")
    command = redis["command"]
    assert command[:2] == ["redis-server", "/usr/local/etc/redis/redis.conf"]  # entrypoint drops root
    assert command[2:4] == ["--dir", "/data"]
    assert command[4] == "--requirepass" and command[5].startswith("${REDIS_PASSWORD:?")
    assert redis["environment"]["REDISCLI_AUTH"] == command[5]
    volumes = dict(v.split(":", 1) for v in redis["volumes"])
    assert volumes["redis-data"] == "/data" and "redis-data" in compose["volumes"]  # named
    conf = next(k for k, v in volumes.items() if v.startswith("/usr/local/etc/redis/redis.conf"))
    assert (COMPOSE.parent / conf).resolve() == BASE / "redis.conf"
    assert redis["mem_limit"] == "512m"
    test = redis["healthcheck"]["test"]
    assert test == ["CMD-SHELL", "redis-cli ping | grep -q PONG"]
    assert "ports" not in redis  # Redis stays on the compose network


def test_bot_waits_for_a_healthy_redis_and_reports_health(compose: dict[str, Any]) -> None:
    bot = compose["services"]["bot"]
    assert bot["depends_on"]["redis"]["condition"] == "service_healthy"
    assert (COMPOSE.parent / bot["build"]["context"]).resolve() == ROOT
    assert (ROOT / bot["build"]["dockerfile"]).resolve() == DEPLOY / "Dockerfile"
    # published on the host's loopback only: the reverse proxy in front forwards /slack/events,
    # while /healthz, /readyz and /metrics (a port of its own) stay off the network
    # METRICS_PORT from deploy/.env moves both sides; its default is the bot's, not 9100
    metrics = f"${{METRICS_PORT:-{DEFAULT_METRICS_PORT}}}"
    assert [str(p) for p in bot["ports"]] == ["127.0.0.1:3000:3000",
                                              f"127.0.0.1:{metrics}:{metrics}"]
    assert bot["environment"]["METRICS_PORT"] == metrics and DEFAULT_METRICS_PORT != 9100
    test = " ".join(bot["healthcheck"]["test"])
    assert "/healthz" in test and "3000" in test and "curl" not in test
    assert bot["restart"] in ("unless-stopped", "always")


def test_env_file_is_deploy_env_documented_by_the_example(compose: dict[str, Any]) -> None:
    (path,) = env_file(compose["services"]["bot"])
    assert path == DEPLOY / ".env"
    assert ENV_EXAMPLE.is_file()
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert ".env" in ignored or "deploy/.env" in ignored  # the real one holds secrets
    values = read_env(ENV_EXAMPLE)
    assert {"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "REDIS_URL", "REDIS_PASSWORD"} <= set(values)
    assert values["REDIS_URL"] == "redis://redis:6379/0"
    assert "redis" in compose["services"]
    # the example's values pass the bot's own start-up checks
    Settings(**{k.lower(): v for k, v in values.items()})


def compose_variables() -> set[str]:
    """The ${NAME} values compose itself reads from deploy/.env (the image, build arguments)."""
    text = COMPOSE.read_text(encoding="utf-8")
    return {m["name"] for m in INTERPOLATION.finditer(text) if m["name"]}


def test_commented_optional_settings_are_real_settings() -> None:
    documented = {line.lstrip("# ").split("=")[0] for line in
                  ENV_EXAMPLE.read_text(encoding="utf-8").splitlines()
                  if line.startswith("# ") and "=" in line and line[2:3].isupper()}
    known = variables() | compose_variables()
    assert documented and documented <= known, documented - known


def test_build_arguments_and_secret_are_the_dockerfiles() -> None:
    """`up --build` builds with the Dockerfile's own arguments (a registry mirror's base, PyPI and
    Debian mirrors) and its `ca_bundle` secret, from deploy/.env; unset, the Dockerfile's
    defaults and an empty secret (/dev/null), so a plain host needs none of them."""
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    declared = set(re.findall(r"^ARG (\w+)", dockerfile, re.M))
    defaults = dict(re.findall(r"^ARG (\w+)=\"?([^\"\n]*)\"?$", dockerfile, re.M))
    plain = yaml.safe_load(interpolate(COMPOSE.read_text(encoding="utf-8"), {"REDIS_PASSWORD": "x"}))
    for name, service in plain["services"].items():
        if "build" not in service:
            continue
        args = service["build"]["args"]
        assert set(args) == declared, name
        assert all(args[a] == defaults.get(a, "") for a in args), (name, args, defaults)
        assert service["build"]["secrets"] == ["ca_bundle"]
    assert plain["secrets"]["ca_bundle"]["file"] == "/dev/null"
    assert "id=ca_bundle" in dockerfile
    mirrored = yaml.safe_load(interpolate(COMPOSE.read_text(encoding="utf-8"), {
        "REDIS_PASSWORD": "x", "CA_BUNDLE": "/etc/ssl/certs/ca-certificates.crt",
        "PIP_INDEX_URL": "https://mirrors.aliyun.com/pypi/simple/"}))
    assert mirrored["secrets"]["ca_bundle"]["file"] == "/etc/ssl/certs/ca-certificates.crt"
    assert mirrored["services"]["bot"]["build"]["args"]["PIP_INDEX_URL"].startswith("https://mirrors")
    documented = ENV_EXAMPLE.read_text(encoding="utf-8")
    assert all(f"# {name}=" in documented for name in (*declared, "CA_BUNDLE", "GPUSIZE_IMAGE"))


def test_the_outbox_journal_outlives_the_container(compose: dict[str, Any]) -> None:
    """The bot journals what it acknowledged while Redis was slow under $HOME/.cache (bot.app's
    outbox_journal): a named volume there, not a tmpfs, so a restarted or recreated container
    resubmits it; the image makes that folder the app's, so the volume starts writable."""
    bot = compose["services"]["bot"]
    volumes = dict(v.split(":", 1) for v in bot["volumes"])
    assert volumes.get("bot-cache") == "/home/app/.cache" and "bot-cache" in compose["volumes"]
    assert "/home/app/.cache" not in bot.get("tmpfs", [])
    assert "GPUSIZE_CACHE" not in bot.get("environment", {})  # the journal stays under $HOME
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"install -d -o app -g app -m 0700 /home/app/\.cache", dockerfile)


def test_digest_runner_is_opt_in(compose: dict[str, Any]) -> None:
    digest = compose["services"].get("digest")
    if digest is None:
        pytest.skip("no digest service")
    assert digest["profiles"] == ["digest"]  # `up` never starts it
    assert digest["command"] == ["gpusize", "digest", "run"]
    assert digest["restart"] == "no"
    assert digest["image"] == compose["services"]["bot"]["image"]
    assert env_file(digest) == env_file(compose["services"]["bot"])


def test_the_image_is_chosen_in_one_place_never_a_fixed_tag(compose: dict[str, Any]) -> None:
    """Issue 26: every build was tagged 0.1.0; a release is pinned by digest (deploy/release.sh)
    through GPUSIZE_IMAGE, the local build is gpusize:local."""
    images = {name: s["image"] for name, s in compose["services"].items() if "build" in s}
    assert set(images.values()) == {"${GPUSIZE_IMAGE:-gpusize:local}"}, images
    pinned = "registry.example.com/team/gpusize:0.1.0-gabc@sha256:" + "0" * 64
    chosen = yaml.safe_load(interpolate(COMPOSE.read_text(encoding="utf-8"),
                                        {"REDIS_PASSWORD": "x", "GPUSIZE_IMAGE": pinned}))
    assert {chosen["services"][n]["image"] for n in images} == {pinned}
