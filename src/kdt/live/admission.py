"""The judge's admission step: what a user applies together, held against the API server and the webhooks.

A **unit** is what a user applies at once: a target (a kustomization, a chart's values file), every file a
walk met in one folder, as `kubectl apply -f folder/` applies them (kubectl reads a folder's files in name
order and does not recurse), or every file named on the command line, as `kubectl apply -f a.yaml -f b.yaml`
applies them (in the order named: kubectl's resource builder visits its -f paths in order). Each document
keeps its own file, index and line.

Its documents go in the order a cluster needs them (`tier`: each kind's `apply_tier`, kdt.kinds): namespaces and CRDs; cluster-scoped objects
and what pods and jobs refer to (PriorityClasses, ServiceAccounts, quotas, ConfigMaps, ...); runtimes and
Services; the rest; the jobs. Each tier costs one kubectl call for its dry run (`apply --server-side
--dry-run=server -o name`: the names kubectl prints are the accepted documents; a refused one's message is
kubectl's when it is the only one refused, else it is asked alone) and one for the accepted documents that
are applied for real (all of them when the controllers' objects are compared; else only the kinds whose
existence another document's admission reads: `admission_reads` of kdt.kinds), so later tiers meet them.

Judged otherwise:
- **infrastructure** (`infrastructure` of kdt.kinds: CRDs, webhook configurations, admission policies, APIServices) and
  **every object the control plane installed** (`Client.installed`: the operators' CRDs, webhook
  configurations and runtimes, the cluster file's objects): a dry run with `--force-conflicts` (an
  installed one as the installer, its field manager, so the document replaces what the install applied
  instead of merging with it); never applied, never deleted. Applied, they would change how the cluster
  answers every later document (a webhook configuration naming a Service that does not run refuses all it
  matches) or replace the control plane's own copies.
- **`metadata.generateName` without a name** (Argo CD hook Jobs): `kubectl apply` cannot take them
  ("cannot use generate name with apply"); `kubectl create --dry-run=server`, and `create` for real when the
  controllers' objects are compared. So is an object that carries a `metadata.uid` (one exported from a
  cluster): server-side apply takes the uid as a precondition ("uid mismatch ... no existing object was
  found": k8s.io/apiserver v0.36.3 pkg/endpoints/handlers/patch.go), where `kubectl apply`'s create of a new object, and `kubectl create`, let the API server assign
  its own (k8s.io/apiserver v0.36.3 pkg/registry/rest/meta.go FillObjectMetaSystemFields).
- **kinds the control plane does not serve** (its discovery, read once): not judged, and said why.
"""
from __future__ import annotations

import copy
import dataclasses
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .. import kinds as K
from ..documents import Document
from . import install, verdicts

# namespaces every cluster has
_SYSTEM_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease"}


@dataclass
class Admission:
    doc: Document
    refused: str | None            # the API server's message, None when accepted
    ours: list                     # kdt's error findings on the document
    skipped: str | None = None     # not judged (a kind this control plane does not serve), and why
    how: str = "apply"             # apply | guarded (dry run only, never applied) | create (generateName)

    @property
    def agree(self) -> bool:
        return self.skipped is not None or (self.refused is None) == (not self.ours)

    @property
    def server_fields(self) -> list[str]:
        return verdicts.server_fields(self.refused)

    @property
    def our_fields(self) -> list[str]:
        return [p for p in (verdicts.finding_path(f, self.doc) for f in self.ours) if p]

    @property
    def field(self) -> str | None:
        """Where both refuse: whether kdt names the field the server names (kdt.live.verdicts.compare_fields)."""
        if self.skipped or self.refused is None or not self.ours:
            return None
        return verdicts.compare_fields(self.our_fields, self.server_fields)


# -- units ----------------------------------------------------------------------------------------------
@dataclass
class Unit:
    name: str                      # the target's name, or the folder's (`site/examples/`) for a walked folder
    release: str                   # the Trainer release it is judged at
    targets: list = field(default_factory=list)          # kdt.targets.Target
    documents: list[Document] = field(default_factory=list)

    @property
    def kubeflow_v1(self) -> bool:
        return any(isinstance(d.data, dict) and str(d.data.get("apiVersion", "")).startswith("kubeflow.org/")
                   for d in self.documents)


_NAMED = "<the files named>"      # the unit of the files named on the command line


def units(results, decide, fitting_release=None) -> list[Unit]:
    """The render results (kdt.render) as units: the files a walk met in one folder are one unit, their files
    in name order as kubectl reads a folder; the files named (not walked) are one unit, in the order named;
    every other target is its own. A unit is judged at the Trainer
    release `decide(target, documents)` gives its targets; where a folder's files are decided apart (one file's
    TrainJob fits 2.1 only, its runtime's file any release), at the release `fitting_release(documents)` gives the
    folder's documents together, else the folder is split by release. In the order the targets come."""
    from .. import targets as T
    out: list = []
    folders: dict = {}
    for r in results:
        if not r.ok:
            continue
        t = r.target
        if t.kind == T.FILE and str(t.path) != "-":
            key = str(Path(t.path).resolve().parent) if t.in_folder else _NAMED
            if key not in folders:
                folders[key] = []
                out.append(key)
            folders[key].append(r)
            continue
        out.append(Unit(t.name, decide(t, r.documents), [r], list(r.documents)))
    done: list[Unit] = []
    for u in out:
        if isinstance(u, Unit):
            done.append(u)
            continue
        rs = folders[u] if u == _NAMED else sorted(folders[u], key=lambda r: Path(r.target.path).name)
        rels = {id(r): decide(r.target, r.documents) for r in rs}
        together = (fitting_release([d for r in rs for d in r.documents])
                    if fitting_release and len(set(rels.values())) > 1 else None)
        by_release: dict = {}
        for r in rs:
            by_release.setdefault(together or rels[id(r)], []).append(r)
        for rel, group in by_release.items():
            parent = str(Path(group[0].target.name).parent)
            name = group[0].target.name if len(group) == 1 else (
                " + ".join(r.target.name for r in group) if u == _NAMED else "./" if parent == "." else parent + "/")
            done.append(Unit(name, rel, group, [d for r in group for d in r.documents]))
    return done


# -- what the control plane serves ------------------------------------------------------------------------
@dataclass
class Served:
    kinds: dict | None             # (group, kind) -> namespaced; None when discovery could not be read
    versions: dict                 # group -> the versions it serves

    def why_not(self, data: dict) -> str | None:
        if self.kinds is None:
            return None
        api = str(data.get("apiVersion") or "")
        group, _, version = api.rpartition("/")
        if (group, data.get("kind")) not in self.kinds or version not in self.versions.get(group, ()):
            return f"{api} {data.get('kind')} is not served by this control plane"
        return None

    def namespaced(self, data: dict) -> bool:
        api = str(data.get("apiVersion") or "")
        got = (self.kinds or {}).get((api.rpartition("/")[0], data.get("kind")))
        if got is None:     # discovery unread: the registry's scope (an unknown kind: namespaced)
            k = K.of_object(data)
            got = k.namespaced if k is not None else True
        return got


def served(cluster) -> Served:
    """The kinds and versions the control plane serves (`kubectl api-resources` and `api-versions`, once per
    control plane): a document of another kind is not judged, with no kubectl call (kubectl refreshes its
    discovery on every kind it does not know: seconds each)."""
    cached = cluster.__dict__.get("_kdt_served")
    if cached is not None:
        return cached
    res = cluster.kubectl("api-resources", "--no-headers", check=False)
    ver = cluster.kubectl("api-versions", check=False)
    kinds, versions = None, {}
    if res.returncode == 0 and ver.returncode == 0:
        kinds = {}
        for line in res.stdout.splitlines():
            cols = line.split()
            if len(cols) >= 4:       # NAME [SHORTNAMES] APIVERSION NAMESPACED KIND
                kinds[(cols[-3].rpartition("/")[0], cols[-1])] = cols[-2] == "true"
        for line in ver.stdout.split():
            group, _, version = line.rpartition("/")
            versions.setdefault(group, set()).add(version)
    out = cluster.__dict__["_kdt_served"] = Served(kinds, versions)
    return out


# -- placing and ordering ----------------------------------------------------------------------------------
def _registered(data: dict, fact: str) -> bool:
    """A fact (a boolean attribute) of the object's registered kind; False for a kind the registry does not know."""
    k = K.of_object(data)
    return k is not None and bool(getattr(k, fact))


def _group_kind(data: dict) -> tuple:
    api = str(data.get("apiVersion") or "")
    return (api.rpartition("/")[0], data.get("kind"))


def tier(data: dict, namespaced: bool) -> int:
    """The order a cluster needs the object in: its kind's (kdt.operators.framework.kind.Kind.apply_tier); a kind the registry
    does not know goes with the cluster-scoped objects (tier 1) or the rest (3)."""
    k = K.of_object(data)
    if k is not None:
        return k.apply_tier
    return 3 if namespaced else 1


def place(docs: list[Document], namespace: str, scope: Served) -> list[tuple[Document, int]]:
    """The documents that are objects, each namespaced one given `namespace` where it names none, with its
    tier, in the order they are judged (a stable sort: a tier keeps the unit's order)."""
    out = []
    for d in docs:
        if not isinstance(d.data, dict) or not d.data.get("kind"):
            continue
        data = copy.deepcopy(d.data)
        ns = scope.namespaced(data)
        meta = data.get("metadata")
        if ns and (meta is None or isinstance(meta, dict)):
            meta = data["metadata"] = meta or {}
            meta["namespace"] = meta.get("namespace") or namespace
        out.append((dataclasses.replace(d, data=data), tier(data, ns)))
    out.sort(key=lambda pair: pair[1])
    return out


def _ref(data: dict, name: str | None = None) -> dict:
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    ref_meta = {"name": name or meta.get("name")}
    if meta.get("namespace"):
        ref_meta["namespace"] = meta["namespace"]
    return {"apiVersion": data.get("apiVersion"), "kind": data.get("kind"), "metadata": ref_meta}


def _stream(docs) -> str:
    """The objects as one stream of documents (JSON, one a document), as kubectl reads a file of several: never
    a `List`, which kubectl validates against the OpenAPI schema on the client first (a JobSet failure policy rule
    without the name JobSet's defaulting webhook gives it is refused there: "error validating data")."""
    return "\n---\n".join(json.dumps(d.data if isinstance(d, Document) else d) for d in docs) + "\n"


def make_namespaces(cluster, res, names: list[str]) -> None:
    """Create the namespaces not known to exist, each with its `default` ServiceAccount (the service account
    controller makes it only moments later, and a pod's admission looks it up), in one call."""
    known = cluster.__dict__.setdefault("_kdt_namespaces", set(_SYSTEM_NAMESPACES))
    known.update(ns for _, kind, ns, name in cluster.installed if ns)
    known.update(name for _, kind, _, name in cluster.installed if kind == "Namespace")
    wanted = [n for n in dict.fromkeys(names) if n and n not in known]
    if not wanted:
        return
    items = []
    for n in wanted:
        items.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}})
        items.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": n}})
    cluster.kubectl("create", "-o", "name", "-f", "-", input=_stream(items), check=False)
    known.update(wanted)
    res.made_namespaces.extend(wanted)


# -- the dry runs ----------------------------------------------------------------------------------------
def object_name(data: dict) -> str:
    """What `kubectl ... -o name` prints for the object: `<kind>.<group>/<name>` (`configmap/a` in the core
    group), the kind in lower case."""
    group, kind = _group_kind(data)
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    return f"{str(kind).lower()}{'.' + group if group else ''}/{meta.get('name')}"


def server_message(stderr: str) -> str:
    """kubectl's refusal on one line, without its warnings and its own framing (`error when creating "STDIN": `)."""
    lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip() and not ln.startswith("Warning:")]
    text = " ".join(lines).replace('error when creating "STDIN": ', "")
    return text or "refused"


def _not_served(message: str) -> bool:
    return "no matches for kind" in message or "resource mapping not found" in message


def dry_run(cluster, docs: list[Document], flags: list[str]) -> dict[int, str | None]:
    """{id(document): None (accepted) or the server's message}: one server-side apply dry run for them all;
    a refused document is asked alone unless it is the only one refused (kubectl's message is then its)."""
    if not docs:
        return {}
    proc = cluster.kubectl("apply", "--server-side", "--dry-run=server", *flags, "-o", "name", "-f", "-",
                           input=_stream(docs), check=False)
    if proc.returncode == 0:
        return {id(d): None for d in docs}
    cluster.check()
    if len(docs) == 1:
        return {id(docs[0]): server_message(proc.stderr)}
    printed = Counter(proc.stdout.split())
    names = Counter(object_name(d.data) for d in docs)
    out: dict = {}
    refused = []
    for d in docs:
        n = object_name(d.data)
        if names[n] == 1 and printed[n]:
            out[id(d)] = None
        else:
            refused.append(d)
    if len(refused) == 1 and names[object_name(refused[0].data)] == 1:
        out[id(refused[0])] = server_message(proc.stderr)
    else:
        for d in refused:
            out.update(dry_run(cluster, [d], flags))
    return out


def dry_create(cluster, doc: Document) -> str | None:
    proc = cluster.kubectl("create", "--dry-run=server", "-o", "name", "-f", "-", input=json.dumps(doc.data),
                           check=False)
    if proc.returncode == 0:
        return None
    cluster.check()
    return server_message(proc.stderr)


# -- a unit's admission ------------------------------------------------------------------------------------
def admit(cluster, res, placed: list[tuple[Document, int]], ours: dict, everything: bool) -> list[Document]:
    """Every placed document's verdict into `res.admissions`, tier by tier; the accepted ones applied for
    real (every one when `everything`, else the kinds whose `admission_reads`), recorded in `res.created`; the accepted
    documents."""
    scope = served(cluster)
    accepted: list[Document] = []
    for t in sorted({t for _, t in placed}):
        docs = [d for d, tt in placed if tt == t]
        how: dict[int, str] = {}
        groups: dict[str, list] = {"apply": [], "guarded": [], "installed": [], "create": []}
        for d in docs:
            if scope.why_not(d.data):
                continue
            meta = d.data.get("metadata") if isinstance(d.data.get("metadata"), dict) else {}
            if (not meta.get("name") and meta.get("generateName")) or meta.get("uid"):
                h = "create"
            elif install.key(d.data) in cluster.installed:
                h = "installed"
            elif _registered(d.data, "infrastructure"):
                h = "guarded"
            else:
                h = "apply"
            how[id(d)] = h
            groups[h].append(d)
        verdict = dry_run(cluster, groups["apply"], ["--field-manager=kdt-judge"])
        verdict.update(dry_run(cluster, groups["guarded"], ["--field-manager=kdt-judge", "--force-conflicts"]))
        verdict.update(dry_run(cluster, groups["installed"], [f"--field-manager={install.MANAGER}",
                                                              "--force-conflicts"]))
        verdict.update({id(d): dry_create(cluster, d) for d in groups["create"]})
        real, made = [], []
        for d in docs:
            skipped = scope.why_not(d.data)
            msg = verdict.get(id(d))
            if msg and _not_served(msg):
                skipped, msg = f"{d.data.get('apiVersion')} {d.data.get('kind')} is not served by this control plane", None
            h = how.get(id(d), "apply")
            res.admissions.append(Admission(d, msg, ours.get(verdicts.doc_key(d), []), skipped,
                                            "guarded" if h == "installed" else h))
            if msg is not None or skipped is not None:
                continue
            accepted.append(d)
            if h == "apply" and (everything or _registered(d.data, "admission_reads")):
                real.append(d)
            elif h == "create" and everything:
                made.append(d)
        _apply(cluster, res, real)
        for d in made:
            proc = cluster.kubectl("create", "-o", "name", "-f", "-", input=json.dumps(d.data), check=False)
            if proc.returncode == 0 and "/" in proc.stdout:
                res.created.append(_ref(d.data, proc.stdout.strip().split("/", 1)[1]))
    return accepted


def _apply(cluster, res, docs: list[Document]) -> None:
    if not docs:
        return
    proc = cluster.kubectl("apply", "--server-side", "--field-manager=kdt-judge", "-o", "name", "-f", "-",
                           input=_stream(docs), check=False)
    if proc.returncode != 0:
        cluster.check()
        res.notes.append(f"applying the accepted documents for real: {server_message(proc.stderr)[:300]}")
    res.created.extend(_ref(d.data) for d in docs)


def cleanup(cluster, res, namespace: bool = True) -> None:
    """Remove what a unit's judging created outside its namespace (cluster-scoped objects, objects in
    namespaces its documents name), in one call, then its namespace (`namespace`), which cascades. Namespaces
    other than its own stay (another unit may meet them while they terminate), as does everything the
    control plane installed: the judge never applied it."""
    refs = [r for r in res.created if r["kind"] != "Namespace" and r["metadata"].get("namespace") != res.namespace]
    if refs:
        cluster.kubectl("delete", "--ignore-not-found", "--wait=false", "-f", "-", input=_stream(refs), check=False)
    if namespace and res.namespace:
        cluster.kubectl("delete", "namespace", res.namespace, "--ignore-not-found", "--wait=false", check=False)
        cluster.__dict__.get("_kdt_namespaces", set()).discard(res.namespace)
