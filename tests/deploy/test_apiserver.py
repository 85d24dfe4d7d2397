"""deploy/k8s against a real Kubernetes API server: `kubectl apply -k` as docs/DEPLOY.md has a
platform engineer run it, server-side dry run and validation, Pod Security admission of every pod
the controllers make, the HPA scaling the bot's StatefulSet, and a deleted bot pod coming back
under its name on its own claim (where its outbox journal lives).

Needs etcd and kube-apiserver (and kube-controller-manager for the controllers' half), found as
$ETCD, $KUBE_APISERVER, $KUBE_CONTROLLER_MANAGER or on PATH; each test skips, saying what is
missing, where they are not. No kubelet or scheduler: pods are admitted and stay Pending.
docs/DEPLOY.md, "Against a real API server", says how to get the binaries.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.conftest import OVERLAY, kubectl, render

pytestmark = pytest.mark.slow  # starts etcd, kube-apiserver, kube-controller-manager, kubectl

NAMESPACE = "gpusize"
HOW = "docs/DEPLOY.md, \"Against a real API server\""
START_TIMEOUT_S = 180  # kube-apiserver installs its built-in objects first: slow on 2 busy cores


def binary(variable: str, name: str) -> str | None:
    """The binary named by $VARIABLE, else NAME on PATH."""
    return os.environ.get(variable) or shutil.which(name)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(what: str, ready: Callable[[], bool], timeout_s: float,
             process: subprocess.Popen[bytes] | None = None, log: Path | None = None) -> None:
    """Poll `ready` until it holds; fail with the process's log if it died or time ran out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            break
        if ready():
            return
        time.sleep(0.5)
    tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
    pytest.fail(f"{what} not ready within {timeout_s:.0f} s\n{tail}")


@dataclass
class Cluster:
    kubeconfig: Path
    folder: Path
    service_account_key: Path
    processes: list[subprocess.Popen[bytes]]

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = kubectl()
        assert command, "no kubectl (tests/deploy/conftest.py)"
        out = subprocess.run([command, "--kubeconfig", str(self.kubeconfig), *args],
                             capture_output=True, text=True, timeout=120)
        if check and out.returncode:
            raise AssertionError(f"kubectl {' '.join(args)} failed:\n{out.stdout}\n{out.stderr}")
        return out

    def get(self, kind: str, name: str | None = None, **selector: str) -> Any:
        args = ["-n", NAMESPACE, "get", kind, *([name] if name else []), "-o", "json"]
        if selector:
            args += ["-l", ",".join(f"{k}={v}" for k, v in selector.items())]
        return json.loads(self.kubectl(*args).stdout)

    def stored(self, obj: dict[str, Any]) -> Any:
        """OBJ as the server keeps it."""
        scope = ["-n", NAMESPACE] if obj["kind"] != "Namespace" else []
        return json.loads(self.kubectl(*scope, "get", name_of(obj), "-o", "json").stdout)

    def start(self, name: str, command: list[str]) -> tuple[subprocess.Popen[bytes], Path]:
        log = self.folder / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        self.processes.append(process)
        return process, log


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """etcd and kube-apiserver on loopback ports of their own, and a kubeconfig for them."""
    etcd, apiserver = binary("ETCD", "etcd"), binary("KUBE_APISERVER", "kube-apiserver")
    missing = [n for n, b in (("etcd", etcd), ("kube-apiserver", apiserver), ("kubectl", kubectl()))
               if b is None]
    if missing:
        pytest.skip(f"no {', '.join(missing)} here: {HOW}")
    assert etcd and apiserver
    folder = tmp_path_factory.mktemp("cluster")
    key, public = folder / "sa.key", folder / "sa.pub"
    subprocess.run(["openssl", "genrsa", "-out", str(key), "2048"], check=True,
                   capture_output=True)
    subprocess.run(["openssl", "rsa", "-in", str(key), "-pubout", "-out", str(public)],
                   check=True, capture_output=True)
    token = os.urandom(16).hex()
    (folder / "tokens.csv").write_text(f"{token},admin,admin,system:masters\n", encoding="utf-8")
    client, peer, secure = free_port(), free_port(), free_port()
    kubeconfig = folder / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "test", "cluster": {
            "server": f"https://127.0.0.1:{secure}", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "admin", "user": {"token": token}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "admin"}}]}),
        encoding="utf-8")
    made = Cluster(kubeconfig, folder, key, [])
    try:
        made.start("etcd", [
            etcd, "--name", "test", "--data-dir", str(folder / "etcd"),
            "--listen-client-urls", f"http://127.0.0.1:{client}",
            "--advertise-client-urls", f"http://127.0.0.1:{client}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"test=http://127.0.0.1:{peer}"])
        process, log = made.start("kube-apiserver", [
            apiserver, "--etcd-servers", f"http://127.0.0.1:{client}",
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
            "--secure-port", str(secure), "--cert-dir", str(folder / "certs"),
            "--token-auth-file", str(folder / "tokens.csv"), "--authorization-mode", "RBAC",
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-account-key-file", str(public),
            "--service-account-signing-key-file", str(key),
            "--service-cluster-ip-range", "10.96.0.0/16"])

        def ready() -> bool:
            return made.kubectl("get", "--raw", "/readyz", check=False).returncode == 0
        wait_for("kube-apiserver", ready, START_TIMEOUT_S, process, log)
        yield made
    finally:
        for started in reversed(made.processes):
            started.terminate()
        for started in made.processes:
            try:
                started.wait(timeout=5)
            except subprocess.TimeoutExpired:
                started.kill()
                started.wait()


@dataclass
class Applied:
    dry_run: subprocess.CompletedProcess[str]
    apply: subprocess.CompletedProcess[str]
    again: subprocess.CompletedProcess[str]
    diff: subprocess.CompletedProcess[str]
    objects: list[dict[str, Any]]
    stored: dict[str, dict[str, Any]]  # each object as the server kept it after the first apply


def name_of(obj: dict[str, Any]) -> str:
    """kubectl's name for OBJ: `statefulset.apps/gpusize`, `service/gpusize`."""
    group = obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else ""
    return f"{obj['kind'].lower()}{'.' + group if group else ''}/{obj['metadata']['name']}"


@pytest.fixture(scope="module")
def applied(cluster: Cluster) -> Applied:
    """deploy/README.md's Kubernetes steps, in order (the image left as the example's: no
    kubelet pulls it here)."""
    cluster.kubectl("apply", "-f", str(OVERLAY / "namespace.yaml"))
    cluster.kubectl("-n", NAMESPACE, "create", "secret", "generic", "gpusize-slack",
                    "--from-literal=SLACK_BOT_TOKEN=xoxb-test",
                    "--from-literal=SLACK_SIGNING_SECRET=test")
    cluster.kubectl("-n", NAMESPACE, "create", "secret", "generic", "gpusize-redis",
                    f"--from-literal=REDIS_PASSWORD={os.urandom(32).hex()}")
    dry_run = cluster.kubectl("apply", "--dry-run=server", "-k", str(OVERLAY))
    apply = cluster.kubectl("apply", "-k", str(OVERLAY))
    objects = render(OVERLAY)
    stored = {name_of(o): cluster.stored(o) for o in objects}
    again = cluster.kubectl("apply", "-k", str(OVERLAY))
    diff = cluster.kubectl("diff", "-k", str(OVERLAY), check=False)
    return Applied(dry_run, apply, again, diff, objects, stored)


def reported(output: str, obj: dict[str, Any]) -> str:
    """kubectl's line for OBJ (`service/gpusize created`), or '' where it has none."""
    return next((line for line in output.splitlines() if line.startswith(name_of(obj) + " ")), "")


def test_every_object_is_accepted_by_a_real_api_server(applied: Applied,
                                                        cluster: Cluster) -> None:
    assert len(applied.objects) >= 13
    for obj in applied.objects:
        done = "unchanged" if obj["kind"] == "Namespace" else "created"  # applied first, by hand
        assert reported(applied.dry_run.stdout, obj).endswith(f"{done} (server dry run)"), obj
        assert reported(applied.apply.stdout, obj).endswith(done), (obj, applied.apply.stdout)
        # a second apply stores nothing new (above all it leaves the HPA's replica count alone).
        # kubectl still says "configured" for the StatefulSets and the PodDisruptionBudget: its
        # client-side patch resends lists it cannot merge (volumeClaimTemplates, the PDB's
        # selector), which the server finds unchanged; the resourceVersion is the judge.
        before = applied.stored[name_of(obj)]
        assert cluster.stored(obj)["metadata"]["resourceVersion"] == \
            before["metadata"]["resourceVersion"], name_of(obj)
        assert reported(applied.again.stdout, obj).split()[-1] in ("unchanged", "configured")
    assert applied.diff.returncode == 0, applied.diff.stdout  # `kubectl diff -k`: nothing
    # no Pod Security warning on a workload's template ("would violate PodSecurity
    # restricted"), no deprecated API, no field the server dropped
    for out in (applied.dry_run, applied.apply, applied.again):
        assert "Warning" not in out.stderr, out.stderr
    # and these checks can fail: the server refuses a field it does not know (kubectl's default
    # strict field validation), here a misspelt probe on the bot
    bots = next(o for o in applied.objects if o["kind"] == "StatefulSet"
                and o["metadata"]["name"] == "gpusize")
    broken = json.loads(json.dumps(bots))
    broken["spec"]["template"]["spec"]["containers"][0]["readinessProbes"] = {}
    path = cluster.folder / "broken.json"
    path.write_text(json.dumps(broken), encoding="utf-8")
    out = cluster.kubectl("apply", "--dry-run=server", "-f", str(path), check=False)
    assert out.returncode and "readinessProbes" in out.stderr, out


@pytest.fixture(scope="module")
def controllers(cluster: Cluster, applied: Applied) -> Cluster:
    """kube-controller-manager on the same API server: StatefulSets, the HPA, Jobs and claims."""
    manager = binary("KUBE_CONTROLLER_MANAGER", "kube-controller-manager")
    if manager is None:
        pytest.skip(f"no kube-controller-manager here: {HOW}")
    process, log = cluster.start("kube-controller-manager", [
        manager, "--kubeconfig", str(cluster.kubeconfig), "--leader-elect=false",
        "--service-account-private-key-file", str(cluster.service_account_key),
        "--use-service-account-credentials=false", "--secure-port", "0",
        "--horizontal-pod-autoscaler-sync-period", "5s"])
    minimum = next(o for o in applied.objects if o["kind"] == "HorizontalPodAutoscaler")[
        "spec"]["minReplicas"]

    def bots_made() -> bool:
        return len(cluster.get("pods", **{"app.kubernetes.io/component": "bot"})["items"]) \
            >= minimum
    wait_for("the HPA's floor of bot pods", bots_made, START_TIMEOUT_S, process, log)
    return cluster


def claim_of(pod: dict[str, Any]) -> str:
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == "cache"]
    return str(volume["persistentVolumeClaim"]["claimName"])


def test_the_controllers_make_admitted_pods_and_replace_a_bot_on_its_claim(
        controllers: Cluster, applied: Applied) -> None:
    """The HPA scales the bot's StatefulSet to its floor; every pod the controllers make passes
    the namespace's `restricted` Pod Security (a pod that broke it would not exist, only a
    FailedCreate event), Redis's and a digest run's too; and a deleted bot pod comes back under
    its name on the same claim, where its outbox journal is (what a node lost during a Redis
    stall needs)."""
    hpa = next(o for o in applied.objects if o["kind"] == "HorizontalPodAutoscaler")
    bots = controllers.get("statefulset", "gpusize")
    assert bots["spec"]["replicas"] == hpa["spec"]["minReplicas"]  # set by the HPA alone
    pods = controllers.get("pods", **{"app.kubernetes.io/component": "bot"})["items"]
    assert sorted(p["metadata"]["name"] for p in pods) == [
        f"gpusize-{n}" for n in range(hpa["spec"]["minReplicas"])]

    controllers.kubectl("-n", NAMESPACE, "create", "job", "digest-now",
                        "--from=cronjob/gpusize-digest")

    def made() -> bool:
        names = {p["metadata"]["name"] for p in controllers.get("pods")["items"]}
        return "gpusize-redis-0" in names and any(n.startswith("digest-now-") for n in names)
    wait_for("Redis's and the digest job's pods", made, 60)
    events = controllers.get("events")["items"]
    assert not [e["message"] for e in events if e["reason"] in ("FailedCreate", "FailedScheduling")
                and "PodSecurity" in e["message"]]

    before = controllers.get("pod", "gpusize-0")
    claim = controllers.get("pvc", claim_of(before))
    assert claim_of(before) == "cache-gpusize-0"
    # as the controllers treat a pod whose node is gone: deleted at once, no SIGTERM
    controllers.kubectl("-n", NAMESPACE, "delete", "pod", "gpusize-0", "--grace-period=0",
                        "--force", "--wait=false")

    def replaced() -> bool:
        pods = controllers.get("pods", **{"statefulset.kubernetes.io/pod-name": "gpusize-0"})
        return any(p["metadata"]["uid"] != before["metadata"]["uid"] for p in pods["items"])
    wait_for("a new gpusize-0", replaced, 60)
    after = controllers.get("pod", "gpusize-0")
    assert after["metadata"]["uid"] != before["metadata"]["uid"]
    assert claim_of(after) == claim_of(before)
    assert controllers.get("pvc", claim_of(after))["metadata"]["uid"] == claim["metadata"]["uid"]
