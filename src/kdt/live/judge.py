"""The judge: a target's documents held against the real API server and the real operators.

For one target at one Trainer release, on a running control plane (kdt.live.controlplane):
1. **Admission** (kdt.live.admission): what a user applies together (a target, or a walked folder's files)
   is applied server-side with `--dry-run=server` tier by tier in the order a cluster needs (runtimes before
   the jobs naming them), so the API server's schema and CEL validation and every operator webhook answer
   for each document; the answer (accepted, or refused and the server's message, and the fields it names)
   is set beside kdt's own error verdict for that document (validate's errors and the lint rules that model
   an admission refusal).
2. **Creation**: the accepted documents are applied for real (namespaced ones into a namespace of the run),
   and the controllers create what they create: the Training Operator's pods and Services, Trainer's
   JobSet (and its runtime snapshot ConfigMap from 2.3), JobSet's Jobs and Service, the Job controller's
   pods.
3. **Comparison**: each object of the merge preview (`kdt merge-preview` with no elision) is matched with the
   live object (by kind and name; a Job's pod by its Job and completion index) and both are put through the
   API server's defaulting the same way (a server dry-run create of the preview's object), so what the
   API server adds to every object (defaults, the service account token volume, ...) is the same on both
   sides; then compared field by field after normalising only what a cluster assigns (uid,
   resourceVersion, timestamps, owner uids, generated names and suffixes, status). A difference is
   explained when a row of `EXPLAINED` names it (with its cause), else unexplained.
"""
from __future__ import annotations

import copy
import json
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from .. import kinds as K
from ..documents import Document
from ..errors import UsageError
from . import admission as A
from .admission import Admission, Unit, cleanup  # noqa: F401  (the judge's interface)

#: differences with a known cause: (kind or "*", JSON path regex, cause, only where the preview has no value), each
#: row the registered kind's whose operator it concerns (`Kind.explained`, kdt/operators/<operator>/kind.py).
#: Each row says why the preview and the cluster may differ there and still both be right.
EXPLAINED: list[tuple[str, str, str, bool]] = [row for k in K.ALL for row in k.explained]

# what a cluster assigns: never compared
_ASSIGNED_META = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink",
                  "deletionTimestamp", "deletionGracePeriodSeconds")
_UID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_GENERATED = re.compile(r"^(kube-api-access)-[a-z0-9]{5}$")


@dataclass
class Difference:
    kind: str
    name: str
    path: str
    preview: object
    live: object
    cause: str | None = None       # None: unexplained


@dataclass
class Result:
    target: str
    release: str
    admissions: list[Admission] = field(default_factory=list)
    namespace: str = ""            # the unit's own namespace (cleanup deletes it)
    made_namespaces: list[str] = field(default_factory=list)   # namespaces the judge created
    created: list[dict] = field(default_factory=list)          # objects applied for real (references)
    notes: list[str] = field(default_factory=list)
    training_operator: str = ""    # the Training Operator release judged against
    objects: int = 0               # objects matched
    fields: int = 0                # leaf fields compared
    differences: list[Difference] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)      # preview objects the cluster did not create
    extra: list[str] = field(default_factory=list)        # live objects the preview does not show
    extra_explained: list[tuple[str, str]] = field(default_factory=list)   # (object, cause)
    seconds: float = 0.0

    @property
    def unexplained(self) -> list[Difference]:
        return [d for d in self.differences if d.cause is None]

    @property
    def agreeing(self) -> int:
        return self.fields - len(self.differences)


# -- normalising ----------------------------------------------------------------------------------------
def _strip(obj: dict, uids: dict) -> dict:
    obj = copy.deepcopy(obj)
    obj.pop("status", None)
    meta = obj.setdefault("metadata", {})
    for k in _ASSIGNED_META:
        meta.pop(k, None)
    ann = meta.get("annotations") or {}
    ann.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    if not ann:
        meta.pop("annotations", None)
    for ref in meta.get("ownerReferences") or []:
        ref.pop("uid", None)
    return _replace_generated(obj, uids)


def _replace_generated(value, uids: dict):
    if isinstance(value, dict):
        return {k: _replace_generated(v, uids) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_generated(v, uids) for v in value]
    if isinstance(value, str):
        if _UID.match(value):
            return "<uid>"
        m = _GENERATED.match(value)
        if m:
            return f"{m.group(1)}-<suffix>"
    return value


def _leaves(a, b, path: str, out: list, counter: list) -> None:
    """Every leaf path where `a` (preview) and `b` (live) differ; counter[0] counts leaves compared."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            _leaves(a.get(k, _MISSING), b.get(k, _MISSING), f"{path}.{k}" if path else k, out, counter)
        return
    if isinstance(a, list) and isinstance(b, list):
        names_a = [x.get("name") for x in a if isinstance(x, dict)]
        names_b = [x.get("name") for x in b if isinstance(x, dict)]
        if names_a and len(names_a) == len(a) and None not in names_a and len(set(names_a)) == len(names_a) \
                and sorted(names_a) == sorted(names_b) and names_a != names_b:
            counter[0] += 1
            out.append((f"{path}[order]", names_a, names_b))
            by_b = {x["name"]: x for x in b}
            for x in a:
                _leaves(x, by_b[x["name"]], f"{path}[name={x['name']}]", out, counter)
            return
        for i in range(max(len(a), len(b))):
            _leaves(a[i] if i < len(a) else _MISSING, b[i] if i < len(b) else _MISSING, f"{path}[{i}]", out, counter)
        return
    counter[0] += 1
    if a != b:
        out.append((path, None if a is _MISSING else a, None if b is _MISSING else b))


class _Missing:
    def __repr__(self):
        return "<absent>"


_MISSING = _Missing()


def explain(kind: str, path: str, preview=None) -> str | None:
    for k, rx, cause, absent_only in EXPLAINED:
        if k in ("*", kind) and re.search(rx, path) and (preview is None or not absent_only):
            return cause
    return None


# -- the run --------------------------------------------------------------------------------------------
def _key(obj: dict) -> tuple:
    meta = obj.get("metadata") or {}
    return obj.get("kind"), meta.get("namespace") or "", meta.get("name") or meta.get("generateName") or ""


def _pod_key(pod: dict) -> tuple | None:
    """A Job's pod: (namespace, Job name, completion index); the preview names it by generateName
    `<job>-<index>-` (kdt.expand.jobset), the Job controller `<job>-<index>-<random>`."""
    meta = pod.get("metadata") or {}
    owner = next((r.get("name") for r in meta.get("ownerReferences") or [] if r.get("kind") == "Job"), None)
    ann = meta.get("annotations") or {}
    index = ann.get("batch.kubernetes.io/job-completion-index")
    if owner is None or index is None:
        gen = meta.get("generateName") or ""
        m = re.match(r"^(.*)-(\d+)-$", gen)
        if not m:
            return None
        owner, index = m.group(1), m.group(2)
    return meta.get("namespace") or "", owner, str(index)


def judge(cluster, target: str, docs: list[Document], release: str, ours: dict | None = None,
          namespace: str = "kdt-judge", options: dict | None = None, wait_s: float = 30.0,
          compare: bool = True, namespace_ready: bool = False) -> Result:
    """`ours`: {(target, index, prefix): [error findings]} from validate and lint (kdt.live.verdicts);
    `compare`: also compare what the controllers create with the merge preview (else admission only, and only
    what later documents' admission reads is applied for real); `namespace_ready`: the caller made it."""
    from ..expand.model import Limit
    from ..merge_preview import expand_documents
    t0 = time.monotonic()
    res = Result(target, release, namespace=namespace)
    scope = A.served(cluster)
    placed = A.place(docs, namespace, scope)
    own = {(d.data.get("metadata") or {}).get("name") for d, _ in placed if K.NAMESPACE.matches(d.data)}
    wanted = [] if namespace_ready else [namespace]
    wanted += sorted({ns for d, _ in placed if isinstance(d.data.get("metadata"), dict)
                      and isinstance(ns := d.data["metadata"].get("namespace"), str)} - {namespace} - own)
    A.make_namespaces(cluster, res, wanted)
    accepted = A.admit(cluster, res, placed, ours or {}, everything=compare)
    if not compare:
        res.seconds = time.monotonic() - t0
        return res
    opts = {**(options or {}), "limit": Limit(None)}
    expansion = expand_documents(accepted, trainer_version=release, options=opts)
    objects, _findings = expansion
    own_objects = {(p.data.get("kind"), (p.data.get("metadata") or {}).get("namespace") or "",
                    (p.data.get("metadata") or {}).get("name")) for p in accepted}
    # A Job JobSet creates only once its dependsOn is reached (and that Job's pods): the Jobs it waits for never
    # complete here (no kubelet runs their pods), so it is compared when the cluster has it and noted when not
    held = {_key(e.obj): e.facts["depends_on"] for e in objects if e.facts.get("depends_on")}
    _compare(cluster, res, [e.obj for e in objects], wait_s, own_objects, held)
    res.seconds = time.monotonic() - t0
    return res


def _rest_kind(kind: str, api_version: str | None = None):
    """The registered kind the judge reads and creates by the API server's REST interface (kdt.live.api: one
    kept-alive connection, no kubectl process per poll or per dry run): its `Kind.rest`; None for any other."""
    return next((k for k in K.ALL if k.rest and k.kind == kind and api_version in (None, k.api_version)), None)


def _rest_path(kind: str, namespace: str, api_version: str | None = None) -> str | None:
    k = _rest_kind(kind, api_version)
    if k is None:
        return None
    base = f"/apis/{k.api_version}" if k.group else f"/api/{k.api_version}"
    return f"{base}/namespaces/{namespace}/{k.kind.lower()}s"


def _api(cluster):
    """The cluster's REST client (kdt.live.api.Api), made once per cluster object."""
    api = cluster.__dict__.get("_kdt_api")
    if api is None:
        from .api import Api
        api = cluster.__dict__["_kdt_api"] = Api.from_kubeconfig(cluster.kubeconfig)
    return api


def _live_objects(cluster, kinds: set[str], namespaces: set[str]) -> list[dict]:
    """What the cluster holds of `kinds` in `namespaces` (it is polled while the controllers work): the kinds of
    `Kind.rest` by the REST interface (each item given its kind and apiVersion, as kubectl gives them), any other in
    one kubectl call per namespace, each resource alone only when the joint call fails (a kind not served)."""
    from .api import ApiError
    out: list[dict] = []
    rest = sorted(k for k in kinds if _rest_kind(k) is not None)
    for ns in sorted(namespaces):
        for k in rest:
            try:
                got = _api(cluster).items(_rest_path(k, ns))
            except ApiError:
                continue        # not served here
            out.extend({"apiVersion": _rest_kind(k).api_version, "kind": k, **i} for i in got)
    resources = {"PodGroup": "podgroups"}
    wanted = sorted(resources[k] for k in kinds if k in resources)
    if not wanted:
        return out
    for ns in sorted(namespaces):
        proc = cluster.kubectl("get", ",".join(wanted), "-n", ns, "-o", "json", check=False)
        if proc.returncode == 0:
            out.extend(json.loads(proc.stdout).get("items") or [])
            continue
        for res in wanted:
            one = cluster.kubectl("get", res, "-n", ns, "-o", "json", check=False)
            if one.returncode == 0:
                out.extend(json.loads(one.stdout).get("items") or [])
    return out


_PLACEHOLDER = re.compile(r"^<[^<>]+>$")


def _fill_assigned(preview, live, path: str = "", filled: list | None = None):
    """The preview with each placeholder it writes for a value the cluster assigns (`<uid>`, `<hash>`, ...)
    replaced by the live object's value at the same place; `filled` collects those paths."""
    if isinstance(preview, dict) and isinstance(live, dict):
        return {k: _fill_assigned(v, live.get(k), f"{path}.{k}" if path else k, filled) for k, v in preview.items()}
    if isinstance(preview, list) and isinstance(live, list):
        return [_fill_assigned(v, live[i] if i < len(live) else None, f"{path}[{i}]", filled)
                for i, v in enumerate(preview)]
    if isinstance(preview, str) and _PLACEHOLDER.match(preview) and isinstance(live, str):
        if filled is not None:
            filled.append(path)
        return live
    return preview


def _defaulted(cluster, obj: dict, name: str) -> dict:
    """The preview's object as the API server stores it: a dry-run create under a name of its own (the live
    one exists; its owners' uids are not known to the preview), then given back the live name, its
    generateName and its owner references."""
    o = copy.deepcopy(obj)
    meta = o.setdefault("metadata", {})
    kept = {k: meta.pop(k) for k in ("generateName", "ownerReferences") if k in meta}
    temp = name + "-kdtjudge"
    meta["name"] = temp
    path = _rest_path(str(o.get("kind")), meta.get("namespace") or "default", o.get("apiVersion"))
    if path is not None:
        from .api import ApiError
        try:
            created = _api(cluster).request("POST", path + "?dryRun=All&fieldManager=kubectl-create", o)
        except ApiError as exc:
            raise UsageError(f"the API server refuses the preview's {obj.get('kind')} {name}: {exc.detail[-600:]}") \
                from None
    else:
        proc = cluster.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(o), check=False)
        if proc.returncode != 0:
            raise UsageError(f"the API server refuses the preview's {obj.get('kind')} {name}: "
                             f"{A.server_message(proc.stderr)[-600:]}")
        created = json.loads(proc.stdout)
    out = _renamed(created, temp, name)
    out["metadata"].update(kept)
    return out


def _renamed(value, old: str, new: str):
    """Every string that is the temporary name (a Job's job-name labels the API server derives from it)."""
    if isinstance(value, dict):
        return {k: _renamed(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, old, new) for v in value]
    return new if value == old else value


def _compare(cluster, res: Result, preview: list[dict], wait_s: float, own: set = frozenset(),
             held: dict | None = None) -> None:
    held = held or {}
    kinds = {o.get("kind") for o in preview}
    namespaces = {(o.get("metadata") or {}).get("namespace") or "default" for o in preview}
    want = len(preview) - len(held)
    end = time.monotonic() + wait_s
    live: list[dict] = []
    while True:
        live = _live_objects(cluster, kinds, namespaces)
        matched = _match(preview, live)
        if sum(1 for _, l in matched if l is not None) >= want or time.monotonic() > end:
            break
        cluster.check()
        time.sleep(0.5)
    uids = {}
    for l in live:
        u = (l.get("metadata") or {}).get("uid")
        if u:
            uids[u] = f"<uid of {l.get('kind')} {l['metadata'].get('name')}>"
    matched_live = set()
    for p, l in matched:
        label = f"{p.get('kind')} {_key(p)[2]}"
        if l is None:
            if _key(p) in held:
                res.notes.append(f"{label}: not created while its dependsOn ({held[_key(p)]}) is not reached "
                                 "(jobset depends_on.go): no kubelet runs the pods of the Jobs it waits for here")
            else:
                res.missing.append(label)
            continue
        matched_live.add(id(l))
        name = l["metadata"]["name"]
        filled: list = []
        p = _fill_assigned(p, l, "", filled)
        pd = _strip(_defaulted(cluster, p, name), uids)
        ld = _strip(l, uids)
        # what the owner gives its children: the owner references' uids are normalised; the rest compared
        if p.get("kind") == "Pod" or (p.get("metadata") or {}).get("ownerReferences") is None:
            pd["metadata"].pop("ownerReferences", None)
            ld["metadata"].pop("ownerReferences", None)
        _parse_snapshot(pd)
        _parse_snapshot(ld)
        out, counter = [], [0]
        _leaves(pd, ld, "", out, counter)
        res.objects += 1
        res.fields += counter[0]
        for path, a, b in out:
            res.differences.append(Difference(p.get("kind"), name, path, a, b, explain(p.get("kind"), path, a)))
    for l in live:
        if id(l) in matched_live or l.get("kind") not in kinds or _ignored_live(l) or _key(l) in own:
            continue
        label = f"{l.get('kind')} {l['metadata'].get('name')}"
        owner = next((r.get("kind") for r in l["metadata"].get("ownerReferences") or []), None)
        if owner == "ReplicaSet":
            res.extra_explained.append((label, "a Deployment's pod (the Deployment and ReplicaSet controllers): the "
                                               "merge preview shows what the training operators and the "
                                               "StatefulSet controller create"))
        else:
            res.extra.append(label)


def _parse_snapshot(obj: dict) -> None:
    """Trainer 2.3's runtime snapshot ConfigMap (pkg/runtime/core/snapshot.go): its `runtime` is the stored
    runtime as YAML, compared as the object it holds, less what the API server assigned the runtime."""
    import yaml
    data = obj.get("data") or {}
    if obj.get("kind") != "ConfigMap" or not isinstance(data.get("runtime"), str):
        return
    try:
        rt = yaml.safe_load(data["runtime"])
    except yaml.YAMLError:
        return
    if isinstance(rt, dict):
        meta = rt.get("metadata") or {}
        for k in _ASSIGNED_META:
            meta.pop(k, None)
        data["runtime"] = rt


def _ignored_live(obj: dict) -> bool:
    # every namespace has these: not created by an operator
    return obj.get("kind") == "ConfigMap" and obj["metadata"].get("name") == "kube-root-ca.crt"


def _match(preview: list[dict], live: list[dict]) -> list[tuple[dict, dict | None]]:
    by_key = {}
    pods = {}
    for l in live:
        if l.get("kind") == "Pod":
            k = _pod_key(l)
            if k is not None:
                pods.setdefault(k, l)
        by_key[_key(l)] = l
    out = []
    for p in preview:
        meta = p.get("metadata") or {}
        ns = meta.get("namespace") or "default"
        if p.get("kind") == "Pod" and not meta.get("name"):
            k = _pod_key({**p, "metadata": {**meta, "namespace": ns}})
            out.append((p, pods.get(k) if k else None))
        else:
            out.append((p, by_key.get((p.get("kind"), ns, meta.get("name")))))
    return out


@dataclass
class Job:
    """A unit to judge at one release set, with kdt's own verdicts on its documents."""
    unit: Unit
    training_operator: str
    ours: dict
    source: str = ""               # where the unit comes from (a repository of bench/live_repos.py)
    cluster_file: object = None    # kdt.cluster_file.Cluster of the unit's repository (None: none)


def plan(results, trainer_releases: tuple[str, ...] | None = None, training_operators: tuple[str, ...] | None = None,
         cluster_file=None, source: str = "", trainer_version: str | None = None) -> list[Job]:
    """The units of the rendered targets (kdt.live.admission.units), each at the Trainer release it is checked
    for (`trainer_version`, else its marker, the repository's pin or its shape: kdt.trainer_release.decide) and,
    where it holds a kubeflow.org kind, at every Training Operator release (`training_operators`, default all of
    kdt.versions.TRAINING_OPERATOR_RELEASES), with kdt's verdicts (kdt.live.verdicts: each target's own,
    references resolved across its unit)."""
    import dataclasses

    from .. import trainer_release, versions
    from .verdicts import ours
    tos = training_operators or tuple(versions.TRAINING_OPERATOR_RELEASES)
    jobs = []
    for unit in A.units(results, lambda t, docs: trainer_release.decide(t, docs, trainer_version).release,
                        None if trainer_version else
                        lambda docs: getattr(trainer_release.fitting_release(docs), "release", None)):
        if unit.release is None:
            unit = dataclasses.replace(unit, release=versions.TRAINER_DEFAULT)
        if trainer_releases and unit.release not in trainer_releases:
            continue
        for to in (tos if unit.kubeflow_v1 else (versions.TRAINING_OPERATOR_DEFAULT,)):
            verdicts: dict = {}
            for r in unit.targets:
                verdicts.update(ours(r.documents, unit.release, to, cluster_file,
                                     run_docs=unit.documents if len(unit.targets) > 1 else None))
            jobs.append(Job(unit, to, verdicts, source, cluster_file))
    return jobs


def execute(jobs: list[Job], stream=None, wait_s: float = 30.0, compare: bool = True):
    """Judge the jobs: one control plane per release set (and cluster file) at a time, shared by every job
    that runs at it (from any repository), each unit in a namespace of its own; a line per unit on `stream`
    as it goes. Yields (job, Result)."""
    import os
    import secrets
    import sys
    from . import releases as R
    from .controlplane import Attached
    stream = stream or sys.stderr
    groups: dict[tuple, list[Job]] = {}
    for j in jobs:
        cfile = getattr(j.cluster_file, "file", "") or ""
        groups.setdefault((j.unit.release, j.training_operator, cfile), []).append(j)
    done = 0
    for (rel, to, _cfile), js in sorted(groups.items()):
        rset = R.ReleaseSet(trainer=rel, training_operator=to)
        with _control_plane(rset, js[0].cluster_file, stream) as c:
            shared = isinstance(c, Attached)      # a kept one: this run's own namespaces, removed after
            # on a kept one, names no other run uses, nor an earlier one of this process whose namespaces still
            # terminate (creating in a terminating namespace is refused)
            prefix = f"kdt-judge-{os.getpid()}-{secrets.token_hex(3)}-" if shared else "kdt-judge-"
            for n, j in enumerate(js):
                if n % 50 == 0:     # the next units' namespaces, in one call
                    A.make_namespaces(c, Result("", rel), [f"{prefix}{i}" for i in range(n, min(n + 50, len(js)))])
                ns = f"{prefix}{n}"
                res = judge(c, j.unit.name, j.unit.documents, rel, j.ours, namespace=ns,
                            options=getattr(j.cluster_file, "options", None), wait_s=wait_s, compare=compare,
                            namespace_ready=True)
                res.training_operator = to
                cleanup(c, res, namespace=compare or shared)
                done += 1
                judged = [a for a in res.admissions if a.skipped is None]
                print(f"live: [{done}/{len(jobs)}] {j.source + ': ' if j.source else ''}{j.unit.name} "
                      f"(Trainer {rel}, Training Operator {to}): {len(judged)} judged, "
                      f"{sum(1 for a in judged if not a.agree)} disagreeing, {res.seconds:.1f} s",
                      file=stream, flush=True)
                yield j, res


@contextmanager
def _control_plane(rset, cluster_file, stream):
    """The control plane `kdt cluster up` keeps with `rset`'s releases, started from this cluster file
    (kdt.live.kept.find), attached; else one started for these jobs and stopped after them."""
    from . import kept
    from .controlplane import Cluster, attach
    found = kept.find(rset.trainer, rset.training_operator, getattr(cluster_file, "fingerprint", None) or "")
    if found:
        name, st = found
        print(f"live: judging on the control plane `kdt cluster up --name {name}` keeps ({rset.name})",
              file=stream, flush=True)
        yield attach(st, stream)
        return
    with Cluster.start(rset, stream=stream, cluster_file=cluster_file) as c:
        yield c


def run_targets(results, stream=None, trainer_releases: tuple[str, ...] | None = None, wait_s: float = 30.0,
                compare: bool = True, training_operators: tuple[str, ...] | None = None):
    """Judge every rendered target of this repository (`plan`, then `execute`); yields (Job, Result)."""
    from .. import cluster_file
    jobs = plan(results, trainer_releases, training_operators, cluster_file.load())
    yield from execute(jobs, stream, wait_s, compare)
