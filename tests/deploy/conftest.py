"""Shared paths and the rendered Kustomize trees for the deployment tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy import kustomize_lite

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
BASE = K8S / "base"
OVERLAY = K8S / "overlays" / "example"


def real_kustomize() -> list[str] | None:
    """The real renderer's command line, where one is installed (kustomize, or kubectl's)."""
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    return None


def render_real(directory: Path) -> list[dict[str, Any]]:
    command = real_kustomize()
    if command is None:
        pytest.skip("neither kustomize nor kubectl is installed")
    out = subprocess.run([*command, str(directory)], capture_output=True, text=True, timeout=60)
    if out.returncode:
        raise AssertionError(f"{' '.join(command)} {directory} failed:\n{out.stderr}")
    return [d for d in yaml.safe_load_all(out.stdout) if d]


@pytest.fixture(scope="session")
def overlay() -> list[dict[str, Any]]:
    return kustomize_lite.build(OVERLAY)


@pytest.fixture(scope="session")
def base() -> list[dict[str, Any]]:
    return kustomize_lite.build(BASE)


def one(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind
             and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]
