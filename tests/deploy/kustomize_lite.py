"""A small, offline renderer for the subset of Kustomize that deploy/k8s uses, so the tests can
render the tree on any machine. The real command is `kubectl kustomize deploy/k8s/overlays/example`
(or `kustomize build`); tests/deploy/test_kustomize_lite.py checks that this renderer gives exactly
what the real one gives wherever kubectl or kustomize is installed.

Supported, with Kustomize's semantics: `resources` (YAML files and kustomization directories),
`namespace`, `images` (name, newName, newTag, digest), `replicas` (name, count), `patches`
(JSON 6902 operations add/replace/remove, inline or by path, selected by group/version/kind/name/
namespace), applied in Kustomize's order (patches, namespace, replicas, images), and the default
"legacy" output order. Anything else in a kustomization raises Unsupported rather than being
silently ignored.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
SUPPORTED_FIELDS = {"apiVersion", "kind", "resources", "namespace", "images", "replicas", "patches"}
# Kinds without a namespace (the ones this project could plausibly use).
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
                  "PersistentVolume", "StorageClass", "PriorityClass", "IngressClass",
                  "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}
REPLICA_KINDS = {"Deployment", "ReplicaSet", "ReplicationController", "StatefulSet"}
# Kustomize's legacy sort (api/resid/gvk.go): these kinds first, in this order; then any other
# kind; then these last. Ties: by group/version/kind text, then namespace, then name.
ORDER_FIRST = ["Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition",
               "ServiceAccount", "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding",
               "ClusterRoleBinding", "ConfigMap", "Secret", "Endpoints", "Service", "LimitRange",
               "PriorityClass", "PersistentVolume", "PersistentVolumeClaim", "Deployment",
               "StatefulSet", "CronJob", "PodDisruptionBudget"]
ORDER_LAST = ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]


class Unsupported(ValueError):
    """The kustomization uses something this renderer does not implement."""


def build(directory: str | Path) -> list[dict[str, Any]]:
    """`kustomize build DIRECTORY`: the rendered objects, in Kustomize's output order."""
    return sorted(_build(Path(directory)), key=_legacy_key)


def _build(directory: Path) -> list[dict[str, Any]]:
    kfile = next((directory / n for n in KUSTOMIZATION_FILES if (directory / n).is_file()), None)
    if kfile is None:
        raise FileNotFoundError(f"no kustomization file in {directory}")
    k = yaml.safe_load(kfile.read_text(encoding="utf-8")) or {}
    unknown = set(k) - SUPPORTED_FIELDS
    if unknown:
        raise Unsupported(f"{kfile}: fields {sorted(unknown)} are not supported")
    if k.get("kind", "Kustomization") != "Kustomization":
        raise Unsupported(f"{kfile}: kind {k['kind']}")

    objects: list[dict[str, Any]] = []
    for entry in k.get("resources") or []:
        if "://" in entry or entry.startswith("github.com/"):
            raise Unsupported(f"{kfile}: remote resource {entry}")
        path = (directory / entry).resolve()
        if path.is_dir():
            objects += _build(path)
        else:
            objects += [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    ids = [_id(o) for o in objects]
    duplicates = {i for i in ids if ids.count(i) > 1}
    if duplicates:
        raise ValueError(f"{kfile}: may not add resource with an already registered id: "
                         f"{sorted(duplicates)}")

    for patch in k.get("patches") or []:
        _apply_patch(objects, patch, directory)
    if k.get("namespace"):
        for obj in objects:
            if obj["kind"] not in CLUSTER_SCOPED:
                obj.setdefault("metadata", {})["namespace"] = k["namespace"]
    for rule in k.get("replicas") or []:
        _set_replicas(objects, rule, kfile)
    for rule in k.get("images") or []:
        if set(rule) - {"name", "newName", "newTag", "digest"}:
            raise Unsupported(f"{kfile}: image fields {sorted(set(rule))}")
        for obj in objects:
            _walk_images(obj, rule)
    return objects


# -- identity and order -----------------------------------------------------------------------


def _group_version(obj: dict[str, Any]) -> tuple[str, str]:
    group, _, version = obj["apiVersion"].rpartition("/")
    return group, version


def _id(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj.get("metadata") or {}
    return (obj["apiVersion"], obj["kind"], meta.get("namespace") or "", meta["name"])


def _legacy_key(obj: dict[str, Any]) -> tuple[int, str, str, str]:
    kind = obj["kind"]
    if kind in ORDER_FIRST:
        rank = ORDER_FIRST.index(kind) - len(ORDER_FIRST)
    elif kind in ORDER_LAST:
        rank = 1 + ORDER_LAST.index(kind)
    else:
        rank = 0
    group, version = _group_version(obj)
    meta = obj.get("metadata") or {}
    return (rank, f"{group}_{version}_{kind}", meta.get("namespace") or "", meta["name"])


# -- patches ------------------------------------------------------------------------------------


def _matches(obj: dict[str, Any], target: dict[str, Any]) -> bool:
    if set(target) - {"group", "version", "kind", "name", "namespace"}:
        raise Unsupported(f"patch target fields {sorted(target)}")
    group, version = _group_version(obj)
    meta = obj.get("metadata") or {}
    actual = {"group": group, "version": version, "kind": obj["kind"], "name": meta.get("name", ""),
              "namespace": meta.get("namespace") or ""}
    # Kustomize reads selector values as regular expressions matched against the whole value.
    return all(re.fullmatch(str(want), actual[key]) for key, want in target.items())


def _apply_patch(objects: list[dict[str, Any]], patch: dict[str, Any], directory: Path) -> None:
    if set(patch) - {"target", "patch", "path"}:
        raise Unsupported(f"patch fields {sorted(patch)}")
    text = patch.get("patch")
    if text is None:
        text = (directory / patch["path"]).read_text(encoding="utf-8")
    ops = yaml.safe_load(text)
    if not isinstance(ops, list):
        raise Unsupported("strategic-merge patches are not supported (use JSON 6902 operations)")
    if "target" not in patch:
        raise Unsupported("a JSON 6902 patch needs a target")
    targets = [o for o in objects if _matches(o, patch["target"])]
    if not targets:
        raise ValueError(f"patch target {patch['target']} matches no resource")
    for obj in targets:
        for op in ops:
            _json6902(obj, op)


def _pointer(path: str) -> list[str]:
    if not path.startswith("/"):
        raise ValueError(f"bad JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _json6902(obj: dict[str, Any], op: dict[str, Any]) -> None:
    kind = op.get("op")
    if kind not in ("add", "replace", "remove"):
        raise Unsupported(f"JSON patch op {kind!r}")
    *parents, last = _pointer(op["path"])
    node: Any = obj
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        if kind == "add":
            index = len(node) if last == "-" else int(last)
            if index > len(node):
                raise ValueError(f"{op['path']}: index out of range")
            node.insert(index, copy.deepcopy(op["value"]))
        elif kind == "replace":
            node[int(last)] = copy.deepcopy(op["value"])
        else:
            del node[int(last)]
    else:
        if kind in ("replace", "remove") and last not in node:
            raise ValueError(f"{op['path']}: no such member to {kind}")
        if kind == "remove":
            del node[last]
        else:
            node[last] = copy.deepcopy(op["value"])


# -- replicas and images ------------------------------------------------------------------------


def _set_replicas(objects: list[dict[str, Any]], rule: dict[str, Any], kfile: Path) -> None:
    found = [o for o in objects if o["kind"] in REPLICA_KINDS and o["metadata"]["name"] == rule["name"]]
    if not found:
        raise ValueError(f"{kfile}: replicas: no Deployment/StatefulSet named {rule['name']}")
    for obj in found:
        obj.setdefault("spec", {})["replicas"] = int(rule["count"])


def split_image(image: str) -> tuple[str, str, str]:
    """(name, tag, digest): registry.io:5000/team/app:1.2@sha256:... -> name, '1.2', 'sha256:...'."""
    name, _, digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    tag = ""
    if colon > slash:
        name, tag = name[:colon], name[colon + 1:]
    return name, tag, digest


def _retag(image: str, rule: dict[str, Any]) -> str:
    name, tag, digest = split_image(image)
    if name != rule["name"]:
        return image
    name = rule.get("newName") or name
    if rule.get("digest"):
        return f"{name}@{rule['digest']}"
    if rule.get("newTag") is not None:
        return f"{name}:{rule['newTag']}"
    return name + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")


def _walk_images(node: Any, rule: dict[str, Any]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                for container in value:
                    if isinstance(container, dict) and isinstance(container.get("image"), str):
                        container["image"] = _retag(container["image"], rule)
            _walk_images(value, rule)
    elif isinstance(node, list):
        for item in node:
            _walk_images(item, rule)
