"""Every pod, as the operators create it, meets the Pod Security Standards as Kubernetes enforces them.

A namespace labelled `pod-security.kubernetes.io/enforce` rejects every pod that fails its level, and
the operators create their pods long after `kubectl apply` succeeded: the job is accepted, then its
pods are refused, and it never starts. This rule runs every control of the "baseline" and
"restricted" profiles, at the policy version the admission plugin would use (kdt/podsecurity/, one
module per family of controls, each citing kubernetes/pod-security-admission `policy/check_*.go`),
on every pod template of the stream (Pod, the workload kinds, PyTorchJob replicas, JobSet and
(Cluster)TrainingRuntime replicated jobs) and on what the merge preview adds (kdt.expand): the
Training Operator's init container in the Worker pods of a PyTorchJob with a Master (from the
template `.kdt-cluster.yaml` or `--pytorch-init-container-template` names; without one, the
operator's built-in template, which has no securityContext) and a TrainJob merged with its runtime
(overrides, patches). The finding sits on the field of the source document, and says "injected by
..." when the field is not in the file; a breach a TrainJob's patch causes is reported on the
TrainJob, one in the runtime's own template on the runtime. What JobSet and its Jobs add to a pod
(labels, annotations, hostname, subdomain, the completion index env: kdt/operators/jobset/expand.py) is read by
no control, so their templates are judged as written.

Each finding names the control and words the field as the admission plugin does
(`allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false)`).
Windows pods (`spec.os.name: windows`) are exempt where Kubernetes exempts them (from policy
version 1.25: allowPrivilegeEscalation, capabilities_restricted, seccompProfile_restricted), and pods
with their own user namespace (`hostUsers: false`) where it relaxes (from 1.35: runAsNonRoot,
runAsUser, procMount).

Level: **error** where the API server would reject the pod, that is where a Namespace of the run
(the pod's namespace; a chart's objects without one are in the release namespace) enforces a level
the pod fails, at that namespace's `enforce-version` (`latest`: the Kubernetes version the run
targets, `--kubernetes-version`); **warning** for what fails the profile of the options below but is
not enforced there (a policy choice: `.kdt-lint.yaml` may raise it to error). A Namespace whose
labels the admission plugin cannot parse is a warning too (an unknown level enforces restricted).

Options: `profile` (`restricted`, `baseline` or `privileged`: nothing but what a namespace enforces),
`version` (`v1.NN` or `latest`; empty: the Kubernetes version the run targets); on the command
line, `kdt lint --pod-security LEVEL[:VERSION]`.

Aliases (for ignores, `disable` and levels, as before this rule took them over): `pod-security-restricted`
(every finding of this rule), `privileged`, `privilege-escalation` (control allowPrivilegeEscalation),
`host-namespace` (hostNamespaces), `host-path` (hostPath volumes, in hostPathVolumes or
restrictedVolumes), and `pod-security.<control>` for each control (`pod-security.hostPorts`).

Source: kubernetes/pod-security-admission v0.37.0-alpha.2 (policy versions up to v1.37) policy/,
api/helpers.go, admission/admission.go (the "violates PodSecurity" message);
kubernetes.io/docs/concepts/security/pod-security-standards. bench/pod_security.py runs the
library's own test data through this rule in each wrapper kind.
"""
from __future__ import annotations

import re

from ... import kinds as K
from ... import podsecurity as PS
from ... import render as R
from ... import targets as T
from ... import versions
from ...errors import UsageError
from ...findings import ERROR, WARNING
from ..pods import pod_templates
from ._util import d, lst

ID = "pod-security"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("A namespace that enforces a Pod Security level has the API server refuse the pods that fail it (error); "
       "failing only the configured profile, where no Namespace of the run enforces it, is a policy choice (warning).")
OPTIONS = {"profile": PS.RESTRICTED, "version": ""}

# The rules this one replaced, each naming the control(s) it checked.
LEGACY = {"privileged": "privileged", "allowPrivilegeEscalation": "privilege-escalation",
          "hostNamespaces": "host-namespace", "hostPathVolumes": "host-path"}
FORMER_ID = "pod-security-restricted"
ALIASES = {
    FORMER_ID: "every finding of pod-security (its former name)",
    "privileged": "control privileged (a rule of its own before pod-security)",
    "privilege-escalation": "control allowPrivilegeEscalation (a rule of its own before pod-security)",
    "host-namespace": "control hostNamespaces (a rule of its own before pod-security)",
    "host-path": "hostPath volumes, in controls hostPathVolumes and restrictedVolumes (a rule of its own before)",
    **{f"{ID}.{c.id}": f"control {c.id} ({c.level})" for c in PS.CHECKS},
}

_K8S = re.compile(r"^v?1\.(\d+)")


def settings(profile, version, kubernetes_version: str) -> tuple[str, int, int]:
    """(profile, policy minor version, cluster minor version) from the options and the run's Kubernetes release."""
    m = _K8S.match(str(kubernetes_version))
    cluster = int(m.group(1)) if m else int(_K8S.match(versions.KUBERNETES_DEFAULT).group(1))
    level = PS.parse_level(profile or PS.RESTRICTED)
    if level is None:
        raise UsageError(f"{ID}: profile {profile!r}: expected one of {', '.join(PS.LEVELS)}")
    v = str(version or "")
    parsed = PS.parse_version(v if v.startswith("v") or v in ("", PS.LATEST) else "v" + v) if v else None
    if parsed is False:
        raise UsageError(f"{ID}: version {version!r}: expected latest or v1.NN")
    return level, PS.effective(parsed, cluster), cluster


def _aliases(b: PS.Breach) -> tuple[str, ...]:
    legacy = LEGACY.get(b.check) or ("host-path" if b.check == "restrictedVolumes" and b.path[-1] == "hostPath" else None)
    return ((legacy,) if legacy else ()) + (f"{ID}.{b.check}", FORMER_ID)


class _Judge:
    """Breaches of one pod at the namespace's enforced level (errors) and the configured profile (warnings)."""

    def __init__(self, ctx, pool):
        self.profile, self.minor, self.cluster = settings(ctx.opt("profile"), ctx.opt("version"), ctx.kubernetes_version)
        self.release_ns = R.HELM_NAMESPACE if ctx.target is not None and ctx.target.kind == T.HELM else None
        self.enforce: dict[str, PS.LevelVersion] = {}
        for doc in pool:
            if K.NAMESPACE.matches(doc):
                labels = {str(k): str(v) for k, v in d(doc.get(("metadata", "labels"))).items()}
                self.enforce.setdefault(doc.name, PS.enforced(labels)[0])

    def namespace(self, doc) -> str | None:
        k = K.of(doc)
        if k is not None and not k.namespaced:
            return None          # cluster-scoped (ClusterTrainingRuntime): its pods run in each TrainJob's namespace
        return doc.namespace or self.release_ns

    def __call__(self, meta: dict, spec: dict, ns: str | None) -> list[tuple[PS.Breach, str, str]]:
        """(breach, level, how the admission plugin would put it) per offending field."""
        out: dict[tuple, tuple] = {}
        lv = self.enforce.get(ns) if ns else None
        if lv is not None and lv.level != PS.PRIVILEGED:
            for b in PS.evaluate(meta, spec, lv.level, PS.effective(lv.version, self.cluster)):
                out.setdefault(b.path, (b, ERROR, f'would be rejected in namespace "{ns}" ({lv.level} enforced): '
                                                 f'violates PodSecurity "{lv}"'))
        if self.profile != PS.PRIVILEGED:
            for b in PS.evaluate(meta, spec, self.profile, self.minor):
                out.setdefault(b.path, (b, WARNING, f'would violate PodSecurity "{self.profile}:v1.{self.minor}"'))
        return list(out.values())


def _who(doc, role: str) -> str:
    if K.POD.matches(doc):
        return "the pod "
    if K.of(doc) in (K.JOBSET, *K.RUNTIMES):
        return f"pods of replicated job {role!r} "
    if role and role != doc.kind:
        return f"{role} pods "
    return "its pods "


def _message(who: str, b: PS.Breach, head: str, tail: str = "") -> str:
    return f"{who}{head}: {b.reason} ({b.detail}) [control {b.check}]" + (f"; {tail}" if tail else "")


def _add(found: dict, doc, path: tuple, b: PS.Breach, level: str, message: str) -> None:
    key = (id(doc), path)
    have = found.get(key)
    if have is None or (have[1].level == WARNING and level == ERROR):
        found[key] = (doc, doc.finding(ID, message, path, level, control=b.check, aliases=_aliases(b)))


_ORIGIN = re.compile(r"TrainJob spec\.(runtimePatches|podTemplateOverrides)\[(\d+)\]")


def _trainjob_path(job, origin: str | None, rjob: str, pod_path: tuple) -> tuple:
    """Where in the TrainJob the field of a merged pod was written (its patch or override), else spec."""
    spec = d(job.data.get("spec")) if isinstance(job.data, dict) else {}
    m = _ORIGIN.search(origin or "")
    candidates = [(m.group(1), int(m.group(2)))] if m else \
        [("runtimePatches", i) for i in range(len(lst(spec.get("runtimePatches"))))] + \
        [("podTemplateOverrides", i) for i in range(len(lst(spec.get("podTemplateOverrides"))))]
    for key, i in candidates:
        entry = d(lst(spec.get(key))[i]) if i < len(lst(spec.get(key))) else {}
        if key == "podTemplateOverrides":
            if rjob in [d(t).get("name") for t in lst(entry.get("targetJobs"))]:
                return ("spec", key, i) + pod_path
            continue
        jobs = lst(d(d(d(entry.get("trainingRuntimeSpec")).get("template")).get("spec")).get("replicatedJobs"))
        for j, pj in enumerate(jobs):
            if d(pj).get("name") == rjob:
                return ("spec", key, i, "trainingRuntimeSpec", "template", "spec", "replicatedJobs", j,
                        "template", "spec", "template") + pod_path
    return ("spec",)


def _pytorchjob_pods(found: dict, judge: _Judge, expanded) -> None:
    """The fields the Training Operator injects (the Worker's init containers), judged in their pod."""
    seen = set()
    for e in expanded:
        if not (K.POD.matches(e.obj) and K.PYTORCHJOB.matches(e.source)) or \
                (id(e.source), e.facts.get("replica_type")) in seen:
            continue
        seen.add((id(e.source), e.facts.get("replica_type")))
        who = f"{e.facts.get('replica_type')} pods "
        for b, level, head in judge(d(e.obj.get("metadata")), d(e.obj.get("spec")), judge.namespace(e.source)):
            origin = e.trace.origin_of(b.path)
            if origin is None:
                continue        # a field of the manifest: judged in its template
            _add(found, e.source, e.base_path + b.path, b, level,
                 _message(who, b, head, f"not in the manifest: injected by the {origin}"))


def _trainjob_pods(found: dict, judge: _Judge, expanded) -> None:
    """Each TrainJob's JobSet: breaches its patches cause (on the TrainJob), and the runtime's own ones
    where the TrainJob's namespace enforces them (on the runtime)."""
    for e in expanded:
        if not K.JOBSET.matches(e.obj) or e.base_doc is None:
            continue
        job, rt = e.source, e.base_doc
        base_jobs = lst(d(d(e.base).get("spec")).get("replicatedJobs"))
        ns = judge.namespace(job)
        for k, rj in enumerate(lst(d(e.obj.get("spec")).get("replicatedJobs"))):
            name = str(d(rj).get("name", ""))
            tmpl = d(d(d(d(rj).get("template")).get("spec")).get("template"))
            own_t = d(d(d(d(base_jobs[k] if k < len(base_jobs) else {}).get("template")).get("spec")).get("template"))
            own = {(b.check, b.path, b.detail) for b, _, _ in judge(d(own_t.get("metadata")), d(own_t.get("spec")), ns)}
            at = ("spec", "replicatedJobs", k, "template", "spec", "template")
            for b, level, head in judge(d(tmpl.get("metadata")), d(tmpl.get("spec")), ns):
                if (b.check, b.path, b.detail) in own:
                    if level == ERROR:
                        _add(found, rt, ("spec", "template") + at + b.path, b, level,
                             _message(f"pods of replicated job {name!r}, for TrainJob {job.name!r}, ", b, head))
                    continue
                _add(found, job, _trainjob_path(job, e.trace.origin_of(at + b.path), name, b.path), b, level,
                     _message(f"pods of replicated job {name!r} of {rt.kind} {rt.name!r} merged with this TrainJob, ",
                              b, head))


def check(docs, ctx):
    from ...merge_preview import expand_documents
    judge = _Judge(ctx, ctx.pool_of(docs, K.NAMESPACE))
    found: dict = {}
    for doc in docs:
        if K.NAMESPACE.matches(doc):
            labels = {str(k): str(v) for k, v in d(doc.get(("metadata", "labels"))).items()}
            for problem in PS.enforced(labels)[1]:
                yield doc.finding(ID, f"namespace label {problem}", ("metadata", "labels", problem.split(":")[0]),
                                  WARNING)
        for pt in pod_templates(doc):
            root = pt.path[:-1]      # the pod template: its spec and metadata are the pod's
            meta = d(doc.get(pt.metadata_path or root + ("metadata",)))
            for b, level, head in judge(meta, pt.spec, judge.namespace(doc)):
                _add(found, doc, root + b.path, b, level, _message(_who(doc, pt.role), b, head))
    jobs = [x for x in docs if K.PYTORCHJOB.matches(x) or K.TRAINJOB.matches(x)]
    if jobs:
        expanded, _ = expand_documents(jobs + ctx.pool_of(docs, *K.RUNTIMES),
                                       options=ctx.cluster.options if ctx.cluster else None)
        _pytorchjob_pods(found, judge, expanded)
        _trainjob_pods(found, judge, expanded)
    for _, f in found.values():
        yield f
