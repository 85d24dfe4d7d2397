"""The bot's settings from the environment (pydantic-settings). A missing or malformed one stops
start-up with one line naming it; tokens never appear in that line.

The variables the engine reads (the Hub look-up's HUB_*, the cache directory, HF_ENDPOINT) are
declared once, in engine/config.py; `load_settings` checks those too. Nothing else reads the
environment (tests/test_environment.py). A new setting: a field here with its default, range and
description, a row in docs/SLACK.md's settings table and a line in deploy/.env.example."""

from __future__ import annotations

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from engine import config

SLACK_API = "https://slack.com/api/"
REDIS_SCHEMES = ("redis://", "rediss://", "unix://", "redis+sentinel://", "rediss+sentinel://")
# Not 9100: node_exporter's port, taken on most monitored hosts (compose publishes this one).
DEFAULT_METRICS_PORT = 9478


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    slack_bot_token: SecretStr = Field(description="xoxb- bot token")
    slack_signing_secret: SecretStr = Field(description="the app's signing secret")
    redis_url: str = Field("redis://127.0.0.1:6379/0", description="redis://, rediss://, unix:// "
                           "or redis+sentinel:// (rediss+sentinel://) URL: bot/connections.py")
    redis_password: SecretStr | None = Field(None, description="Redis AUTH password (from a "
                                             "Secret), kept out of REDIS_URL")
    redis_sentinel_password: SecretStr | None = Field(None, description="the Sentinels' own "
                                                      "password, where they require one")
    redis_ca_file: str | None = Field(None, description="CA bundle for rediss:// (a managed Redis "
                                      "with a private CA)")
    slack_api_url: str = Field(SLACK_API, description="base URL of the Slack Web API")
    slack_app_token: SecretStr | None = Field(None, description="xapp- token, Socket Mode only")
    port: int = Field(3000, ge=1, le=65535)
    slack_timeout_s: float = Field(10, gt=0, le=60, description="per Web API call")
    conversation_ttl_days: float = Field(30, gt=0, le=365)
    price_feeds: str = Field("", description="comma-separated feed URLs (docs/PRICES.md: feeds)")
    feed_interval_minutes: float = Field(60, gt=0, le=10080)
    digest_scheduler: bool = Field(True, description="run due digests inside `gpusize serve`")
    # -- jobs
    job_claim_idle_s: float = Field(15, gt=0, le=3600, description="a job its process has not "
                                    "touched for this long is taken over by another (s)")
    shutdown_grace_s: float = Field(20, ge=0, le=300, description="on SIGTERM, time to finish "
                                    "running jobs; keep under the pod's termination grace (30)")
    job_max_in_flight: int = Field(8, ge=1, le=256, description="jobs run at once per process")
    job_max_per_user: int = Field(2, ge=1, le=64, description="jobs run at once per user")
    chart_limit_per_minute: int = Field(6, ge=1, le=1000, description="charts per user a minute")
    # A person asks a few questions an hour; a script opened 500 threads in 4 s (issue 26).
    thread_limit_per_hour: int = Field(30, ge=1, le=10_000,
                                       description="new threads (questions) one member opens an hour")
    chart_cache_s: int = Field(120, ge=0, le=86400, description="how long a chart PNG is reused")

    @property
    def feed_urls(self) -> list[str]:
        return [u.strip() for u in self.price_feeds.split(",") if u.strip()]

    @field_validator("slack_bot_token")
    @classmethod
    def _bot_token(cls, value: SecretStr) -> SecretStr:
        if not value.get_secret_value().startswith("xoxb-"):
            raise ValueError("must be a bot token starting with xoxb-")
        return value

    @field_validator("slack_app_token")
    @classmethod
    def _app_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().startswith("xapp-"):
            raise ValueError("must be an app-level token starting with xapp-")
        return value

    @field_validator("redis_url")
    @classmethod
    def _redis(cls, value: str) -> str:
        if not value.startswith(REDIS_SCHEMES):
            raise ValueError("must start with " + ", ".join(REDIS_SCHEMES))
        return value

    @field_validator("slack_api_url")
    @classmethod
    def _api(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL")
        return value if value.endswith("/") else value + "/"

    # -- edge
    max_body_bytes: int = Field(1 << 20, ge=1024, le=64 << 20,
                                description="largest request body accepted (Slack's are small)")
    header_timeout_s: float = Field(5, gt=0, le=120,
                                    description="a connection's request headers must be in by then")
    body_timeout_s: float = Field(10, gt=0, le=120, description="a request body must be in by then")
    max_waiting_connections: int = Field(256, ge=1, le=100_000,
                                         description="connections waiting for their headers")
    limit_concurrency: int = Field(1000, ge=1, le=100_000,
                                   description="connections and requests at once; beyond: 503")
    keep_alive_s: float = Field(5, gt=0, le=300, description="idle keep-alive connections close")
    metrics_port: int = Field(DEFAULT_METRICS_PORT, ge=1, le=65535,
                              description="/metrics, off the public port")
    metrics_host: str = Field("127.0.0.1", description="where /metrics listens (0.0.0.0 in a pod)")
    metrics_max_connections: int = Field(16, ge=1, le=1024, description="/metrics connections "
                                         "served at once (a thread each); more are closed")


class WorkerSettings(BaseSettings):
    """The answer workers' settings (bot/workers.py): read wherever a pool starts (the bot, the
    digest runner, a bench) and in each worker, so no token is needed to read them."""

    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    gpusize_workers: int | None = Field(None, ge=0, le=256, description="processes computing "
                                        "answers; unset: CPUs - 1; 0: threads instead")
    # tests and benches only, never set in production: answers in flight while a test stops or
    # kills the bot
    gpusize_test_answer_delay_s: float = Field(0, ge=0, le=60, description="each answer waits "
                                               "this long in its worker")


def variables() -> set[str]:
    """Every environment variable `gpusize serve` reads: its settings and the engine's."""
    return ({name.upper() for name in (*Settings.model_fields, *WorkerSettings.model_fields)}
            | {var.name for var in config.NUMBERS} | set(config.NAMES))


class SettingsError(SystemExit):
    """Start-up stops with one line naming the bad setting."""


def load_settings() -> Settings:
    try:
        settings = Settings()  # type: ignore[call-arg]
        WorkerSettings()
        config.check()
    except ValidationError as err:
        first = err.errors()[0]
        name = str(first["loc"][0]).upper() if first["loc"] else "settings"
        problem = "is missing" if first["type"] == "missing" else first["msg"].lower()
        raise SettingsError(f"gpusize serve: setting {name} {problem}") from None
    except config.BadVariable as err:
        raise SettingsError(f"gpusize serve: setting {err}") from None
    return settings
