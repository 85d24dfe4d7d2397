"""The two test tiers.

`pytest -m "not slow"` is the fast tier (about a minute): everything in-process, against at most
one redis-server per session (tests/bot/conftest.py). A test that starts a process of its own (the
bot as a server, the CLI as a command, a redis-server of its own, kubectl, a linter) is `slow`: it
runs in CI with the rest (`pytest`). Tests that use a fixture in PROCESS_FIXTURES are marked
`slow` here; a test that starts a process itself carries `@pytest.mark.slow` (or its module's
`pytestmark`). A fast test that starts one anyway fails, naming what it started, so the fast tier
stays fast without anyone timing it.
"""

from __future__ import annotations

import multiprocessing.process
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

pytest_plugins = ("pytester",)  # tests/test_tiers.py runs a throwaway suite under this conftest

# fixtures that start a process: the bot as a server and a redis-server of a test's own (per
# test), and tests/deploy's trees as kubectl renders them (once a session, but kubectl all the same)
PROCESS_FIXTURES = frozenset({"bot", "make_bot", "own_redis", "base", "overlay"})


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if PROCESS_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _fast_tests_start_no_process(request: pytest.FixtureRequest,
                                 monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """In a test not marked slow, record every process started (subprocess, multiprocessing) and
    fail the test at its end. Session fixtures (the shared redis-server) start before this."""
    if request.node.get_closest_marker("slow"):
        yield
        return
    started: list[str] = []
    popen_init = subprocess.Popen.__init__
    process_start = multiprocessing.process.BaseProcess.start

    def recording_popen(self: subprocess.Popen, args: Any, *rest: Any, **kw: Any) -> None:
        started.append(str(args if isinstance(args, str) else args[0]))
        popen_init(self, args, *rest, **kw)

    def recording_start(self: multiprocessing.process.BaseProcess) -> None:
        started.append(f"multiprocessing {self.name}")
        process_start(self)

    monkeypatch.setattr(subprocess.Popen, "__init__", recording_popen)
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", recording_start)
    yield
    if started:
        pytest.fail(f"a test not marked slow started {', '.join(started)}: mark it "
                    "@pytest.mark.slow (tests/conftest.py), or keep it in-process", pytrace=False)
