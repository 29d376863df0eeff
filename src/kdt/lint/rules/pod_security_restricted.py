"""Every pod a training workload creates meets Pod Security "restricted".

Namespaces labelled `pod-security.kubernetes.io/enforce: restricted` reject
any other pod, and the operators create their pods long after `kubectl apply`
succeeded: the job is accepted, then its pods are refused, and it never
starts. Generic scanners read Pod, Deployment or Job templates but not the
ones inside a PyTorchJob, a runtime's JobSet or a TrainJob, so this rule reads
each of them: PyTorchJob replicas, JobSet and ClusterTrainingRuntime /
TrainingRuntime replicated jobs, StatefulSets that run distributed training,
and a TrainJob merged with its runtime (reported on the TrainJob when its
overrides or patches are what break the profile).

For every container, init container and ephemeral container, as the
"restricted" profile of the Pod Security Standards checks it:
- `allowPrivilegeEscalation: false`;
- `runAsNonRoot: true` (container, or the pod's securityContext) and no `runAsUser: 0`;
- `seccompProfile.type` RuntimeDefault or Localhost (container or pod);
- `capabilities.drop` includes ALL; `capabilities.add` only NET_BIND_SERVICE;
and only the volume types the profile allows (configMap, csi, downwardAPI,
emptyDir, ephemeral, image, persistentVolumeClaim, projected, secret).

The level is a setting (`.kdt-lint.yaml`: `rules: {pod-security-restricted: {level: error}}`)
for clusters that enforce the profile.

Source: kubernetes pod-security-admission policy/check_*.go of the restricted
level (allowPrivilegeEscalation, runAsNonRoot, runAsUser, seccompProfile_restricted,
capabilities_restricted, restrictedVolumes); kubernetes.io/docs/concepts/security/pod-security-standards.
"""
from __future__ import annotations

from ... import kinds as K
from ...findings import WARNING
from ..pods import pod_templates, runtime_for, trainer_pod
from ._torchrun import launches_distributed
from ._util import d, lst, trainjobs

ID = "pod-security-restricted"
LEVEL = WARNING
OPTIONS = {"allowed_capabilities": ["NET_BIND_SERVICE"]}

ALLOWED_VOLUMES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image",
                   "persistentVolumeClaim", "projected", "secret")
SECCOMP_OK = ("RuntimeDefault", "Localhost")
_CONTAINER_KEYS = ("initContainers", "containers", "ephemeralContainers")


def violations(ps: dict, allowed_caps) -> list[tuple[tuple, str]]:
    """(path inside the pod spec, what is wrong) for each breach of "restricted"."""
    out: list[tuple[tuple, str]] = []
    pod_sc = d(ps.get("securityContext"))
    if pod_sc.get("runAsUser") == 0:
        out.append((("securityContext", "runAsUser"), "the pod runs as user 0 (root)"))
    for i, v in enumerate(lst(ps.get("volumes"))):
        bad = [k for k in d(v) if k != "name" and k not in ALLOWED_VOLUMES]
        if bad:
            out.append((("volumes", i, bad[0]), f"volume {d(v).get('name')!r} is of type {bad[0]}, "
                                                  f"which \"restricted\" does not allow"))
    for key in _CONTAINER_KEYS:
        for i, c in enumerate(lst(ps.get(key))):
            c = d(c)
            sc = d(c.get("securityContext"))
            missing = []
            if sc.get("allowPrivilegeEscalation") is not False:
                missing.append("allowPrivilegeEscalation: false")
            if sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is not True:
                missing.append("runAsNonRoot: true")
            if sc.get("runAsUser") == 0:
                missing.append("a runAsUser other than 0")
            seccomp = d(sc.get("seccompProfile")).get("type") or d(pod_sc.get("seccompProfile")).get("type")
            if seccomp not in SECCOMP_OK:
                missing.append("seccompProfile.type: RuntimeDefault")
            caps = d(sc.get("capabilities"))
            if "ALL" not in lst(caps.get("drop")):
                missing.append("capabilities.drop: [ALL]")
            added = [x for x in lst(caps.get("add")) if x not in allowed_caps]
            if added:
                missing.append(f"no added capabilities but {', '.join(allowed_caps)} (adds {', '.join(map(str, added))})")
            if missing:
                path = (key, i, "securityContext") if "securityContext" in c else (key, i)
                out.append((path, f"container {c.get('name')!r} is not \"restricted\": it needs {'; '.join(missing)}"))
    return out


def _checked(doc) -> bool:
    if K.of(doc) in (K.PYTORCHJOB, K.JOBSET, *K.RUNTIMES):
        return True
    if K.STATEFULSET.matches(doc):
        return any(launches_distributed(d(c)) for pt in pod_templates(doc)
                   for c in lst(pt.spec.get("containers")) + lst(pt.spec.get("initContainers")))
    return False


def check(docs, ctx):
    caps = ctx.opt("allowed_capabilities") or OPTIONS["allowed_capabilities"]
    for doc in docs:
        if not _checked(doc):
            continue
        for pt in pod_templates(doc):
            for path, message in violations(pt.spec, caps):
                where = f"{pt.role}: " if pt.role and pt.role != doc.kind else ""
                yield doc.finding(ID, where + message, pt.path + path)
    pool = ctx.pool(docs)
    for job in trainjobs(docs):
        runtime = runtime_for(job, pool)
        if runtime is None:
            continue            # an installed runtime: its pods cannot be seen from here
        merged = trainer_pod(job, runtime)
        if merged is None:
            continue
        own = {m for pt in pod_templates(runtime) for _, m in violations(pt.spec, caps)}
        for _, message in violations(merged[0], caps):
            if message not in own:
                yield job.finding(ID, f"with this TrainJob's overrides the node pod of {runtime.kind} "
                                      f"{runtime.name!r} is not restricted: {message}", ("spec",))
