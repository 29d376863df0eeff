"""What a kind declares to the registry: identity, schema source, releases, and one hook per stage.

A `Kind` is one API kind the tooling knows (`kubeflow.org/PyTorchJob`, `apps/StatefulSet`, ...). Each
stage of the pipeline asks the registry (`kdt.kinds`) for the kind of a document and calls the hook it
needs; a hook a kind does not implement keeps the default here, which says "nothing to do" (or, for the
merge preview, "not modelled"). So a new kind is one module that subclasses `Kind`, and no stage changes.

| hook | stage that calls it | default |
|---|---|---|
| `admitted(data)` | validate: the object after the mutating webhooks' defaults | unchanged |
| `reencodes(data)` | validate: its mutating webhook gives the whole object back re-encoded from its Go types (a Quantity as a string) | False |
| `served_elsewhere(api_version)` | validate: another operator serves this version of the kind | "" |
| `pod_templates(doc)` | lint (`kdt.lint.pods`), apivalidation, pod security | none |
| `pod_additions(doc, tmpl)` | apivalidation: what the operator appends to each pod it creates from `tmpl` (`kdt.operators.injection.PodAdditions`) | None: the template as written |
| `extra_containers(doc)` | lint: container-like fields outside pod templates (TrainJob's `trainer`) | none |
| `own_pod_labels(doc, tmpl)` | lint: labels the controller puts on each pod it creates | none |
| `expand(doc, ctx)` | merge preview (`kdt.merge_preview`): the objects the operator creates | None: not modelled |
| `describe(items)` | merge preview's one-line summary of what a source created | generic |
| `notes(e)` | merge preview: what each pod computes at start | none |
| `workload(doc, docs)` | summary table (`kdt.summary`): nodes, GPUs, processes, world size | None: no row |
| `kueue_workload(doc, ctx, expanded)` | merge preview, lint (`kdt.kinds.kueue_workload`): the Kueue Workload the job becomes (kdt.operators.kueue.expand) | None: no Kueue integration |
| `local_pods(e)` | `kdt run`: the pods of an expanded object, ready to start | none |
| `controller(pods, ctx)` | `kdt run`: the lifecycle rules of the pods this kind owns | None |
| `set_nproc(data, n)` | `kdt run --nproc-per-node`: processes per node, where the operator reads it | False |
| `field_origin(pod, c, key)` | `kdt run`: where a container's command/args were written | the template |
| `migrate(doc, ctx)` | `kdt migrate` (`kdt.migration`): the plan that moves it to a Trainer shape | None: nothing to migrate |
| `migration_side(doc, items, docs)` | `kdt migrate`'s proof: its pods and run policy in the migration's words | None |

And what the live path (`kdt.live`) reads of it, as attributes: `namespaced`, `apply_tier` (the order a cluster
needs), `admission_reads` (another document's admission reads its existence), `infrastructure` (judged by a
dry run only), `ends` (the status conditions that end a job of this kind).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:   # annotations only: no stage is imported by a kind
    from ...documents import Document
    from ...expand.model import Expanded
    from ...findings import Finding
    from .migrate.compare import Side
    from .migrate.plan import Plan
    from ..injection import PodAdditions
    # KueueWorkload: kdt.operators.kueue.expand.Workload (named, not imported: the framework imports no operator)


def is_pod(obj: dict) -> bool:
    """Whether an object mapping (an expanded object) is a core/v1 Pod (kdt.kinds.POD, for the operator folders
    below the registry)."""
    return "/" not in str(obj.get("apiVersion") or "") and obj.get("kind") == "Pod"


ANY = object()   # a label value the manifest cannot know (the TrainJob's name, in a runtime): matches any selector value

# What a kind is to the pipeline.
JOB = "job"            # a training job: creates pods (directly or through another kind); a summary row
RUNTIME = "runtime"    # a template another kind's objects are made from (Trainer's runtimes)
PODS = "pods"          # a built-in kind holding pod templates (Deployment, Job, Pod, ...)
DATA = "data"          # an object other objects read (Service, Secret, ConfigMap, Namespace, ...)

# The order a cluster needs its objects in (kdt.live applies and judges a tier after the one before): 0 namespaces
# and CRDs, 1 cluster-scoped objects and what pods refer to, 2 runtimes, Services and queues, 3 the rest,
# JOB_TIER the jobs and workloads.
JOB_TIER = 4


@dataclass
class PodTemplate:
    """One pod template of a document, as lint rules and validation read it."""
    doc: "Document"
    path: tuple          # JSON path of the pod spec (the mapping with `containers`)
    spec: dict
    role: str = ""       # PyTorchJob replica type, replicated job name, ...
    replicas: int | None = None
    metadata_path: tuple | None = None   # JSON path of the template's metadata (labels), when it has one


@dataclass
class Workload:
    """One training job as a summary row sees it."""
    kind: str
    name: str
    nodes: str = "-"             # "2", or "1-4" for elastic bounds
    max_nodes: int = 0
    gpus_per_node: int = 0
    procs_per_node: str = "-"    # from the manifest, or "auto" (= GPUs, or 1 on CPU)
    world_size: str = "-"
    cpu: float = 0.0             # requested per job, all nodes at max
    memory: float = 0.0


@dataclass
class ExpandContext:
    """What an expansion may need beyond the document: the run's other documents and options."""
    docs: list
    load: Any                          # kdt.expand.model.Loader
    trainer_version: str | None = None
    options: dict | None = None        # per-operator settings (e.g. a Training Operator init-container template)


@dataclass
class MigrateContext:
    """What a migration may need beyond the document: the target release, the run's documents, runtimes."""
    docs: list                         # the target's documents
    version: str                       # the Trainer release to write for: "2.1", or "2.3" for 2.2 and later
    runtimes: list                     # runtime documents a migrated job may run on (the input's and --runtime's)
    load: Any = None                   # kdt.expand.model.Loader: round-trip copies (comments kept)
    manager: str = "torch-k8s.io/kdt-migrate"   # the runtimePatches manager written (a domain-prefixed path)


class Kind:
    """One API kind. Subclasses set the identity and override the hooks their kind has."""
    group: str = ""                    # "" for the core API
    kind: str = ""
    versions: tuple[str, ...] = ()     # API versions read (the first is the one written)
    role: str = DATA
    operator: str = "Kubernetes"       # who acts on it
    releases: tuple[str, ...] = ()     # releases of that operator the tooling targets
    schema_source: str = "kubernetes-validate (the API server's OpenAPI, strict)"
    namespaced: bool = True

    # ------------------------------------------------------------ the live control plane (kdt.live)
    tier: int | None = None            # its apply tier when not the one its role and scope give (`apply_tier`)
    # another document's admission reads its existence (applied for real even when only admission is judged)
    admission_reads: bool = False
    # cluster-scoped infrastructure every later request would meet (a CRD, a webhook configuration, an APIService):
    # judged by a dry run only, never applied
    infrastructure: bool = False
    # the status conditions (type, status True) that end a job of this kind: (succeeded, failed); None: not a job
    # whose end a run waits for
    ends: tuple[str, str] | None = None
    # the live judge's rows (kdt.live.judge.EXPLAINED) that explain a difference between the merge preview and what
    # the operator creates from a job of this kind: (object kind or "*", JSON path regex, cause, only where the
    # preview has no value)
    explained: tuple = ()
    # the live judge reads and creates its objects by the API server's REST interface (kdt.live.judge; its resource:
    # the kind in lower case, plural with an s), not by kubectl
    rest: bool = False

    @property
    def apply_tier(self) -> int:
        """When a cluster gets it (JOB_TIER above): its own `tier`, else the jobs and workloads last, cluster-scoped
        objects in tier 1, the rest in 3."""
        if self.tier is not None:
            return self.tier
        if self.role in (JOB, PODS):
            return JOB_TIER
        return 3 if self.namespaced else 1

    # ------------------------------------------------------------ identity
    @property
    def api_version(self) -> str:
        v = self.versions[0] if self.versions else "v1"
        return f"{self.group}/{v}" if self.group else v

    @property
    def id(self) -> str:
        """`group/Kind` (`Kind` for the core API): how docs and tests name it."""
        return f"{self.group}/{self.kind}" if self.group else self.kind

    def matches(self, doc) -> bool:
        """Whether a Document (or an object mapping) is of this kind (any API version of its group)."""
        if isinstance(doc, dict):
            av = str(doc.get("apiVersion") or "")
            group = av.rpartition("/")[0] if "/" in av else ""
            return doc.get("kind") == self.kind and group == self.group
        return doc.kind == self.kind and doc.group == self.group

    def __repr__(self) -> str:
        return f"<Kind {self.id}>"

    def served_elsewhere(self, api_version: str) -> str:
        """Who serves this apiVersion of the kind when the operator the tooling checks it for does not
        (then a document of it is an unknown kind, not an unserved version); "" otherwise."""
        return ""

    # ------------------------------------------------------------ lint, validation
    def admitted(self, data: dict) -> dict:
        """The object as the API server validates it: after its mutating webhooks' defaults."""
        return data

    def reencodes(self, data: dict) -> bool:
        """Whether the operator's mutating webhook answers a create of this object with a patch of the whole
        object it decoded into its Go types and encoded again (controller-runtime's CustomDefaulter), so that
        what the API server then validates has every Quantity as a string (`cpu: 0.5` becomes "500m")."""
        return False

    def pod_templates(self, doc: "Document") -> Iterator[PodTemplate]:
        return iter(())

    def pod_additions(self, doc: "Document", tmpl: PodTemplate) -> "PodAdditions | None":
        """What the operator appends to every pod it creates from `tmpl` (volumes, mounts and env of the first
        container, init containers): checks that need the pod as created run on the template with these
        (kdt.operators.injection.created_spec). None: the pod is the template as written."""
        return None

    def extra_containers(self, doc: "Document") -> Iterator[tuple[tuple, dict]]:
        """(path, mapping) of container-like fields outside pod templates."""
        return iter(())

    def own_pod_labels(self, doc: "Document", tmpl: PodTemplate) -> dict:
        """Labels (key -> value, or `ANY` for "some value") the controller puts on every pod it
        creates from `tmpl`, beyond the template's own."""
        return {}

    # ------------------------------------------------------------ merge preview
    def admission_inputs(self, doc: "Document", ctx: ExpandContext) -> "tuple[list[Document], str | None]":
        """The documents the API server must admit before the operator creates anything from `doc` (itself and
        what its expansion reads) and the Trainer release whose CRDs judge them; the merge preview asks
        validation for their errors (kdt.merge_preview). ([], None): the preview does not ask."""
        return [], None

    def expand(self, doc: "Document", ctx: ExpandContext) -> "tuple[list[Expanded], list[Finding]] | None":
        """The objects the operator creates from `doc`; None when this kind is not expanded (not modelled)."""
        return None

    def describe(self, items: "list[Expanded]") -> str:
        """One phrase for what the operator created from one source (`2 pods (a, b), WORLD_SIZE=2`)."""
        names = ", ".join(e.name for e in items[:4]) + (f", ... {items[-1].name}" if len(items) > 4 else "")
        kinds = {e.kind for e in items}
        what = f"{len(items)} {'/'.join(sorted(kinds))}{'s' if len(items) != 1 else ''}"
        return f"{what} ({names})"

    def notes(self, e: "Expanded") -> list[str]:
        return []

    # ------------------------------------------------------------ summary
    def workload(self, doc: "Document", docs: list) -> Workload | None:
        return None

    # ------------------------------------------------------------ Kueue
    def kueue_workload(self, doc: "Document", ctx: ExpandContext, expanded: "list[Expanded] | None" = None
                       ) -> "KueueWorkload | None":
        """The Workload Kueue makes of this job, its pod sets as Kueue's integration for the kind computes them
        (kdt.operators.kueue.expand); `expanded`: what the merge preview made of `doc`, when the integration reads that
        (a TrainJob's JobSet). None: Kueue has no integration for the kind, or the tooling does not model it."""
        return None

    # ------------------------------------------------------------ kdt run
    def local_pods(self, e: "Expanded") -> list:
        return []

    def controller(self, pods: list, ctx: dict):
        return None

    def set_nproc(self, data: dict, n: int) -> bool:
        return False

    def field_origin(self, pod, container, key: str) -> tuple:
        """(document, path) where a container's `key` (command, args) was written."""
        return container.doc, container.path + (key,)

    # ------------------------------------------------------------ kdt migrate
    def migrate(self, doc: "Document", ctx: MigrateContext) -> "Plan | None":
        """How `doc` moves to the Trainer shape `ctx.version` (kdt.migrate); None when there is nothing to move."""
        return None

    def migration_side(self, doc: "Document", items: "list[Expanded]", docs: list) -> "Side | None":
        """The pods the operator creates from `doc` (its merge preview `items`) and its run policy, in the words
        of the migration's proof (kdt.operators.framework.migrate.compare); None when this kind has none."""
        return None
