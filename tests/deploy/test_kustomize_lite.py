"""The offline renderer (kustomize_lite) gives what Kustomize gives: hand-checked expectations on
small trees, and, where kubectl or kustomize is installed, equality with the real renderer on those
trees and on deploy/k8s itself."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.deploy import kustomize_lite
from tests.deploy.conftest import BASE, OVERLAY, real_kustomize, render_real

needs_real = pytest.mark.skipif(real_kustomize() is None,
                                reason="neither kustomize nor kubectl is installed")


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


TREE = {
    "base/kustomization.yaml": """\
        resources: [app.yaml, job.yaml, svc.yaml]
        images:
          - name: app
            newTag: "1.0"
        """,
    "base/app.yaml": """\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: app}
        spec:
          replicas: 1
          selector: {matchLabels: {a: b}}
          template:
            metadata: {labels: {a: b}}
            spec:
              initContainers: [{name: init, image: "app:0.9"}]
              containers:
                - {name: app, image: app, args: [serve]}
                - {name: side, image: "registry.io:5000/team/side:2"}
                - {name: pinned, image: "cache@sha256:aaaa"}
        ---
        apiVersion: apps/v1
        kind: StatefulSet
        metadata: {name: db}
        spec:
          serviceName: db
          selector: {matchLabels: {c: d}}
          template:
            metadata: {labels: {c: d}}
            spec: {containers: [{name: db, image: "redis:7"}]}
        """,
    "base/job.yaml": """\
        apiVersion: batch/v1
        kind: CronJob
        metadata: {name: tick}
        spec:
          schedule: "*/5 * * * *"
          jobTemplate:
            spec:
              template:
                spec:
                  restartPolicy: Never
                  containers: [{name: tick, image: "app:old"}]
        """,
    "base/svc.yaml": """\
        apiVersion: v1
        kind: Service
        metadata: {name: app}
        spec: {ports: [{port: 80}]}
        ---
        apiVersion: networking.k8s.io/v1
        kind: Ingress
        metadata: {name: app}
        spec:
          rules:
            - host: a.example.com
              http:
                paths:
                  - {path: /x, pathType: Exact, backend: {service: {name: app, port: {number: 80}}}}
        """,
    "overlay/kustomization.yaml": """\
        namespace: team
        resources: [ns.yaml, ../base]
        images:
          - {name: app, newName: reg.example.com/app, newTag: "2.0"}
          - {name: registry.io:5000/team/side, newName: mirror.io/side}
          - {name: cache, digest: "sha256:bbbb"}
        replicas:
          - {name: app, count: 4}
          - {name: db, count: 1}
        patches:
          - target: {group: networking.k8s.io, version: v1, kind: Ingress, name: app}
            patch: |-
              - op: replace
                path: /spec/rules/0/host
                value: b.example.org
              - op: add
                path: /spec/rules/0/http/paths/-
                value: {path: /y, pathType: Prefix, backend: {service: {name: app, port: {number: 80}}}}
              - op: add
                path: /metadata/annotations
                value: {note: "a~b/c"}
          - target: {kind: Deployment}
            path: remove-args.yaml
        """,
    "overlay/remove-args.yaml": """\
        - op: remove
          path: /spec/template/spec/containers/0/args
        """,
    "overlay/ns.yaml": """\
        apiVersion: v1
        kind: Namespace
        metadata: {name: team}
        """,
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    write(tmp_path, TREE)
    return tmp_path


def images(objects: list[dict[str, Any]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}

    def walk(node: Any, name: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("containers", "initContainers"):
                    out.setdefault(name, []).extend(c["image"] for c in value)
                walk(value, name)
        elif isinstance(node, list):
            for item in node:
                walk(item, name)

    for obj in objects:
        walk(obj, f"{obj['kind']}/{obj['metadata']['name']}")
    return out


def test_hand_checked_semantics(tree: Path) -> None:
    out = kustomize_lite.build(tree / "overlay")
    # legacy order: Namespace, Service, Deployment, StatefulSet, CronJob, then the rest
    assert [o["kind"] for o in out] == ["Namespace", "Service", "Deployment", "StatefulSet",
                                        "CronJob", "Ingress"]
    assert all(o["metadata"].get("namespace") == "team" for o in out[1:])
    assert "namespace" not in out[0]["metadata"]
    assert images(out) == {
        "Deployment/app": ["reg.example.com/app:2.0",  # the init container
                           "reg.example.com/app:2.0", "mirror.io/side:2", "cache@sha256:bbbb"],
        "StatefulSet/db": ["redis:7"],
        "CronJob/tick": ["reg.example.com/app:2.0"],
    }
    deployment, statefulset = out[2], out[3]
    assert deployment["spec"]["replicas"] == 4 and statefulset["spec"]["replicas"] == 1
    assert "args" not in deployment["spec"]["template"]["spec"]["containers"][0]
    ingress = out[-1]
    assert ingress["spec"]["rules"][0]["host"] == "b.example.org"
    assert [p["path"] for p in ingress["spec"]["rules"][0]["http"]["paths"]] == ["/x", "/y"]
    assert ingress["metadata"]["annotations"] == {"note": "a~b/c"}


@needs_real
def test_same_as_real_kustomize_on_a_tree_using_every_supported_feature(tree: Path) -> None:
    assert kustomize_lite.build(tree / "overlay") == render_real(tree / "overlay")
    assert kustomize_lite.build(tree / "base") == render_real(tree / "base")


@needs_real
@pytest.mark.parametrize("directory", [BASE, OVERLAY], ids=["base", "overlay"])
def test_same_as_real_kustomize_on_deploy_k8s(directory: Path) -> None:
    assert kustomize_lite.build(directory) == render_real(directory)


@pytest.mark.parametrize("extra", [
    "namePrefix: x-\n",
    "commonLabels: {a: b}\n",
    "patches:\n  - patch: |-\n      apiVersion: v1\n      kind: Service\n      metadata: {name: app}\n",
    "patches:\n  - target: {kind: Service}\n    patch: '[{op: move, from: /a, path: /b}]'\n",
    "patches:\n  - target: {labelSelector: a=b}\n    patch: '[{op: remove, path: /spec}]'\n",
    "resources: [https://example.com/x.yaml]\n",
])
def test_anything_else_is_refused_not_ignored(tmp_path: Path, extra: str) -> None:
    write(tmp_path, {"svc.yaml": TREE["base/svc.yaml"]})
    (tmp_path / "kustomization.yaml").write_text(
        ("resources: [svc.yaml]\n" if not extra.startswith("resources") else "") + extra)
    with pytest.raises(kustomize_lite.Unsupported):
        kustomize_lite.build(tmp_path)


def test_mistakes_are_errors(tmp_path: Path) -> None:
    write(tmp_path, {"svc.yaml": TREE["base/svc.yaml"]})
    (tmp_path / "kustomization.yaml").write_text(
        "resources: [svc.yaml]\npatches:\n  - target: {kind: Ingress, name: nope}\n"
        "    patch: '[{op: replace, path: /spec, value: {}}]'\n")
    with pytest.raises(ValueError, match="matches no resource"):
        kustomize_lite.build(tmp_path)
    (tmp_path / "kustomization.yaml").write_text("resources: [svc.yaml, svc.yaml]\n")
    with pytest.raises(ValueError, match="already registered"):
        kustomize_lite.build(tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        "resources: [svc.yaml]\nreplicas: [{name: nope, count: 2}]\n")
    with pytest.raises(ValueError, match="replicas"):
        kustomize_lite.build(tmp_path)


@pytest.mark.parametrize(("image", "parts"), [
    ("app", ("app", "", "")),
    ("app:1.2", ("app", "1.2", "")),
    ("registry.io:5000/team/app", ("registry.io:5000/team/app", "", "")),
    ("registry.io:5000/team/app:1.2@sha256:ab", ("registry.io:5000/team/app", "1.2", "sha256:ab")),
])
def test_image_references_split_like_docker(image: str, parts: tuple[str, str, str]) -> None:
    assert kustomize_lite.split_image(image) == parts
