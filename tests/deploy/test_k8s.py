"""deploy/k8s: every rendered object is valid Kubernetes (strict JSON schemas shipped by the
kubernetes-validate package, offline), and the objects fit together the way the bot needs."""

from __future__ import annotations

import os
import re
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import latest_version

from bot.app import outbox_journal
from bot.outbox import CLOSE_FLUSH_S, OUTBOX_MAX_JOBS
from bot.server import GRACEFUL_HTTP_S
from bot.settings import DEFAULT_METRICS_PORT, Settings
from tests.deploy.conftest import BASE, K8S, OVERLAY, kubectl, one, render

pytestmark = pytest.mark.slow  # the trees are what kubectl renders (a process)
# 1.27: the oldest release where CronJob.spec.timeZone is GA; then the newest schemas shipped.
VERSIONS = ["1.27", ".".join(latest_version().split(".")[:2])]
SECRET = "gpusize-slack"
SECRET_KEYS = {"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"}
REDIS_SECRET = "gpusize-redis"
COMPONENTS = K8S / "components"
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
    examples = {d["metadata"]["name"]: d for d in yaml.safe_load_all(
        (K8S / "secret.example.yaml").read_text(encoding="utf-8"))}
    for example in examples.values():
        kubernetes_validate.validate(example, VERSIONS[-1], strict=True)
    assert set(examples[SECRET]["stringData"]) == SECRET_KEYS
    assert set(examples[REDIS_SECRET]["stringData"]) == {"REDIS_PASSWORD"}
    assert not [o for o in base + overlay if o["kind"] == "Secret"]
    for kfile in K8S.rglob("kustomization.yaml"):
        resources = yaml.safe_load(kfile.read_text(encoding="utf-8"))["resources"]
        assert not [r for r in resources if "secret" in r.lower()], kfile


def test_bot_statefulset(base: list[dict[str, Any]]) -> None:
    bots = one(base, "StatefulSet", "gpusize")
    assert bots["spec"]["selector"]["matchLabels"] == BOT_LABELS
    template = bots["spec"]["template"]
    assert BOT_LABELS.items() <= template["metadata"]["labels"].items()
    spec = template["spec"]
    (bot,) = spec["containers"]
    assert bot["image"] == "gpusize:0.1.0"
    assert bot.get("args", ["gpusize", "serve"]) == ["gpusize", "serve"]
    assert {p["name"]: p["containerPort"] for p in bot["ports"]} == {
        "http": 3000, "metrics": DEFAULT_METRICS_PORT}
    assert bot["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert bot["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    variables = env(bot)
    for key in SECRET_KEYS:
        assert variables[key] == {"secretKeyRef": {"name": SECRET, "key": key}}
    assert variables["PORT"] == "3000"
    assert variables["METRICS_PORT"] == str(DEFAULT_METRICS_PORT) != "9100"  # node_exporter's
    assert variables["METRICS_HOST"] == "0.0.0.0"
    annotations = template["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == variables["METRICS_PORT"]
    # the default (CPUs - 1) counts the node's CPUs, not the pod's limit
    workers = int(variables["GPUSIZE_WORKERS"])
    assert 1 <= workers <= float(bot["resources"]["limits"]["cpu"])
    requests, limits = bot["resources"]["requests"], bot["resources"]["limits"]
    assert {"cpu", "memory"} <= set(requests) and {"cpu", "memory"} <= set(limits)


def test_each_bot_pod_keeps_its_outbox_journal_on_a_claim_of_its_own(
        base: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 26: the journal of requests acknowledged while Redis stalled outlives the pod (a node
    lost without SIGTERM): a claim per replica, which the replacement of the same name mounts."""
    bots = one(base, "StatefulSet", "gpusize")
    (claim,) = bots["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    # the journal's bound: OUTBOX_MAX_JOBS requests of ~2 KiB each, with room for the Hub cache
    assert quantity(claim["spec"]["resources"]["requests"]["storage"]) >= \
        OUTBOX_MAX_JOBS * 2 * 2**10 + int(env(pod_spec(bots)["containers"][0])["HUB_CACHE_MAX_BYTES"])
    (bot,) = pod_spec(bots)["containers"]
    mounts = {m["name"]: m["mountPath"] for m in bot["volumeMounts"]}
    assert claim["metadata"]["name"] not in {v["name"] for v in pod_spec(bots)["volumes"]}
    # where the bot's own code puts the journal, given the manifest's environment
    monkeypatch.setenv("GPUSIZE_CACHE", env(bot)["GPUSIZE_CACHE"])
    journal = outbox_journal(env(bot)["REDIS_URL"])
    assert journal.is_relative_to(mounts[claim["metadata"]["name"]])
    # the StatefulSet names a headless Service, and scaling keeps the claims (a lost pod's journal)
    governing = one(base, "Service", bots["spec"]["serviceName"])
    assert governing["spec"]["clusterIP"] == "None"
    assert governing["spec"]["selector"] == BOT_LABELS
    assert bots["spec"].get("persistentVolumeClaimRetentionPolicy", {}).get(
        "whenScaled", "Retain") == "Retain"
    # the HPA adds and removes pods in parallel; updates still go one at a time
    assert bots["spec"]["podManagementPolicy"] == "Parallel"
    assert bots["spec"]["updateStrategy"]["type"] == "RollingUpdate"


def test_redis_url_points_at_the_in_cluster_redis(base: list[dict[str, Any]]) -> None:
    service = one(base, "Service", "gpusize-redis")
    port = service["spec"]["ports"][0]["port"]
    statefulset = one(base, "StatefulSet", "gpusize-redis")
    assert statefulset["spec"]["serviceName"] == service["metadata"]["name"]
    assert service["spec"]["selector"].items() <= \
        statefulset["spec"]["template"]["metadata"]["labels"].items()
    for obj in (one(base, "StatefulSet", "gpusize"), one(base, "CronJob")):
        for container in pod_spec(obj)["containers"]:
            url = env(container)["REDIS_URL"]
            assert re.fullmatch(rf"redis://{service['metadata']['name']}:{port}/\d+", url), url
            # the password from the Secret, never in the URL or the manifest
            assert env(container)["REDIS_PASSWORD"] == {
                "secretKeyRef": {"name": REDIS_SECRET, "key": "REDIS_PASSWORD"}}


def redis_conf() -> dict[str, str]:
    lines = (BASE / "redis.conf").read_text(encoding="utf-8").splitlines()
    return {k: v.strip() for k, _, v in (line.partition(" ") for line in lines
                                          if line.strip() and not line.startswith("#"))}


def test_redis_is_kept_as_a_datastore(base: list[dict[str, Any]]) -> None:
    """Issue 26: AOF and snapshots on a claimed volume, a memory cap that refuses rather than
    evicts (under the container's limit), a password from the Secret, probes that need PONG."""
    statefulset = one(base, "StatefulSet", "gpusize-redis")
    spec = pod_spec(statefulset)
    (redis,) = spec["containers"]
    assert redis["image"].startswith("redis:7")
    conf = redis_conf()
    assert conf["appendonly"] == "yes" and conf["appendfsync"] == "everysec"
    assert conf["maxmemory-policy"] == "noeviction" and "dir" not in conf
    assert conf["save"], "snapshots: dump.rdb is what a backup copies"
    assert "requirepass" not in conf  # never in a file
    cap = quantity(conf["maxmemory"].replace("mb", "M").replace("gb", "G"))
    assert cap <= 0.8 * quantity(redis["resources"]["limits"]["memory"])  # room for a rewrite
    words = " ".join(redis.get("command", []) + redis.get("args", []))
    assert "redis-server /etc/redis/redis.conf --dir /data" in words
    assert '--requirepass "$REDIS_PASSWORD"' in words
    for name in ("REDIS_PASSWORD", "REDISCLI_AUTH"):
        assert env(redis)[name] == {"secretKeyRef": {"name": REDIS_SECRET, "key": "REDIS_PASSWORD"}}
    (claim,) = statefulset["spec"]["volumeClaimTemplates"]
    mounts = {m["name"]: m["mountPath"] for m in redis["volumeMounts"]}
    assert mounts[claim["metadata"]["name"]] == "/data"
    config = next(v for v in spec["volumes"] if v["name"] == "config")
    generated = one(base, "ConfigMap", config["configMap"]["name"])
    assert generated["data"]["redis.conf"] == (BASE / "redis.conf").read_text(encoding="utf-8")
    assert mounts["config"] == "/etc/redis"
    for probe in ("readinessProbe", "livenessProbe"):
        assert redis[probe]["exec"]["command"] == ["sh", "-c", "redis-cli ping | grep -q PONG"]


def test_everything_runs_as_non_root_with_a_read_only_root(base: list[dict[str, Any]]) -> None:
    workloads = [o for o in base if o["kind"] in ("Deployment", "StatefulSet", "CronJob")]
    assert len(workloads) == 3
    assert len([o for o in base if o["kind"] == "ConfigMap"]) == 1  # redis.conf
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
            # what the process writes lives on mounted volumes: the pod's or its own claims
            claims = {c["metadata"]["name"] for c in obj["spec"].get("volumeClaimTemplates", [])}
            volumes = {v["name"] for v in spec.get("volumes", [])} | claims
            assert all(m["name"] in volumes for m in container["volumeMounts"])
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
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "StatefulSet",
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
    assert digest["image"] == one(base, "StatefulSet", "gpusize")["spec"]["template"]["spec"][
        "containers"][0]["image"]
    variables = env(digest)
    for key in SECRET_KEYS:
        assert variables[key] == {"secretKeyRef": {"name": SECRET, "key": key}}
    # the CronJob is the one trigger: the replicas do not run the in-process scheduler too
    bot = one(base, "StatefulSet", "gpusize")["spec"]["template"]["spec"]["containers"][0]
    assert "digest_scheduler" in Settings.model_fields
    assert env(bot)["DIGEST_SCHEDULER"] == "false"


def test_redis_takes_connections_from_gpusize_pods_only(base: list[dict[str, Any]]) -> None:
    policy = one(base, "NetworkPolicy", "gpusize-redis")
    redis_labels = one(base, "StatefulSet", "gpusize-redis")["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= redis_labels.items()
    (rule,) = policy["spec"]["ingress"]
    allowed = rule["from"][0]["podSelector"]["matchLabels"]
    for obj in (one(base, "StatefulSet", "gpusize"), one(base, "CronJob")):
        labels = (obj["spec"]["jobTemplate"]["spec"]["template"] if obj["kind"] == "CronJob"
                  else obj["spec"]["template"])["metadata"]["labels"]
        assert allowed.items() <= labels.items()


def test_example_overlay(overlay: list[dict[str, Any]]) -> None:
    assert overlay[0]["kind"] == "Namespace"
    namespace = overlay[0]["metadata"]["name"]
    assert all(o["metadata"]["namespace"] == namespace for o in overlay[1:])
    bots = one(overlay, "StatefulSet", "gpusize")
    assert "replicas" not in bots["spec"]
    assert one(overlay, "HorizontalPodAutoscaler")["spec"]["minReplicas"] == 3
    image = "registry.example.com/team/gpusize:0.1.0"
    assert bots["spec"]["template"]["spec"]["containers"][0]["image"] == image
    assert pod_spec(one(overlay, "CronJob"))["containers"][0]["image"] == image
    assert pod_spec(one(overlay, "StatefulSet", "gpusize-redis"))["containers"][0]["image"] == "redis:7"
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


@pytest.mark.parametrize("tree", ["base", "overlay"])
def test_the_autoscaler_alone_counts_the_replicas(tree: str, request: Any) -> None:
    """Issue 26: a `replicas` beside the HPA reset it on every `kubectl apply -k`."""
    objects = request.getfixturevalue(tree)
    for hpa in (o for o in objects if o["kind"] == "HorizontalPodAutoscaler"):
        target = one(objects, hpa["spec"]["scaleTargetRef"]["kind"],
                     hpa["spec"]["scaleTargetRef"]["name"])
        assert "replicas" not in target["spec"]
    for kfile in K8S.rglob("kustomization.yaml"):
        assert "replicas" not in (yaml.safe_load(kfile.read_text(encoding="utf-8")) or {}), kfile


def test_rolling_updates_drop_no_request(base: list[dict[str, Any]]) -> None:
    """Issue 26: a preStop delay keeps the pod serving while its endpoint is withdrawn, and the
    grace period covers that delay, uvicorn's wait for open requests and the job drain."""
    spec = pod_spec(one(base, "StatefulSet", "gpusize"))
    (bot,) = spec["containers"]
    command = bot["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep" and int(command[1]) >= 3
    drain = Settings.model_fields["shutdown_grace_s"].default
    # then the outbox's last try, and the people whose jobs it still holds are told
    assert spec["terminationGracePeriodSeconds"] > (int(command[1]) + GRACEFUL_HTTP_S + drain
                                                    + CLOSE_FLUSH_S)
    # readiness is not Redis's: a Redis outage must not empty the Service
    assert bot["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert bot["readinessProbe"] != bot["livenessProbe"]


def with_component(tmp_path: Path, component: str) -> list[dict[str, Any]]:
    """The example overlay with an optional component added, as a user's overlay would."""
    here = os.path.relpath(K8S, tmp_path)
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "namespace": "gpusize", "resources": [f"{here}/overlays/example"],
        "components": [f"{here}/components/{component}"]}), encoding="utf-8")
    return render(tmp_path)


def test_the_optional_servicemonitor_scrapes_the_metrics_service(tmp_path: Path,
                                                                 overlay: list[dict[str, Any]]) -> None:
    assert not [o for o in overlay if o["kind"] == "ServiceMonitor"]  # opt-in: needs the CRDs
    objects = with_component(tmp_path, "servicemonitor")
    monitor = one(objects, "ServiceMonitor", "gpusize")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["namespace"] == "gpusize"
    service = one(objects, "Service", "gpusize-metrics")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert not monitor["spec"]["selector"]["matchLabels"].items() <= \
        one(objects, "Service", "gpusize")["metadata"]["labels"].items()  # not the public one
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"


def test_metrics_port_moves_with_one_overlay_patch(tmp_path: Path) -> None:
    """docs/DEPLOY.md's patch: the env, the containerPort and the annotation move together; the
    Services and the NetworkPolicy follow the port's name."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "DEPLOY.md").read_text(encoding="utf-8")
    block = docs.split("<!-- metrics-port-patch -->")[1].split("```yaml")[1].split("```")[0]
    here = os.path.relpath(K8S, tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        f"resources:\n  - {here}/overlays/example\n" + block, encoding="utf-8")
    assert kubectl()
    out = subprocess.run([kubectl(), "kustomize", str(tmp_path)], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    objects = [d for d in yaml.safe_load_all(out) if d]
    bots = one(objects, "StatefulSet", "gpusize")
    (bot,) = pod_spec(bots)["containers"]
    port = env(bot)["METRICS_PORT"]
    assert port != str(DEFAULT_METRICS_PORT)
    assert {p["name"]: p["containerPort"] for p in bot["ports"]}["metrics"] == int(port)
    assert bots["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"] == port


def test_storage_class_patch_picks_the_journal_claims_class(tmp_path: Path) -> None:
    """docs/DEPLOY.md's patch for the bot's claims renders onto the StatefulSet's template."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "DEPLOY.md").read_text(encoding="utf-8")
    block = docs.split("<!-- storage-class-patch -->")[1].split("```yaml")[1].split("```")[0]
    here = os.path.relpath(K8S, tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        f"resources:\n  - {here}/overlays/example\n" + textwrap.dedent(block), encoding="utf-8")
    objects = render(tmp_path)
    (claim,) = one(objects, "StatefulSet", "gpusize")["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["storageClassName"] == "your-class"
    redis_claims = one(objects, "StatefulSet", "gpusize-redis")["spec"]["volumeClaimTemplates"]
    assert all("storageClassName" not in c["spec"] for c in redis_claims)


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
