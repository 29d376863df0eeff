"""What an operator's install puts on the cluster, read from its source at the pinned tag.

CRDs and webhook configurations come from the operators' own manifests in the Go module cache (rendered
with the pinned kubectl's kustomize where upstream patches them), never from files of this repository:
- Trainer: manifests/base/crds, manifests/base/webhook (its patches name the configurations
  `validator.trainer.kubeflow.org` and `defaulter.trainer.kubeflow.org` and add the object selectors);
- JobSet: config/components/crd/bases, config/components/webhook;
- Training Operator: manifests/base/crds, manifests/base/webhook;
- Kueue (kdt.versions.KUEUE): config/components/crd/bases only, so its kinds are judged by the API server
  (schemas and CEL rules); Kueue's manager does not run, so nothing is queued or suspended by it;
- scheduler-plugins (kdt.versions.SCHEDULER_PLUGINS): config/crd/bases, the PodGroup Trainer's coscheduling
  plugin and the Training Operator's gang scheduling create (no scheduler of its own runs).
Each webhook's `clientConfig.service` becomes `clientConfig.url` on 127.0.0.1 at the port its manager
serves, with the run's CA as `caBundle`; nothing else of the configuration changes. The JobSet CRD's
conversion webhook (config/components/crd/patches) is not installed: JobSet serves one version.
"""
from __future__ import annotations

import json
import os
import subprocess
import time

from .. import paths, versions
from ..errors import UsageError
from . import build, pki
from . import releases as R

TRAINING_OPERATOR_NAMESPACE = "kubeflow"      # training-operator v1.9.4 pkg/cert/cert.go defaultOperatorNamespace
TRAINING_OPERATOR_SECRET = "training-operator-webhook-cert"   # cmd/training-operator.v1/main.go default
MANAGER = "kdt-live-install"      # the field manager of everything the control plane installs


def key(doc: dict) -> tuple:
    """(group, kind, namespace, name): what `Client.installed` holds of each object the install applied."""
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    api = str(doc.get("apiVersion") or "")
    return (api.split("/")[0] if "/" in api else "", doc.get("kind"), meta.get("namespace") or "", meta.get("name"))


def _yaml_docs(text: str) -> list[dict]:
    import yaml
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]


def kustomize(folder) -> list[dict]:
    proc = subprocess.run([paths.tool("kubectl"), "kustomize", str(folder)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise UsageError(f"kubectl kustomize {folder}: {proc.stderr.strip()[-300:]}")
    return _yaml_docs(proc.stdout)


def files(folder, pattern: str = "*.yaml") -> list[dict]:
    from pathlib import Path
    out = []
    for p in sorted(Path(folder).glob(pattern)):
        if p.name == "kustomization.yaml":
            continue
        out.extend(_yaml_docs(p.read_text()))
    return out


def crds(trainer: R.Component, jobset: R.Component, to: R.Component) -> list[dict]:
    """Every CRD the control plane installs, read once per release set (megabytes of YAML: seconds to parse)
    and kept as JSON (`_rendered`)."""
    return _rendered("crds", f"{trainer.version} {jobset.version} {to.version} {versions.KUEUE} "
                             f"{versions.SCHEDULER_PLUGINS}", lambda: _crds(trainer, jobset, to))


def _crds(trainer: R.Component, jobset: R.Component, to: R.Component) -> list[dict]:
    t = build.module_dir(trainer.module, trainer.version)
    j = build.module_dir(jobset.module, jobset.version)
    o = build.module_dir(to.module, to.version)
    k = build.module_dir(R.KUEUE_MODULE, versions.KUEUE)
    sp = build.module_dir(R.SCHEDULER_PLUGINS_MODULE, versions.SCHEDULER_PLUGINS)
    out = (files(t / "manifests/base/crds") + files(j / "config/components/crd/bases") + files(o / "manifests/base/crds")
           + files(k / "config/components/crd/bases") + files(sp / "config/crd/bases"))
    return [d for d in out if d.get("kind") == "CustomResourceDefinition"]


def _rendered(what: str, key: str, render):
    """What `render()` gives (JSON), rendered once and kept in the cache beside the binaries under `key` (the
    releases) and the kubectl that rendered it: a module's files at a version never change, and each start
    would otherwise run kustomize again (a kubectl process each)."""
    import copy
    import hashlib
    tool = paths.tool("kubectl")
    try:
        stamp = f"{tool}:{os.stat(tool).st_mtime_ns}"
    except OSError:
        stamp = tool
    h = hashlib.sha256(f"{key} {stamp}".encode()).hexdigest()[:16]
    cache = build.cache_root() / "install" / f"{what}-{h}.json"
    try:
        return json.loads(cache.read_text())
    except (OSError, ValueError):
        pass
    out = render()
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(out))
    tmp.replace(cache)
    return copy.deepcopy(out)


def webhooks(trainer: R.Component, jobset: R.Component, to: R.Component) -> list[tuple[str, dict]]:
    """(manager name, configuration) of every webhook configuration the three installs create (rendered once
    per release set: `_rendered`)."""
    return [(m, d) for m, d in _rendered("webhooks", f"{trainer.version} {jobset.version} {to.version}",
                                         lambda: _webhooks(trainer, jobset, to))]


def _webhooks(trainer: R.Component, jobset: R.Component, to: R.Component) -> list[tuple[str, dict]]:
    t = build.module_dir(trainer.module, trainer.version)
    j = build.module_dir(jobset.module, jobset.version)
    o = build.module_dir(to.module, to.version)
    out = []
    for name, folder in (("trainer", t / "manifests/base/webhook"), ("jobset", j / "config/components/webhook"),
                         ("training-operator", o / "manifests/base/webhook")):
        for d in kustomize(folder):
            if d.get("kind") in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
                out.append((name, d))
    return out


def _namespace(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def apply(cluster, docs: list[dict], what: str) -> None:
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    cluster.kubectl("apply", "--server-side", "--force-conflicts", f"--field-manager={MANAGER}", "-f", "-",
                    input=body)
    # the judge never applies its documents over these, nor deletes them (kdt.live.judge)
    cluster.installed.update(key(d) for d in docs)
    cluster.say(f"installed {what}")


def apply_base(cluster, trainer, jobset, to) -> None:
    import base64
    docs = [_namespace(TRAINING_OPERATOR_NAMESPACE), _namespace("kubeflow-system"), _namespace("jobset-system")]
    crt, key = cluster.pki.pair("webhook")
    enc = lambda p: base64.b64encode(p.read_bytes()).decode()   # noqa: E731
    # The Training Operator's cert rotator keeps a Secret whose CA and certificate are valid for its
    # Service name (open-policy-agent/cert-controller rotator.go refreshCertIfNeeded): ours, also valid on 127.0.0.1.
    docs.append({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                 "metadata": {"name": TRAINING_OPERATOR_SECRET, "namespace": TRAINING_OPERATOR_NAMESPACE},
                 "data": {"ca.crt": enc(cluster.pki.ca), "ca.key": enc(cluster.pki.ca_key),
                          "tls.crt": enc(crt), "tls.key": enc(key)}})
    apply(cluster, docs, "namespaces and the Training Operator's webhook certificate")
    crd_docs = crds(trainer, jobset, to)
    _apply_crds(cluster, crd_docs)
    cluster.say(f"installed {len(crd_docs)} CRDs (Trainer {trainer.version}, JobSet {jobset.version}, "
                f"Training Operator {to.version}, Kueue {versions.KUEUE}, scheduler-plugins {versions.SCHEDULER_PLUGINS})")
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")


def _apply_crds(cluster, docs: list[dict]) -> None:
    """The CRDs, server-side applied as `apply` does (same field manager, forced), through the API server's REST
    interface: 3.5 MB of CRDs cost kubectl seconds of its own before the API server's (43 s against 28 s for
    the whole request on a loaded 2-core machine)."""
    from .api import Api
    api = Api.from_kubeconfig(cluster.kubeconfig)
    try:
        for d in docs:
            name = d["metadata"]["name"]
            api.request("PATCH", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
                                 f"?fieldManager={MANAGER}&force=true", d, "application/apply-patch+yaml")
    finally:
        api.close()
    cluster.installed.update(key(d) for d in docs)


def apply_webhooks(cluster, trainer, jobset, to) -> None:
    bundle = pki.ca_bundle(cluster.pki)
    docs = []
    for manager, d in webhooks(trainer, jobset, to):
        port = cluster.ports[f"webhook-{manager}"]
        for w in d.get("webhooks") or []:
            svc = (w.get("clientConfig") or {}).get("service") or {}
            w["clientConfig"] = {"url": f"https://127.0.0.1:{port}{svc.get('path', '/')}", "caBundle": bundle}
        docs.append(d)
    apply(cluster, docs, f"{len(docs)} webhook configurations")


def wait_webhooks(cluster, timeout: float = 60) -> None:
    """Until a dry-run create that every manager's webhook sees is answered by the webhooks (not refused
    because a webhook server cannot be reached yet)."""
    probe = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "kdt-probe", "namespace": "default"},
         "spec": {"replicatedJobs": []}},
        {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "kdt-probe", "namespace": "default"},
         "spec": {"pytorchReplicaSpecs": {}}},
        {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "kdt-probe", "namespace": "default"},
         "spec": {"runtimeRef": {"name": "kdt-probe"}}},
    ]}
    end = time.monotonic() + timeout
    last = ""
    while time.monotonic() < end:
        cluster.check()
        proc = cluster.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(probe), check=False)
        last = proc.stderr
        if "failed calling webhook" not in last and "connection refused" not in last:
            return
        time.sleep(0.3)
    raise UsageError(f"live control plane: the operators' webhooks did not answer in {timeout:.0f} s: {last.strip()[-300:]}")


def manager_config(name: str, comp: R.Component, port: int, certs, gates: dict | None = None) -> str:
    """The manager's Configuration file; `gates`: the cluster file's featureGates for it (its Configuration's
    featureGates: JobSet v0.12.0 main.go and Trainer v2.2.1 cmd/trainer-controller-manager/main.go
    SetFromMap(cfg.FeatureGates)), written only when declared."""
    fg = ["featureGates: {" + ", ".join(f"{g}: {'true' if on else 'false'}" for g, on in sorted(gates.items())) + "}"] \
        if gates else []
    if name == "trainer":
        # Trainer pkg/apis/config/v1alpha1 Configuration; certManagement off: the certificates are ours
        return "\n".join([
            "apiVersion: config.trainer.kubeflow.org/v1alpha1", "kind: Configuration",
            "health: {healthProbeBindAddress: \"0\"}", "metrics: {bindAddress: \"0\"}",
            f"webhook: {{port: {port}, host: 127.0.0.1}}", "leaderElection: {leaderElect: false}",
            "certManagement: {enable: false}", *fg, ""])
    # JobSet api/config/v1alpha1 Configuration
    return "\n".join([
        "apiVersion: config.jobset.x-k8s.io/v1alpha1", "kind: Configuration",
        "health: {healthProbeBindAddress: \"0\"}", "metrics: {bindAddress: \"0\"}",
        f"webhook: {{port: {port}, host: 127.0.0.1, certDir: \"{certs}\"}}", "leaderElection: {leaderElect: false}",
        "internalCertManagement: {enable: false}", *fg, ""])


def training_operator_args(cluster, cluster_file) -> list[str]:
    """The repository's cluster file (.kdt-cluster.yaml) says how the cluster runs the Training Operator:
    its init container template, image, tries and gang scheduler, as the merge preview reads them."""
    args = []
    tmpl = cluster_file.pytorch_init if cluster_file is not None else None
    if tmpl is not None:
        if tmpl.text is not None:
            f = cluster.folder / "pytorch-init-template.yaml"
            f.write_text(tmpl.text)
            args.append(f"--pytorch-init-container-template-file={f}")
        args += [f"--pytorch-init-container-image={tmpl.image}", f"--pytorch-init-container-max-tries={tmpl.max_tries}"]
    if cluster_file is not None and cluster_file.gang_scheduler:
        args.append(f"--gang-scheduler-name={cluster_file.gang_scheduler}")
    return args


def apply_cluster_objects(cluster, cluster_file) -> list[str]:
    """The cluster-wide objects the repository's administrator applies once (`.kdt-cluster.yaml` `objects`:
    PriorityClasses, Kueue's queues, ...), as a cluster of this repository has them before any job; the
    notes say what was left out (a kind no CRD here serves)."""
    if cluster_file is None or not cluster_file.object_paths:
        return []
    notes, docs = [], []
    for d in cluster_file.objects:
        if not isinstance(d.data, dict):
            continue
        proc = cluster.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-", input=json.dumps(d.data),
                               check=False)
        if proc.returncode != 0:
            notes.append(f"{d.data.get('kind')} {(d.data.get('metadata') or {}).get('name')}: not applied: "
                         f"{proc.stderr.strip().splitlines()[-1][:200] if proc.stderr.strip() else 'refused'}")
            continue
        docs.append(d.data)
    if docs:
        apply(cluster, docs, f"{len(docs)} cluster-wide objects of {cluster_file.file or '.kdt-cluster.yaml'}")
    return notes


def apply_runtimes(cluster, trainer: R.Component) -> None:
    """The ClusterTrainingRuntimes Trainer's install brings (manifests/base/runtimes at the tag: torch, DeepSpeed,
    MLX, torchtune, ...): jobs that name them (`runtimeRef: torch-distributed`) meet them as on a cluster."""
    docs = _rendered("runtimes", trainer.version,
                     lambda: kustomize(build.module_dir(trainer.module, trainer.version) / "manifests/base/runtimes"))
    docs = [d for d in docs if d.get("kind") in ("ClusterTrainingRuntime", "TrainingRuntime")]
    apply(cluster, docs, f"{len(docs)} ClusterTrainingRuntimes of Trainer {trainer.version}")
