"""deploy/k8s: every rendered object is valid Kubernetes (strict JSON schemas shipped by the
kubernetes-validate package, offline), and the objects fit together the way the bot needs."""

from __future__ import annotations

import re
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import latest_version

from bot.settings import Settings
from tests.deploy.conftest import BASE, K8S, OVERLAY, one

# 1.27: the oldest release where CronJob.spec.timeZone is GA; then the newest schemas shipped.
VERSIONS = ["1.27", ".".join(latest_version().split(".")[:2])]
SECRET = "gpusize-slack"
SECRET_KEYS = {"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"}
BOT_LABELS = {"app.kubernetes.io/name": "gpusize", "app.kubernetes.io/component": "bot"}


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    if obj["kind"] == "CronJob":
        return obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return obj["spec"]["template"]["spec"]


def env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("tree", ["base", "overlay"])
def test_every_object_is_valid_kubernetes(tree: str, version: str, request: Any) -> None:
    objects = request.getfixturevalue(tree)
    assert len(objects) >= 9
    for obj in objects:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as err:
            pytest.fail(f"{obj['kind']}/{obj['metadata']['name']} (Kubernetes {version}): "
                        f"{err.message} at {'/'.join(map(str, err.absolute_path))}")


def test_the_secret_example_is_valid_and_never_applied(base: list[dict[str, Any]],
                                                        overlay: list[dict[str, Any]]) -> None:
    example = yaml.safe_load((K8S / "secret.example.yaml").read_text(encoding="utf-8"))
    kubernetes_validate.validate(example, VERSIONS[-1], strict=True)
    assert example["metadata"]["name"] == SECRET and set(example["stringData"]) == SECRET_KEYS
    assert not [o for o in base + overlay if o["kind"] == "Secret"]
    for kfile in K8S.rglob("kustomization.yaml"):
        resources = yaml.safe_load(kfile.read_text(encoding="utf-8"))["resources"]
        assert not [r for r in resources if "secret" in r.lower()], kfile


def test_bot_deployment(base: list[dict[str, Any]]) -> None:
    deployment = one(base, "Deployment", "gpusize")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["selector"]["matchLabels"] == BOT_LABELS
    template = deployment["spec"]["template"]
    assert BOT_LABELS.items() <= template["metadata"]["labels"].items()
    spec = template["spec"]
    (bot,) = spec["containers"]
    assert bot["image"] == "gpusize:0.1.0"
    assert bot.get("args", ["gpusize", "serve"]) == ["gpusize", "serve"]
    assert {p["name"]: p["containerPort"] for p in bot["ports"]} == {"http": 3000, "metrics": 9100}
    assert bot["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert bot["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    variables = env(bot)
    for key in SECRET_KEYS:
        assert variables[key] == {"secretKeyRef": {"name": SECRET, "key": key}}
    assert variables["PORT"] == "3000"
    assert variables["METRICS_PORT"] == "9100" and variables["METRICS_HOST"] == "0.0.0.0"
    annotations = template["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == variables["METRICS_PORT"]
    # the default (CPUs - 1) counts the node's CPUs, not the pod's limit
    workers = int(variables["GPUSIZE_WORKERS"])
    assert 1 <= workers <= float(bot["resources"]["limits"]["cpu"])
    requests, limits = bot["resources"]["requests"], bot["resources"]["limits"]
    assert {"cpu", "memory"} <= set(requests) and {"cpu", "memory"} <= set(limits)


def test_redis_url_points_at_the_in_cluster_redis(base: list[dict[str, Any]]) -> None:
    service = one(base, "Service", "gpusize-redis")
    port = service["spec"]["ports"][0]["port"]
    statefulset = one(base, "StatefulSet", "gpusize-redis")
    assert statefulset["spec"]["serviceName"] == service["metadata"]["name"]
    assert service["spec"]["selector"].items() <= \
        statefulset["spec"]["template"]["metadata"]["labels"].items()
    for obj in (one(base, "Deployment", "gpusize"), one(base, "CronJob")):
        for container in pod_spec(obj)["containers"]:
            url = env(container)["REDIS_URL"]
            assert re.fullmatch(rf"redis://{service['metadata']['name']}:{port}/\d+", url), url


def test_redis_keeps_an_append_only_file_on_a_claimed_volume(base: list[dict[str, Any]]) -> None:
    statefulset = one(base, "StatefulSet", "gpusize-redis")
    (redis,) = pod_spec(statefulset)["containers"]
    assert redis["image"].startswith("redis:7")
    words = redis.get("command", []) + redis.get("args", [])
    assert words[words.index("--appendonly") + 1] == "yes"
    (claim,) = statefulset["spec"]["volumeClaimTemplates"]
    mount = next(m for m in redis["volumeMounts"] if m["name"] == claim["metadata"]["name"])
    assert mount["mountPath"] == "/data"
    assert "--dir" not in words or words[words.index("--dir") + 1] == "/data"
    for probe in ("readinessProbe", "livenessProbe"):
        assert redis[probe]["exec"]["command"] == ["redis-cli", "ping"]


def test_everything_runs_as_non_root_with_a_read_only_root(base: list[dict[str, Any]]) -> None:
    workloads = [o for o in base if o["kind"] in ("Deployment", "StatefulSet", "CronJob")]
    assert len(workloads) == 3
    for obj in workloads:
        spec = pod_spec(obj)
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] > 0
        for container in spec["containers"]:
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True
            assert context["allowPrivilegeEscalation"] is False
            assert context["capabilities"]["drop"] == ["ALL"]
            assert {"cpu", "memory"} <= set(container["resources"]["limits"])
            # what the process writes lives on mounted volumes
            assert all(m["name"] in {v["name"] for v in spec.get("volumes", [])}
                       or obj["kind"] == "StatefulSet" for m in container["volumeMounts"])
        assert spec.get("automountServiceAccountToken") is False


def test_only_slack_events_is_public(base: list[dict[str, Any]]) -> None:
    ingress = one(base, "Ingress", "gpusize")
    service = one(base, "Service", "gpusize")
    assert service["spec"].get("type", "ClusterIP") == "ClusterIP"
    assert [o for o in base if o["kind"] == "Ingress"] == [ingress]
    assert "defaultBackend" not in ingress["spec"]
    paths = [p for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]]
    assert [(p["path"], p["pathType"]) for p in paths] == [("/slack/events", "Exact")]
    backend = paths[0]["backend"]["service"]
    assert backend["name"] == service["metadata"]["name"]
    assert backend["port"]["name"] in {p["name"] for p in service["spec"]["ports"]}
    assert service["spec"]["selector"] == BOT_LABELS
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    hosts = {rule["host"] for rule in ingress["spec"]["rules"]}
    assert hosts == {h for tls in ingress["spec"]["tls"] for h in tls["hosts"]}


def test_metrics_have_a_port_and_a_service_of_their_own(base: list[dict[str, Any]]) -> None:
    """Issue 16: /metrics is not on the port the Ingress forwards to, and only the monitoring
    namespace may reach it."""
    public = one(base, "Service", "gpusize")
    assert [p["targetPort"] for p in public["spec"]["ports"]] == ["http"]
    metrics = one(base, "Service", "gpusize-metrics")
    assert [p["targetPort"] for p in metrics["spec"]["ports"]] == ["metrics"]
    assert metrics["spec"]["selector"] == BOT_LABELS
    policy = one(base, "NetworkPolicy", "gpusize-bot")
    assert policy["spec"]["podSelector"]["matchLabels"] == BOT_LABELS
    by_port = {rule["ports"][0]["port"]: rule.get("from") for rule in policy["spec"]["ingress"]}
    assert by_port["http"] is None  # the Ingress controller, wherever it runs
    assert by_port["metrics"] == [{"namespaceSelector": {"matchLabels": {
        "kubernetes.io/metadata.name": "monitoring"}}}]


def test_autoscaler_scales_the_bot_on_cpu(base: list[dict[str, Any]]) -> None:
    hpa = one(base, "HorizontalPodAutoscaler", "gpusize")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                             "name": "gpusize"}
    assert hpa["spec"]["minReplicas"] >= 2 and hpa["spec"]["maxReplicas"] > hpa["spec"]["minReplicas"]
    (metric,) = hpa["spec"]["metrics"]
    assert metric["type"] == "Resource" and metric["resource"]["name"] == "cpu"
    assert 0 < metric["resource"]["target"]["averageUtilization"] <= 100


def test_digest_cronjob(base: list[dict[str, Any]]) -> None:
    cron = one(base, "CronJob", "gpusize-digest")
    assert cron["apiVersion"] == "batch/v1"
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    assert cron["spec"]["timeZone"] == "Asia/Shanghai"
    assert cron["spec"]["schedule"] == "*/5 * * * *"
    spec = pod_spec(cron)
    assert spec["restartPolicy"] == "Never"
    (digest,) = spec["containers"]
    assert digest.get("command", []) + digest.get("args", []) == ["gpusize", "digest", "run"]
    assert digest["image"] == one(base, "Deployment", "gpusize")["spec"]["template"]["spec"][
        "containers"][0]["image"]
    variables = env(digest)
    for key in SECRET_KEYS:
        assert variables[key] == {"secretKeyRef": {"name": SECRET, "key": key}}
    # the CronJob is the one trigger: the replicas do not run the in-process scheduler too
    bot = one(base, "Deployment", "gpusize")["spec"]["template"]["spec"]["containers"][0]
    assert "digest_scheduler" in Settings.model_fields
    assert env(bot)["DIGEST_SCHEDULER"] == "false"


def test_redis_takes_connections_from_gpusize_pods_only(base: list[dict[str, Any]]) -> None:
    policy = one(base, "NetworkPolicy", "gpusize-redis")
    redis_labels = one(base, "StatefulSet")["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= redis_labels.items()
    (rule,) = policy["spec"]["ingress"]
    allowed = rule["from"][0]["podSelector"]["matchLabels"]
    for obj in (one(base, "Deployment", "gpusize"), one(base, "CronJob")):
        labels = (obj["spec"]["jobTemplate"]["spec"]["template"] if obj["kind"] == "CronJob"
                  else obj["spec"]["template"])["metadata"]["labels"]
        assert allowed.items() <= labels.items()


def test_example_overlay(overlay: list[dict[str, Any]]) -> None:
    assert overlay[0]["kind"] == "Namespace"
    namespace = overlay[0]["metadata"]["name"]
    assert all(o["metadata"]["namespace"] == namespace for o in overlay[1:])
    deployment = one(overlay, "Deployment", "gpusize")
    assert deployment["spec"]["replicas"] == 3
    assert one(overlay, "HorizontalPodAutoscaler")["spec"]["minReplicas"] == 3
    image = "registry.example.com/team/gpusize:0.1.0"
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == image
    assert pod_spec(one(overlay, "CronJob"))["containers"][0]["image"] == image
    assert pod_spec(one(overlay, "StatefulSet"))["containers"][0]["image"] == "redis:7"
    ingress = one(overlay, "Ingress")
    assert ingress["spec"]["rules"][0]["host"] == "gpusize.example.org"
    assert ingress["spec"]["tls"][0]["hosts"] == ["gpusize.example.org"]


def test_kustomizations_name_real_files() -> None:
    for directory in (BASE, OVERLAY):
        k = yaml.safe_load((directory / "kustomization.yaml").read_text(encoding="utf-8"))
        for entry in k["resources"]:
            assert (directory / entry).exists(), f"{directory}: {entry}"
    listed = set(yaml.safe_load((BASE / "kustomization.yaml").read_text())["resources"])
    assert listed == {p.name for p in BASE.glob("*.yaml")} - {"kustomization.yaml"}


QUANTITY = re.compile(r"(?P<number>\d+(\.\d+)?)(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?")
FACTOR = {None: 1, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
          "P": 1e15, "E": 1e18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50,
          "Ei": 2**60}


def quantity(value: Any) -> float:
    """A Kubernetes resource quantity ("250m", "1", "384Mi"); the schemas accept any string."""
    match = QUANTITY.fullmatch(str(value))
    assert match, f"not a Kubernetes quantity: {value!r}"
    return float(match["number"]) * FACTOR[match["suffix"]]


def quantities(node: Any, path: str = "") -> list[tuple[str, Any]]:
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            where = f"{path}/{key}"
            if key in ("requests", "limits") and isinstance(value, dict):
                found += [(f"{where}/{k}", v) for k, v in value.items()]
            elif key == "sizeLimit":
                found.append((where, value))
            else:
                found += quantities(value, where)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            found += quantities(item, f"{path}/{i}")
    return found


def test_quantities_are_well_formed_and_requests_fit_limits(base: list[dict[str, Any]]) -> None:
    every = [q for obj in base for q in quantities(obj)]
    assert len(every) >= 15
    for where, value in every:
        assert quantity(value) > 0, where
    for obj in base:
        if obj["kind"] in ("Deployment", "StatefulSet", "CronJob"):
            for container in pod_spec(obj)["containers"]:
                res = container["resources"]
                for name in ("cpu", "memory"):
                    assert quantity(res["requests"][name]) <= quantity(res["limits"][name])
