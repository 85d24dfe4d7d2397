"""The two test tiers hold: tests/conftest.py marks a test that uses a process fixture `slow`, and
fails a test not marked slow that starts a process anyway. Run on a throwaway suite of three
tests in this process (pytester), with the same conftest."""

from __future__ import annotations

from pathlib import Path

import pytest

CONFTEST = (Path(__file__).resolve().parent / "conftest.py").read_text(encoding="utf-8")
SUITE = '''
import subprocess, sys
import pytest

@pytest.fixture
def bot():
    yield "a stand-in: PROCESS_FIXTURES names it"

def test_in_process():
    assert sum(range(4)) == 6

def test_uses_the_bot(bot):
    assert bot

def test_starts_a_process_unmarked():
    subprocess.run([sys.executable, "-c", "pass"], check=True)

@pytest.mark.slow
def test_starts_a_process_marked():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
'''


@pytest.mark.slow  # the throwaway suite starts two Pythons
def test_the_fast_tier_holds_no_process(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makeini("[pytest]\nmarkers =\n    slow: starts a process\n")
    pytester.makepyfile(test_suite=SUITE)
    fast = pytester.runpytest_inprocess("-m", "not slow", "-p", "no:cacheprovider")
    fast.assert_outcomes(passed=2, errors=1, deselected=2)
    assert "a test not marked slow started" in fast.stdout.str()
    assert "test_starts_a_process_unmarked" in fast.stdout.str()
    everything = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    everything.assert_outcomes(passed=4, errors=1)  # the unmarked one fails in CI too
