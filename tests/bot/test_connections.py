"""bot.connections against real servers: a password-protected primary, its replica and a real
Sentinel (redis-server --sentinel) watching them, reached through REDIS_URL alone; the client
follows a failover to the new primary."""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis as redis_py
from redis.exceptions import AuthenticationError, ResponseError

from bot import connections
from bot.app import redis_client
from bot.settings import Settings
from tests.harness import REDIS_SERVER, free_port

PASSWORD = "s3cret-primary"
SERVICE = "gpusize"
pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")


def wait_port(port: int, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def wait(condition, timeout: float = 20, what: str = "") -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


class Cluster:
    """A primary, a replica and one Sentinel, on loopback ports of their own."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.primary, self.replica, self.sentinel = free_port(), free_port(), free_port()
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        common = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                  "--requirepass", PASSWORD, "--masterauth", PASSWORD]
        for port, extra in ((self.primary, []),
                            (self.replica, ["--replicaof", "127.0.0.1", str(self.primary)])):
            folder = self.directory / str(port)
            folder.mkdir()
            self.processes.append(subprocess.Popen(
                [REDIS_SERVER, "--port", str(port), "--dir", str(folder), *common, *extra],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            wait_port(port)
        conf = self.directory / "sentinel.conf"  # Sentinel rewrites its own file: a copy here
        conf.write_text("\n".join([
            f"port {self.sentinel}", "bind 127.0.0.1", f"dir {self.directory}",
            f"sentinel monitor {SERVICE} 127.0.0.1 {self.primary} 1",
            f"sentinel auth-pass {SERVICE} {PASSWORD}",
            f"sentinel down-after-milliseconds {SERVICE} 1000",
            f"sentinel failover-timeout {SERVICE} 10000", ""]))
        self.processes.append(subprocess.Popen([REDIS_SERVER, str(conf), "--sentinel"],
                                               stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL))
        wait_port(self.sentinel)
        # the Sentinel has found the replica, and the replica has synchronised
        wait(lambda: self.sentinel_says("SENTINEL", "REPLICAS", SERVICE), what="the replica")
        wait(lambda: self.node(self.replica).info("replication").get("master_link_status")
             == "up", what="replication")

    def node(self, port: int) -> redis_py.Redis:
        return redis_py.Redis(port=port, password=PASSWORD, decode_responses=True)

    def sentinel_says(self, *command: str) -> object:
        return redis_py.Redis(port=self.sentinel, decode_responses=True).execute_command(*command)

    def primary_port(self) -> int:
        return int(self.sentinel_says("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)[1])

    @property
    def url(self) -> str:
        return f"redis+sentinel://127.0.0.1:{self.sentinel}/{SERVICE}/0"

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.wait(timeout=10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    found = Cluster(tmp_path_factory.mktemp("sentinel"))
    try:
        found.start()
        yield found
    finally:
        found.stop()


def test_sentinel_urls_parse() -> None:
    target = connections.parse_sentinel_url(
        "rediss+sentinel://:pw%40x@s1:26380,s2,[::1]:26381/mymaster/3")
    assert target.sentinels == [("s1", 26380), ("s2", 26379), ("::1", 26381)]
    assert (target.service, target.db, target.password, target.tls) == ("mymaster", 3, "pw@x", True)
    assert connections.parse_sentinel_url("redis+sentinel://s1/m").db == 0
    for bad in ("redis+sentinel://s1", "redis+sentinel:///m", "redis+sentinel://s1:x/m",
                "redis+sentinel://s1/m/zero"):
        with pytest.raises(connections.RedisUrlError):
            connections.parse_sentinel_url(bad)


def test_the_settings_take_every_scheme_and_hide_passwords() -> None:
    base = {"slack_bot_token": "xoxb-1", "slack_signing_secret": "s"}
    for url in ("redis://r:6379/0", "rediss://r:6380/0", "unix:///run/redis.sock",
                "redis+sentinel://s1,s2/gpusize/0", "rediss+sentinel://s1/gpusize"):
        assert Settings(**base, redis_url=url).redis_url == url
    with pytest.raises(ValueError, match="must start with"):
        Settings(**base, redis_url="http://r:6379")
    assert connections.redacted("redis://:hunter2@r:6379/0") == "redis://:***@r:6379/0"
    assert "hunter2" not in connections.redacted("redis+sentinel://u:hunter2@s1,s2/m/0")


def test_rediss_carries_the_ca_bundle() -> None:
    client = connections.redis_client("rediss://r:6380/0", password="pw", ca_file="/ca.pem")
    pool = client.connection_pool
    assert pool.connection_kwargs["ssl_ca_certs"] == "/ca.pem"
    assert pool.connection_kwargs["password"] == "pw"
    assert pool.connection_class.__name__ == "SSLConnection"
    sentinel = connections.redis_client("rediss+sentinel://s1/m", ca_file="/ca.pem")
    assert sentinel.connection_pool.connection_class.__name__ == "SentinelManagedSSLConnection"


@pytest.mark.slow
def test_through_a_real_sentinel_with_a_password_and_a_failover(cluster: Cluster) -> None:
    settings = Settings(slack_bot_token="xoxb-1", slack_signing_secret="s",
                        redis_url=cluster.url, redis_password=PASSWORD)

    async def round_trip(key: str) -> str | None:
        client = redis_client(settings)
        try:
            await client.set(key, "kept")
            return await client.get(key)
        finally:
            await client.aclose()

    assert asyncio.run(round_trip("before")) == "kept"
    first = cluster.primary_port()
    assert first == cluster.primary
    # without the password the primary refuses
    bare = Settings(slack_bot_token="xoxb-1", slack_signing_secret="s", redis_url=cluster.url)

    async def unauthenticated() -> None:
        client = redis_client(bare)
        try:
            await client.set("x", "y")
        finally:
            await client.aclose()

    with pytest.raises((AuthenticationError, ResponseError)):
        asyncio.run(unauthenticated())

    # one long-lived client (as the bot keeps) follows the failover to the new primary
    async def across_failover() -> tuple[str | None, int]:
        client = redis_client(settings)
        try:
            await client.set("k", "1")
            cluster.sentinel_says("SENTINEL", "FAILOVER", SERVICE)
            await asyncio.to_thread(wait, lambda: cluster.primary_port() == cluster.replica
                                    and cluster.node(cluster.primary).info("replication")["role"]
                                    == "slave", 30, "the failover")
            deadline = time.monotonic() + 20
            while True:  # the connection to the demoted primary is refused once (READONLY)
                try:
                    await client.set("after", "written")
                    break
                except (ResponseError, redis_py.exceptions.ConnectionError):
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.2)
            return await client.get("after"), client.connection_pool.master_address[1]
        finally:
            await client.aclose()

    value, port = asyncio.run(across_failover())
    assert value == "written" and port == cluster.replica
    assert cluster.node(cluster.replica).get("after") == "written"
    assert cluster.node(cluster.replica).get("before") == "kept"


def make_certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A private CA and a server certificate for 127.0.0.1 signed by it (openssl)."""
    ca_key, ca, key, csr, cert = (folder / n for n in ("ca.key", "ca.pem", "server.key",
                                                       "server.csr", "server.pem"))
    ext = folder / "ext.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for command in (
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out",
             str(ca), "-days", "2", "-subj", "/CN=gpusize test CA"],
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
             "-subj", "/CN=127.0.0.1"],
            ["x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
             "-CAcreateserial", "-out", str(cert), "-days", "2", "-extfile", str(ext)]):
        subprocess.run(["openssl", *command], check=True, capture_output=True, timeout=60)
    return ca, cert, key


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the certificates")
def test_a_managed_redis_over_tls_with_a_private_ca(tmp_path: Path) -> None:
    """rediss:// as a managed Redis is reached: TLS verified against REDIS_CA_FILE, AUTH from
    REDIS_PASSWORD; without the CA the certificate is refused."""
    ca, cert, key = make_certificates(tmp_path)
    port = free_port()
    server = subprocess.Popen(
        [REDIS_SERVER, "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
         "--tls-cert-file", str(cert), "--tls-key-file", str(key), "--tls-ca-cert-file", str(ca),
         "--tls-auth-clients", "no", "--requirepass", PASSWORD, "--save", "",
         "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port)
        url = f"rediss://127.0.0.1:{port}/0"
        settings = Settings(slack_bot_token="xoxb-1", slack_signing_secret="s", redis_url=url,
                            redis_password=PASSWORD, redis_ca_file=str(ca))

        async def round_trip(chosen: Settings) -> str | None:
            client = redis_client(chosen)
            try:
                await client.set("tls", "kept")
                return await client.get("tls")
            finally:
                await client.aclose()

        assert asyncio.run(round_trip(settings)) == "kept"
        untrusted = settings.model_copy(update={"redis_ca_file": None})
        with pytest.raises(redis_py.exceptions.ConnectionError):
            asyncio.run(round_trip(untrusted))
    finally:
        server.terminate()
        server.wait(timeout=10)
