"""Every Redis connection the bot makes, from one REDIS_URL: a single Redis (redis://, rediss://
with TLS, unix://) or a Sentinel-watched primary (redis+sentinel://, rediss+sentinel://), so a
managed Redis or a Sentinel failover needs no code change. Passwords come from REDIS_PASSWORD and
REDIS_SENTINEL_PASSWORD (Secrets) rather than the URL, though a URL's own password is honoured.

    redis+sentinel://[:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/SERVICE[/DB]

HOSTs are Sentinels (port 26379 by default), SERVICE the name they monitor (`sentinel monitor
SERVICE ...`), DB the database number (0). The `+sentinel` form with `rediss` speaks TLS to the
Sentinels and to the primary alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool

SENTINEL_PORT = 26379
# Short timeouts: a slow or absent Redis must never hold an acknowledgement past Slack's 3 s.
SOCKET_TIMEOUT_S = 1.0
# A blocking pool: under overload, work waits this long for a connection instead of failing at
# once (redis-py's default pool refuses the connection past its maximum).
POOL_WAIT_S = 2.0
MAX_CONNECTIONS = 64


class RedisUrlError(ValueError):
    """A REDIS_URL this module cannot connect with; the message never carries the password."""


class BlockingSentinelPool(SentinelConnectionPool, BlockingConnectionPool):
    """Sentinel's primary look-up with the blocking pool's wait for a free connection."""


@dataclass(frozen=True)
class SentinelTarget:
    sentinels: list[tuple[str, int]]
    service: str
    db: int
    password: str | None
    tls: bool


def parse_sentinel_url(url: str) -> SentinelTarget:
    parts = urlsplit(url)
    if parts.scheme not in ("redis+sentinel", "rediss+sentinel"):
        raise RedisUrlError(f"not a Sentinel URL: {parts.scheme}://")
    netloc = parts.netloc.rpartition("@")[2]
    password = unquote(parts.password) if parts.password else None
    sentinels: list[tuple[str, int]] = []
    for entry in filter(None, netloc.split(",")):
        if entry.startswith("["):  # [IPv6]:PORT
            host, _, rest = entry[1:].partition("]")
            port = rest.removeprefix(":")
        else:
            host, colon, port = entry.rpartition(":")
            if not colon:
                host, port = entry, ""
        if not host or (port and not port.isdigit()):
            raise RedisUrlError(f"REDIS_URL: {entry!r} is not HOST[:PORT]")
        sentinels.append((host, int(port) if port else SENTINEL_PORT))
    path = [p for p in parts.path.split("/") if p]
    if not sentinels or not path or len(path) > 2 or (len(path) == 2 and not path[1].isdigit()):
        raise RedisUrlError("REDIS_URL: expected redis+sentinel://HOST[:PORT][,HOST[:PORT]]"
                            "/SERVICE[/DB]")
    db = int(path[1]) if len(path) == 2 else int(parse_qs(parts.query).get("db", ["0"])[0])
    return SentinelTarget(sentinels=sentinels, service=unquote(path[0]), db=db,
                          password=password, tls=parts.scheme.startswith("rediss"))


def redis_client(url: str, *, password: str | None = None, sentinel_password: str | None = None,
                 ca_file: str | None = None, socket_timeout_s: float = SOCKET_TIMEOUT_S,
                 max_connections: int = MAX_CONNECTIONS, pool_wait_s: float = POOL_WAIT_S) -> Redis:
    """The bot's Redis client for URL (decoded strings, short timeouts, a bounded blocking pool).
    `password` (REDIS_PASSWORD) wins over one in the URL."""
    common: dict[str, Any] = {"decode_responses": True, "socket_timeout": socket_timeout_s,
                              "socket_connect_timeout": socket_timeout_s}
    tls: dict[str, Any] = {"ssl_ca_certs": ca_file} if ca_file else {}
    if "+sentinel://" in url.split("?")[0]:
        target = parse_sentinel_url(url)
        sentinel_side: dict[str, Any] = {"socket_timeout": socket_timeout_s,
                                         "socket_connect_timeout": socket_timeout_s}
        if sentinel_password:
            sentinel_side["password"] = sentinel_password
        if target.tls:
            sentinel_side |= {"ssl": True, **tls}
        manager = Sentinel(target.sentinels, sentinel_kwargs=sentinel_side)
        primary: dict[str, Any] = dict(common, db=target.db, max_connections=max_connections,
                                       timeout=pool_wait_s)
        if password or target.password:
            primary["password"] = password or target.password
        if target.tls:
            primary |= {"ssl": True, **tls}
        return manager.master_for(target.service, redis_class=Redis,
                                  connection_pool_class=BlockingSentinelPool, **primary)
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise RedisUrlError("REDIS_URL must start with redis://, rediss://, unix://, "
                            "redis+sentinel:// or rediss+sentinel://")
    extra: dict[str, Any] = dict(common)
    if password:
        extra["password"] = password
    if url.startswith("rediss://"):
        extra |= tls
    pool = BlockingConnectionPool.from_url(url, max_connections=max_connections,
                                           timeout=pool_wait_s, **extra)
    return Redis(connection_pool=pool)


def redacted(url: str) -> str:
    """URL for a log line: any password replaced."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    userinfo, _, hosts = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    return parts._replace(netloc=f"{user}:***@{hosts}").geturl()
