"""deploy/k8s/base/redis.conf read by a real redis-server (the file Kubernetes and Compose both
use): it starts, persists as documented, and a full Redis refuses writes instead of evicting."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest
import redis

from tests.deploy.conftest import BASE
from tests.harness import free_port

REDIS_SERVER = shutil.which("redis-server")
pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")


@pytest.mark.slow
def test_the_bundled_conf_starts_a_datastore_that_refuses_when_full(tmp_path: Path) -> None:
    port = free_port()
    # as in the manifests: the file, then the password on the command line; here on loopback,
    # in a folder of the test's own
    server = subprocess.Popen([REDIS_SERVER, str(BASE / "redis.conf"), "--requirepass", "pw",
                               "--port", str(port), "--bind", "127.0.0.1", "--dir", str(tmp_path)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        client = redis.Redis(port=port, password="pw", decode_responses=True)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.exceptions.ConnectionError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(server.stdout.read().decode()[-2000:]) from None
                time.sleep(0.05)
        config = client.config_get("*")
        assert config["maxmemory-policy"] == "noeviction"
        assert int(config["maxmemory"]) == 384 * 1024 * 1024
        assert config["appendonly"] == "yes" and config["appendfsync"] == "everysec"
        assert config["save"]  # snapshots for backups
        with pytest.raises(redis.exceptions.AuthenticationError):
            redis.Redis(port=port).ping()
        # full: writes are refused with OOM, and nothing stored is evicted
        client.set("thread", "kept")
        client.config_set("maxmemory", str(client.info("memory")["used_memory"] + 64 * 1024))
        with pytest.raises(redis.exceptions.OutOfMemoryError):  # the server's OOM reply
            for n in range(10_000):
                client.set(f"filler:{n}", "x" * 1024)
        assert client.get("thread") == "kept" and client.info("stats")["evicted_keys"] == 0
        assert (tmp_path / "appendonlydir").is_dir()  # the AOF, where the volume is
    finally:
        server.terminate()
        server.wait(timeout=10)
