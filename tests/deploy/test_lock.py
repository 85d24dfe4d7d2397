"""The image installs from hashed lock files (deploy/requirements*.lock, made by scripts/lock),
and deploy/release.sh tags by version and commit, pins the base and the overlay by digest
(issue 26: every build was 0.1.0, the base and every dependency floated)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.deploy.conftest import DEPLOY, OVERLAY, ROOT

LOCK = DEPLOY / "requirements.lock"
BUILD_LOCK = DEPLOY / "requirements-build.lock"
PIN = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)==(?P<version>\S+) \\$")
HASH = re.compile(r"^    --hash=sha256:[0-9a-f]{64}( \\)?$")
# the image's Python: python:3.11-slim's newest 3.11, or Debian bookworm's 3.11.2 (smoke.sh's base
# made from Debian packages); markers are read as pip would on either
IMAGE_PYTHONS = [{**default_environment(), "python_version": "3.11", "python_full_version": full,
                  "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
                  "implementation_name": "cpython", "platform_python_implementation": "CPython"}
                 for full in ("3.11.2", "3.11.14")]


def pins(path: Path) -> dict[str, str]:
    """name -> version; fails on any line that is not a pin, a hash, or a comment."""
    found: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    hashes_after: dict[str, int] = {}
    current = None
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if match := PIN.match(line):
            current = canonicalize_name(match["name"])
            assert current not in found, f"{path.name}: {current} twice"
            found[current] = match["version"]
            hashes_after[current] = 0
        else:
            assert HASH.match(line) and current, f"{path.name}: not a pin or a hash: {line!r}"
            hashes_after[current] += 1
    assert all(hashes_after.values()), f"{path.name}: pins without a hash: " \
        f"{[n for n, c in hashes_after.items() if not c]}"
    return found


def satisfied(requirement: Requirement, locked: dict[str, str], extras: set[str]) -> bool:
    if requirement.marker and not any(requirement.marker.evaluate({**environment, "extra": e})
                                      for environment in IMAGE_PYTHONS for e in extras | {""}):
        return True  # for neither of the image's Pythons
    name = canonicalize_name(requirement.name)
    return name in locked and requirement.specifier.contains(locked[name], prereleases=True)


def test_every_dependency_is_pinned_with_hashes_and_satisfies_pyproject() -> None:
    locked = pins(LOCK)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    wanted = project["project"]["dependencies"] + project["project"]["optional-dependencies"]["hub"]
    for spec in wanted:
        assert satisfied(Requirement(spec), locked, set()), f"{spec}: locked {locked.get(spec)}"
    build = pins(BUILD_LOCK)
    for spec in project["build-system"]["requires"]:
        assert satisfied(Requirement(spec), build, set()), spec
    assert "scripts/lock" in LOCK.read_text(encoding="utf-8").split("\n\n")[0]


def test_the_lock_is_closed_under_the_installed_metadata() -> None:
    """Every requirement of a locked package (as the venv's copy of that same version declares
    it) is locked too: pip's --no-deps install would otherwise miss it."""
    locked = pins(LOCK)
    checked = 0
    for name, version in locked.items():
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        if dist.version != version:
            continue
        for spec in dist.requires or []:
            requirement = Requirement(spec)
            if requirement.marker and "extra" in str(requirement.marker):
                continue  # an extra nobody asked for
            assert satisfied(requirement, locked, set()), f"{name} {version} needs {spec}"
        checked += 1
    if checked < 5:  # the test venv resolves afresh: months later its versions move on
        pytest.skip(f"only {checked} locked versions are the venv's: scripts/lock refreshes it")


def test_the_image_installs_only_from_the_locks() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    runs = [" ".join(r.split()) for r in re.findall(r"^RUN (.*?)(?<!\\)$", dockerfile.replace(
        "\\\n", "\\ "), re.M | re.S)]
    installs = [r for r in runs if "pip install" in r]
    locked = [r for r in installs if "--require-hashes" in r]
    assert locked and all("-r deploy/requirements.lock" in r and "-r deploy/requirements-build.lock"
                          in r and "--no-deps" in r for r in locked)
    project = [r for r in installs if r not in locked]
    assert project and all({"--no-deps", "--no-index", "--no-build-isolation"} <= set(r.split())
                           for r in project), project
    assert "COPY deploy/requirements.lock deploy/requirements-build.lock" in dockerfile
    ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    assert {"!deploy/requirements.lock", "!deploy/requirements-build.lock"} <= set(ignore)


FAKE_ENGINE = r"""#!/usr/bin/env bash
# records each call; answers as docker would for what release.sh asks
echo "$*" >>"$FAKE_LOG"
case "$1 $2" in
  "image inspect") last=${*: -1}; echo "${last%%:*}@sha256:$(printf %064d 7)" ;;
esac
exit 0
"""


@pytest.mark.slow  # git, deploy/release.sh and kubectl as commands
@pytest.mark.skipif(shutil.which("git") is None, reason="git is missing")
def test_release_tags_by_version_and_commit_and_pins_digests(tmp_path: Path) -> None:
    engine = tmp_path / "docker"
    engine.write_text(FAKE_ENGINE, encoding="utf-8")
    engine.chmod(0o755)
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    shutil.copy(OVERLAY / "kustomization.yaml", overlay / "kustomization.yaml")
    log = tmp_path / "calls"
    environment = {**os.environ, "ENGINE": str(engine), "FAKE_LOG": str(log),
                   "IMAGE": "registry.example.com/team/gpusize", "ALLOW_DIRTY": "0",
                   "PIP_INDEX_URL": "https://mirrors.example.cn/pypi/simple/",
                   "CA_BUNDLE": "/etc/ssl/certs/ca-certificates.crt", "DEBIAN_MIRROR": ""}
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.strip()
    out = subprocess.run([str(DEPLOY / "release.sh"), "--push", "--kustomization", str(overlay)],
                         env=environment, capture_output=True, text=True, timeout=60)
    if dirty:  # a working tree with changes is never released
        assert out.returncode == 2 and "uncommitted" in out.stderr
        return
    assert out.returncode == 0, out.stderr
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.strip()
    tag = f"{version}-g{sha}"
    calls = log.read_text().splitlines()
    build = next(c for c in calls if c.startswith("build "))
    assert f"-t registry.example.com/team/gpusize:{tag}" in build
    assert "PYTHON_IMAGE=python@sha256:" in build  # the base by digest, not the moving tag
    assert "org.opencontainers.image.revision=" in build
    # mirrors and a proxy's CA reach the build as the Dockerfile's arguments and secret
    assert "--build-arg PIP_INDEX_URL=https://mirrors.example.cn/pypi/simple/" in build
    assert "--secret id=ca_bundle,src=/etc/ssl/certs/ca-certificates.crt" in build
    assert "DEBIAN_MIRROR" not in build  # unset: the Dockerfile's default
    assert any(c == f"push registry.example.com/team/gpusize:{tag}" for c in calls)
    pinned = (overlay / "kustomization.yaml").read_text(encoding="utf-8")
    assert f"newTag: {tag}" in pinned and f"digest: sha256:{7:064d}" in pinned
    assert out.stdout.strip().endswith(f"gpusize:{tag}@sha256:{7:064d}")
    kubectl = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
    if kubectl:
        (overlay / "namespace.yaml").write_text((OVERLAY / "namespace.yaml").read_text())
        rel = os.path.relpath(DEPLOY / "k8s" / "base", overlay)
        (overlay / "kustomization.yaml").write_text(pinned.replace("../../base", rel))
        rendered = subprocess.run([kubectl, "kustomize", str(overlay)], capture_output=True,
                                  text=True, timeout=60, check=True).stdout
        assert f"image: registry.example.com/team/gpusize:{tag}@sha256:{7:064d}" in rendered
