"""Schemas of every kind the project validates, compiled once per kind and version.

- Kubernetes kinds: the strict JSON schemas bundled in `kubernetes-validate`
  (`kubernetes-json-schema/v<X.Y>.0-local-strict/_definitions.json`: every
  definition in one file, internal `#/$defs/` references, each top-level kind
  tagged with `x-kubernetes-group-version-kind`).
- Kubeflow Trainer v2 (`trainer.kubeflow.org/v1alpha1`) and JobSet
  (`jobset.x-k8s.io/v1alpha2`) per Trainer release: generated/trainer-*.json,
  written by generate.py from the official API packages.
- The Training Operator's `kubeflow.org/v1` kinds per release, Kueue, Volcano
  and the scheduler-plugins: their official CRDs, committed
  (generated/crds-*.json, crd_sets.py) and read by crds.py, which also reads
  the CRDs a user names (`--crd`) and those a run finds.
- Argo CD `Application` / `ApplicationSet` (`argoproj.io/v1alpha1`): argocd.json,
  written by hand: Application from Argo CD's documented fields, ApplicationSet
  field by field from pkg/apis/application/v1alpha1/applicationset_types.go
  (generators, nested matrix/merge, template, strategy; SCM/pull-request
  provider blocks and list elements stay open).

The project's files refer to Kubernetes types as `kubernetes:<definition>`;
those references become `#/$defs/<definition>` when the files are loaded, and
the definitions come from the Kubernetes version being validated.

For one kind, the schema handed to jsonschema-rs is self-contained: the root
definition plus the closure of the definitions it references. IntOrString and
Quantity accept `string|integer` and `string|number` (plain type lists give
plain messages where the bundled `oneOf` would not). Compiled validators are
cached per (Kubernetes version, Trainer version, apiVersion, kind) for the
life of the process; nothing is compiled for a kind no document uses.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema_rs

from .. import versions
from ..errors import UsageError
from .crd_rules import INT_RANGE
from .pool import Pool, refs as _refs  # noqa: F401  (Pool: the package's interface)

HERE = Path(__file__).resolve().parent
GENERATED = HERE / "generated"
ARGOCD = HERE / "argocd.json"

INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_SPECIAL = {INT_OR_STRING: {"type": ["string", "integer", "null"]},
            QUANTITY: {"type": ["string", "number", "null"]}}
# A Quantity inside a custom resource: controller-gen writes every resource.Quantity of an operator's CRD as
# `x-kubernetes-int-or-string: true` (anyOf integer or string), which the API server turns into the types
# [integer, string] (apiextensions-apiserver v0.36.3 pkg/apiserver/validation/validation.go
# ConvertJSONSchemaPropsWithPostProcess) and kube-openapi's type validator holds a JSON number to
# (pkg/validation/validate/type.go: a number passes only when it is a whole one): `cpu: 0.5`, which a Pod's
# Quantity reads (k8s.io/apimachinery v0.36.3 pkg/api/resource/quantity.go UnmarshalJSON), is refused in a
# PyTorchJob's, TrainJob's or runtime's pod template ("... in body must be of type integer,string: \"number\"";
# measured on Kubernetes v1.36.3). A null stays what kdt.schemas.crds makes of it (pruned on create).
CUSTOM_QUANTITY = {"type": ["integer", "string", "null"]}
# the pattern controller-gen gives a Quantity of a CRD (beside x-kubernetes-int-or-string)
CRD_QUANTITY_PATTERN = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+"
                        r"(\.[0-9]*)?)|(\.[0-9]+))))?$")
_K8S_REF = "kubernetes:"


@functools.lru_cache(maxsize=None)
def _kv_root() -> Path:
    # Located, not imported: importing kubernetes_validate pulls in jsonschema and
    # referencing (about 65 ms of start-up) for nothing but its data files.
    import importlib.util
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.origin:
        raise UsageError("kubernetes-validate is not installed; run `make venv` to bootstrap .venv")
    return Path(spec.origin).resolve().parent / "kubernetes-json-schema"


@functools.lru_cache(maxsize=None)
def kubernetes_versions() -> tuple[str, ...]:
    """Kubernetes minor versions whose strict schemas kubernetes-validate bundles, oldest first."""
    found = []
    for p in _kv_root().iterdir():
        m = re.match(r"^v(\d+)\.(\d+)\.0-local-strict$", p.name)
        if m and (p / "_definitions.json").is_file():
            found.append((int(m.group(1)), int(m.group(2))))
    return tuple(f"{a}.{b}" for a, b in sorted(found))


def kubernetes_version(value: str) -> str:
    """'1.35', 'v1.35', '1.35.2' -> '1.35'; a version without bundled schemas is a UsageError."""
    m = re.match(r"^v?(\d+)\.(\d+)(?:\.\d+)?$", str(value).strip())
    have = kubernetes_versions()
    if not m or f"{m.group(1)}.{m.group(2)}" not in have:
        raise UsageError(f"--kubernetes-version {value}: no schemas for it; available: {', '.join(have)}")
    return f"{m.group(1)}.{m.group(2)}"


def trainer_version(value: str) -> str:
    """'2.3', 'v2.3.0' -> '2.3'; an unsupported release is a UsageError (kdt.targets.trainer_release)."""
    from ..targets import trainer_release
    return trainer_release(value)


@functools.lru_cache(maxsize=None)
def kubernetes_pool(version: str) -> Pool:
    path = _kv_root() / f"v{version}.0-local-strict" / "_definitions.json"
    with open(path, "rb") as fh:
        defs = json.load(fh)["$defs"]
    defs.update({k: dict(v) for k, v in _SPECIAL.items()})
    kinds: dict = {}
    for name, d in defs.items():
        for gvk in d.get("x-kubernetes-group-version-kind", ()):
            if not d.get("properties") or "kind" not in d["properties"]:
                continue
            av = f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]
            # Several definitions can claim one GVK (meta.v1.DeleteOptions for every group):
            # the one whose own package is the group's wins.
            kinds.setdefault(av, {}).setdefault(gvk["kind"], name)
    return Pool(f"Kubernetes {version}", defs, kinds)


def _load(path: Path) -> dict:
    with open(path, "rb") as fh:
        return json.load(fh)


@functools.lru_cache(maxsize=None)
def kubeflow_pool(trainer: str) -> Pool:
    """Trainer <trainer> + JobSet + Argo CD definitions."""
    defs: dict = {}
    kinds: dict = {}
    files = [GENERATED / f"trainer-{trainer}.json", ARGOCD]
    for f in files:
        payload = _load(f)
        for name, d in payload["$defs"].items():
            defs.setdefault(name, _rewrite_k8s(d))
        for av, ks in payload["kinds"].items():
            kinds.setdefault(av, {}).update(ks)
    return Pool(f"Trainer {trainer}", defs, kinds)


def _rewrite_k8s(node: Any) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_K8S_REF):
            return {**node, "$ref": "#/$defs/" + ref[len(_K8S_REF):]}
        return {k: _rewrite_k8s(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_rewrite_k8s(v) for v in node]
    return node


_REFS_CACHE: dict[int, list[str]] = {}


def _def_refs(d: dict) -> list[str]:
    """Names of the definitions one definition refers to (cached: the pools live as long as the process)."""
    key = id(d)
    refs = _REFS_CACHE.get(key)
    if refs is None:
        found: list = []
        _refs(d, found)
        refs = _REFS_CACHE[key] = [r.rsplit("/", 1)[-1] for r in found if r.startswith("#/$defs/")]
    return refs


# An integer field of format int32 or int64 takes what Go's int32 or int64 holds: encoding/json refuses a
# number past it ("cannot unmarshal number ... into Go struct field ... of type int32"), in kubectl's typed
# decode and in the API server. JSON Schema checks a format on strings only, so the validators get the
# range as minimum and maximum.
def with_int_ranges(node: Any) -> Any:
    """A copy of a schema whose int32/int64 integers carry their range."""
    if isinstance(node, list):
        return [with_int_ranges(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: with_int_ranges(v) for k, v in node.items()}
    types = out.get("type")
    fmt = out.get("format")
    if isinstance(fmt, str) and fmt in INT_RANGE and (types == "integer" or isinstance(types, list) and "integer" in types):
        lo, hi = INT_RANGE[fmt]
        out.setdefault("minimum", lo)
        out.setdefault("maximum", hi)
    return out


def closure(root: str, pools: list[Pool]) -> dict:
    """Self-contained schema of definition `root`: it, and every definition it reaches."""
    defs: dict = {}
    todo = [root]
    while todo:
        name = todo.pop()
        if name in defs:
            continue
        d = next((p.defs[name] for p in pools if name in p.defs), None)
        if d is None:
            raise UsageError(f"schema definition {name} is missing (regenerate the schemas)")
        defs[name] = d
        todo.extend(_def_refs(d))
    return {"$ref": f"#/$defs/{root}", "$defs": defs}


@dataclass
class KindSchema:
    api_version: str
    kind: str
    origin: str          # "Kubernetes 1.35", "Trainer 2.3"
    schema: dict
    validator: Any
    admit: Any = None    # object -> object as the API server validates it (a CRD's null pruning and defaults), or None
    rules: Any = None    # a CRD's CEL rules and formats (kdt.schemas.crd_rules.trie), or None

    def resolve(self, node: Any) -> Any:
        seen = 0
        while isinstance(node, dict) and "$ref" in node and seen < 50:
            node = self.schema["$defs"].get(node["$ref"].rsplit("/", 1)[-1], {})
            seen += 1
        return node

    def at(self, path) -> Any:
        """The schema node that describes the instance at `path` (None when unknown)."""
        node = self.resolve(self.schema)
        for part in path:
            if not isinstance(node, dict):
                return None
            if isinstance(part, int):
                node = node.get("items")
            else:
                props = node.get("properties") or {}
                if part in props:
                    node = props[part]
                elif isinstance(node.get("additionalProperties"), dict):
                    node = node["additionalProperties"]
                else:
                    return None
            node = self.resolve(node)
        return node

    @property
    def custom(self) -> bool:
        """A custom resource's schema (a CRD's, or the project's own of an operator kind), not a built-in kind's."""
        return not self.origin.startswith("Kubernetes")

    def is_quantity(self, path) -> bool:
        """Whether the instance at `path` is a Quantity (Kubernetes' definition, or a CRD's int-or-string with
        controller-gen's Quantity pattern)."""
        node = self.at(path)
        return isinstance(node, dict) and (node is CUSTOM_QUANTITY or node is self.schema["$defs"].get(QUANTITY)
                                           or node.get("pattern") == CRD_QUANTITY_PATTERN)

    def quantities_as_text(self, data: Any) -> Any:
        """A copy of `data` whose numbers where the schema has a Quantity are their text: the object as an
        operator's mutating webhook gives it back when it patches the whole object it decoded and re-encoded
        (a Quantity marshals as a string; kdt.operators.framework.kind.Kind.reencodes). `data` itself when none is there."""
        found = [False]
        out = _numbers_as_text(data, self.schema, self.schema["$defs"], found)
        return out if found[0] else data

    def fields_at(self, path) -> list[str]:
        node = self.at(path)
        return sorted((node or {}).get("properties") or {}) if isinstance(node, dict) else []


def _numbers_as_text(x: Any, node: Any, defs: dict, found: list) -> Any:
    seen = 0
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and seen < 50:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name == QUANTITY:
            if isinstance(x, (int, float)) and not isinstance(x, bool):
                found[0] = True
                return json.dumps(x)
            return x
        node = defs.get(name, {})
        seen += 1
    if not isinstance(node, dict):
        return x
    if isinstance(x, dict):
        props = node.get("properties") if isinstance(node.get("properties"), dict) else {}
        extra = node.get("additionalProperties") if isinstance(node.get("additionalProperties"), dict) else None
        return {k: _numbers_as_text(v, props.get(k, extra), defs, found) if (k in props or extra) else v
                for k, v in x.items()}
    if isinstance(x, list) and isinstance(node.get("items"), dict):
        return [_numbers_as_text(v, node["items"], defs, found) for v in x]
    return x


def has_fraction(x: Any) -> bool:
    """Whether a value holds a number that is not a whole one anywhere (what an int-or-string field refuses)."""
    if isinstance(x, float):
        return not x.is_integer()
    if isinstance(x, dict):
        return any(has_fraction(v) for v in x.values())
    if isinstance(x, list):
        return any(has_fraction(v) for v in x)
    return False


class Registry:
    """Schemas for one (Kubernetes version, Trainer version, Training Operator release, CRDs of the run).

    Pools in the order they win: the Kubeflow pool (Trainer, JobSet, Argo CD; its `kubernetes:` references land
    in the Kubernetes pool), Kubernetes, the Training Operator release's CRDs, the CRDs the user named
    (`--crd`), the CRDs found in the run (`found`, kdt.schemas.crds.RunCrds), the schedulers' committed CRDs
    (kdt.schemas.crd_sets): the project's own schemas of a kind win, and a repository's own CRD of a
    scheduler's kind wins over the release the project ships."""

    def __init__(self, kubernetes_version: str, trainer_version: str, crds: tuple[str, ...] = (),
                 found: Any = None, training_operator: str = versions.TRAINING_OPERATOR_DEFAULT):
        self.kubernetes_version = kubernetes_version
        self.trainer_version = trainer_version
        self.training_operator = training_operator
        self.crds = crds
        self.found = found
        self._compiled: dict = {}

    @functools.cached_property
    def pools(self) -> list[Pool]:
        from . import crd_sets, crds
        named = list(crds.load(self.crds)) if self.crds else []
        run = list(self.found.pools) if self.found is not None else []
        return [kubeflow_pool(self.trainer_version), kubernetes_pool(self.kubernetes_version),
                *crd_sets.pools(crd_sets.training_operator_set(self.training_operator)), *named, *run,
                *(p for name in crd_sets.SCHEDULERS for p in crd_sets.pools(name))]

    def definitions(self, api_version: str, kind: str) -> list[tuple[Pool, str]]:
        """Every (pool, definition) of this apiVersion and kind, the winning one first."""
        return [(pool, pool.kinds[api_version][kind]) for pool in self.pools
                if kind in pool.kinds.get(api_version, {})]

    def definition(self, api_version: str, kind: str) -> tuple[Pool, str] | None:
        found = self.definitions(api_version, kind)
        return found[0] if found else None

    @functools.cached_property
    def groups(self) -> frozenset[str]:
        return frozenset(av.split("/")[0] if "/" in av else "" for pool in self.pools for av in pool.kinds)

    def group_known(self, group: str) -> bool:
        """Whether any kind of this API group has a schema (then an unknown apiVersion of it is a mistake)."""
        return group in self.groups

    def api_versions_for(self, kind: str) -> list[str]:
        return sorted({av for pool in self.pools for av, ks in pool.kinds.items() if kind in ks})

    def _compile(self, api_version: str, kind: str, pool: Pool, name: str) -> KindSchema | None:
        if pool is self.pools[0]:
            reach = self.pools
        elif pool is self.pools[1]:
            reach = [pool]
        else:                              # a CRD's: its metadata (and PodTemplateSpecs) are Kubernetes'
            reach = [pool, self.pools[1]]
        schema = closure(name, reach)
        if pool is not self.pools[1] and QUANTITY in schema["$defs"]:
            # a custom resource: the Kubernetes types it embeds are its CRD's copy of them (CUSTOM_QUANTITY)
            schema["$defs"][QUANTITY] = CUSTOM_QUANTITY
        try:
            validator = jsonschema_rs.validator_for(with_int_ranges(schema))
        except (jsonschema_rs.ValidationError, ValueError):
            # A CRD found in the run whose schema JSON Schema cannot compile (a --crd one is refused up front,
            # kdt.schemas.crds._check): that CRD gives no schema; another may.
            return None
        return KindSchema(api_version, kind, pool.name, schema, validator, pool.admit.get(name), pool.rules.get(name))

    def all(self, api_version: str, kind: str) -> list[KindSchema]:
        """Every usable schema of this apiVersion and kind, the winning one first (several CRDs of one kind
        can meet in a run: a document that one of them accepts is accepted)."""
        key = (api_version, kind)
        if key not in self._compiled:
            out = []
            for pool, name in self.definitions(api_version, kind):
                ks = self._compile(api_version, kind, pool, name)
                if ks is not None:
                    out.append(ks)
            self._compiled[key] = out
        return self._compiled[key]

    def get(self, api_version: str, kind: str) -> KindSchema | None:
        found = self.all(api_version, kind)
        return found[0] if found else None


@functools.lru_cache(maxsize=None)
def registry(kubernetes_version: str, trainer_version: str, crds: tuple[str, ...] = (), found: Any = None,
             training_operator: str = versions.TRAINING_OPERATOR_DEFAULT) -> Registry:
    return Registry(kubernetes_version, trainer_version, crds, found, training_operator)
