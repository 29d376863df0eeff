"""Schemas from CustomResourceDefinitions: those the user names (`validate --crd PATH`), those a run meets
(`RunCrds`), and the official ones the project commits (kdt.schemas.crd_sets).

A repository that installs another operator (Kueue, Volcano, the
scheduler-plugins, ...) usually keeps that operator's CRDs beside the objects
that use them. Each served version of each CRD becomes the schema of its kind,
read as the API server reads it:

- unknown fields are errors (kubectl's strict field validation), except where
  the schema says `x-kubernetes-preserve-unknown-fields`;
- `x-kubernetes-int-or-string` takes an integer or a string (a whole number
  only: `0.5` is refused, as kube-openapi's type validator refuses it), `nullable`
  also null; the Kubernetes types a committed CRD set embeds
  (`x-kdt-kubernetes`) hold their Quantities to the same (kdt.schemas.CUSTOM_QUANTITY);
- `x-kubernetes-embedded-resource` objects carry apiVersion, kind and metadata;
- the object's `metadata` is Kubernetes' ObjectMeta (strict, like every kind);
- a `null` where the schema is not nullable is pruned before validation (a
  default takes its place where the schema has one), as the API server does
  when it decodes a request body (apiextensions-apiserver v0.36.3
  pkg/apiserver/customresource_handler.go unstructuredSchemaCoercer.apply, which
  calls pkg/apiserver/schema/defaulting/prunenulls.go
  PruneNonNullableNullsWithoutDefaults after pruning), so a null is no error for
  `kubectl create` and client-side `kubectl apply`. Server-side apply never
  decodes the body that way (k8s.io/apiserver v0.36.3
  pkg/endpoints/handlers/patch.go applyPatcher: yaml.Unmarshal into an
  Unstructured, then the field manager's merge): its nulls reach validation, where
  one the schema does not allow and no default replaces is refused ("spec.x in
  body must be of type object"), and validate says so, naming server-side apply
  (`Admit.server_side`; measured on Kubernetes v1.36.3, tests/live);
- the schema's defaults are applied before anything is checked, as the API
  server applies them when it decodes the object (apiextensions-apiserver
  v0.35.0 pkg/apiserver/schema/defaulting/algorithm.go Default, called by
  customresource_handler.go unstructuredDefaulter), so a required field with a
  default may be left out and a CEL rule reads the defaulted value;
- CEL rules (`x-kubernetes-validations`, but those comparing with `oldSelf`,
  which judge updates only) and int32/int64 formats are checked by the engine
  of the Trainer CRDs (kdt.schemas.crd_rules) wherever they sit (the object,
  nested objects, list items, map values, at any depth), leniently: a rule that
  needs a function of the API server's CEL libraries this engine lacks
  (`quantity`, `isSorted`, ...) says nothing, while an evaluation error the API
  server reports too (`no such key: ...`) is a refusal;
- `x-kubernetes-list-type: map` (keyed by `x-kubernetes-list-map-keys`) and
  `set`: two equal items (of a map: equal keys, a key left out counting as its
  default) are `Duplicate value: ...`, checked after the defaults as the API
  server does (apiextensions-apiserver v0.36.3 pkg/apiserver/schema/listtype,
  kdt.schemas.crd_rules.duplicates).

`apiextensions.k8s.io/v1beta1` CRDs, which older repositories still ship, are
read as the API servers that served them (Kubernetes 1.21 and before) read them:
the schema is the version's own `schema.openAPIV3Schema` or else the CRD-wide
`spec.validation.openAPIV3Schema`; `spec.version` names the only version when
`spec.versions` is absent; and `spec.preserveUnknownFields` defaults to true, so
unknown fields are kept (no error) and nulls are not pruned (as there, nothing is
pruned) unless the CRD sets it to false (apiextensions v1beta1 types.go and
defaults.go). A version without any schema accepts any content.

A schema node marked `x-kdt-kubernetes: <definition>` (the committed CRD sets
of kdt.schemas.crd_sets put it where a CRD embeds a PodTemplateSpec) is that
Kubernetes definition, of the Kubernetes version being validated.

Not applied: conversion webhooks. The project's own schemas of a kind (Kubeflow,
JobSet, Argo CD, Kubernetes) win over a CRD's.
"""
from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import jsonschema_rs

from .. import kinds as K
from ..documents import load_paths
from ..errors import UsageError
from . import crd_rules
from .pool import Pool

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_DROP = {"description", "default", "example", "externalDocs", "format", "nullable", "x-kubernetes-validations",
         "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
         "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource"}
_SUBSCHEMA = ("items", "additionalProperties", "not")
_SUBSCHEMAS = ("allOf", "anyOf", "oneOf")
KUBERNETES_REF = "x-kdt-kubernetes"    # a node that is a Kubernetes definition (kdt.schemas.crd_sets)
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]


def to_json_schema(node: Any, preserve: bool = False) -> Any:
    """One node of a CRD's openAPIV3Schema as the JSON Schema the API server enforces.

    `preserve`: the CRD keeps unknown fields everywhere (a v1beta1 CRD's default)."""
    if not isinstance(node, dict):
        return node
    if isinstance(node.get(KUBERNETES_REF), str):
        return {"$ref": f"#/$defs/{node[KUBERNETES_REF]}"}
    out: dict = {}
    for key, value in node.items():
        if key in _DROP:
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {str(k): to_json_schema(v, preserve) for k, v in value.items()}
        elif key in _SUBSCHEMA and isinstance(value, dict):
            out[key] = to_json_schema(value, preserve)
        elif key in _SUBSCHEMAS and isinstance(value, list):
            out[key] = [to_json_schema(v, preserve) for v in value]
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string") is True:
        out["type"] = ["integer", "string"]
        if out.get("anyOf") == _INT_OR_STRING_ANY_OF:
            # controller-gen's own spelling of the same types: one finding, not a second "not valid under any of"
            del out["anyOf"]
    if node.get("x-kubernetes-embedded-resource") is True:
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", {"type": "object"})
    preserve = preserve or node.get("x-kubernetes-preserve-unknown-fields") is True
    if out.get("type") == "object" and "properties" in out and "additionalProperties" not in out and not preserve:
        out["additionalProperties"] = False
    if node.get("nullable") is True and "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = [*types, "null"]
    return out


def _root(schema: dict, preserve: bool = False) -> dict:
    root = to_json_schema(schema, preserve)
    props = root.setdefault("properties", {})
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    props["metadata"] = {"$ref": f"#/$defs/{OBJECT_META}"}
    root.setdefault("type", "object")
    if not schema.get("x-kubernetes-preserve-unknown-fields") and not preserve:
        root["additionalProperties"] = False
    return root


def _field_schema(key: str, node: Any) -> Any:
    """prunenulls.go getSchemaForField: the schema of a map's field (its property, else additionalProperties)."""
    if not isinstance(node, dict):
        return None
    props = node.get("properties")
    if isinstance(props, dict) and key in props:
        return props[key]
    extra = node.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def prune_nulls(x: Any, node: Any) -> Any:
    """PruneNonNullableNullsWithoutDefaults, then defaulting: a copy of `x` as the API server validates it, where
    a null the schema does not allow is dropped, or replaced by the field's default when it has one (`node`: the
    CRD's own openAPIV3Schema node of `x`; a field without a schema keeps its null, as upstream)."""
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            sub = _field_schema(k, node)
            if v is None and isinstance(sub, dict) and sub.get("nullable") is not True:
                if "default" in sub:
                    out[k] = copy.deepcopy(sub["default"])
            else:
                out[k] = prune_nulls(v, sub)
        return out
    if isinstance(x, list):
        items = node.get("items") if isinstance(node, dict) else None
        return [prune_nulls(v, items) for v in x]
    return x


def _any_null(x: Any) -> bool:
    if x is None:
        return True
    if isinstance(x, dict):
        return any(_any_null(v) for v in x.values())
    if isinstance(x, list):
        return any(_any_null(v) for v in x)
    return False


def _has_null(x: Any) -> bool:
    """Whether a null is anywhere in `x`. A null writes `null` in JSON: most objects have none, and json (in C)
    says so faster than a walk; where the text holds `null` (a null, or a string with it) the walk decides."""
    try:
        text = json.dumps(x, check_circular=False)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return _any_null(x)
    return "null" in text and _any_null(x)


def _null_pruner(schema: dict):
    """What the API server does to a custom resource of this schema before validating it (metadata aside: it is
    read into ObjectMeta, where a null is simply no value)."""
    def admit(data: Any) -> Any:
        if not isinstance(data, dict) or not _has_null({k: v for k, v in data.items() if k != "metadata"}):
            return data
        pruned = prune_nulls({k: v for k, v in data.items() if k != "metadata"}, schema)
        return {**pruned, "metadata": data["metadata"]} if "metadata" in data else pruned
    return admit


def _sub(node: Any, key: str) -> Any:
    value = node.get(key) if isinstance(node, dict) else None
    return value if isinstance(value, dict) else None


def apply_defaults(x: Any, node: Any) -> None:
    """Structural defaulting, in place: apiextensions-apiserver v0.35.0
    pkg/apiserver/schema/defaulting/algorithm.go Default. A property that is absent (or a null the schema
    does not allow) takes a deep copy of its default; then every value is defaulted by its own schema
    (a default just set included)."""
    if not isinstance(node, dict):
        return
    if isinstance(x, dict):
        props = node.get("properties") if isinstance(node.get("properties"), dict) else {}
        for k, prop in props.items():
            if isinstance(prop, dict) and prop.get("default") is not None:
                if k not in x or (x[k] is None and prop.get("nullable") is not True):
                    x[k] = copy.deepcopy(prop["default"])
        extra = _sub(node, "additionalProperties")
        for k in list(x):
            if k in props:
                apply_defaults(x[k], props[k])
            elif extra is not None:
                if x[k] is None and extra.get("nullable") is not True and extra.get("default") is not None:
                    x[k] = copy.deepcopy(extra["default"])
                apply_defaults(x[k], extra)
    elif isinstance(x, list):
        items = _sub(node, "items")
        for i in range(len(x)):
            if items is not None and x[i] is None and items.get("nullable") is not True \
                    and items.get("default") is not None:
                x[i] = copy.deepcopy(items["default"])
            apply_defaults(x[i], items)


def defaulted(x: Any, node: Any) -> Any:
    """apply_defaults on a copy of `x`, `x` left as it is: `x` itself where no default applies, else new
    mappings and lists along the paths a default changed (the rest shared, read only). The same object as
    apply_defaults(copy.deepcopy(x), node) makes, keys in the same order, without copying the whole object."""
    if not isinstance(node, dict):
        return x
    if isinstance(x, dict):
        props = node.get("properties") if isinstance(node.get("properties"), dict) else {}
        out = None
        for k, prop in props.items():
            if isinstance(prop, dict) and prop.get("default") is not None:
                if k not in x or (x[k] is None and prop.get("nullable") is not True):
                    out = dict(x) if out is None else out
                    out[k] = copy.deepcopy(prop["default"])
        src = x if out is None else out
        extra = _sub(node, "additionalProperties")
        for k in list(src):
            v = src[k]
            if k in props:
                new = defaulted(v, props[k])
            elif extra is not None:
                new = v
                if new is None and extra.get("nullable") is not True and extra.get("default") is not None:
                    new = copy.deepcopy(extra["default"])
                new = defaulted(new, extra)
            else:
                continue
            if new is not v:
                out = dict(x) if out is None else out
                out[k] = new
        return x if out is None else out
    if isinstance(x, list):
        items = _sub(node, "items")
        out = None
        for i, v in enumerate(x):
            new = v
            if items is not None and new is None and items.get("nullable") is not True \
                    and items.get("default") is not None:
                new = copy.deepcopy(items["default"])
            new = defaulted(new, items)
            if new is not v:
                out = list(x) if out is None else out
                out[i] = new
        return x if out is None else out
    return x


def _has_default(node: Any) -> bool:
    if not isinstance(node, dict):
        return False
    if "default" in node:
        return True
    props = node.get("properties") if isinstance(node.get("properties"), dict) else {}
    return any(_has_default(v) for v in props.values()) or _has_default(node.get("items")) \
        or _has_default(node.get("additionalProperties"))


def _defaulter(schema: dict):
    """What the API server does to an object of this schema before validating it: its defaults (metadata
    aside: it is ObjectMeta, which has none here). None when the schema has no default anywhere."""
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    node = {**schema, "properties": {k: v for k, v in props.items() if k != "metadata"}}
    if not _has_default(node):
        return None

    def admit(data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out = defaulted({k: v for k, v in data.items() if k != "metadata"}, node)
        return {**out, "metadata": data["metadata"]} if "metadata" in data else out
    return admit


class Admit:
    """What the API server does to a custom resource of one schema before validating it: `__call__` as a request
    body is decoded (`kubectl create`, client-side `kubectl apply`): nulls pruned, then defaults; `server_side`
    as server-side apply meets it: the defaults alone, so a null no default replaces stays to be validated
    (apiextensions-apiserver v0.36.3 pkg/apiserver/schema/defaulting/algorithm.go Default replaces a non-nullable
    null by the default where there is one; the rest are refused). Either step may be None (nothing to do)."""

    def __init__(self, prune, default) -> None:
        self.prune, self.default = prune, default

    def __call__(self, data: Any) -> Any:
        for step in (self.prune, self.default):
            if step is not None:
                data = step(data)
        return data

    def server_side(self, data: Any) -> Any:
        return self.default(data) if self.default is not None else data

    @property
    def prunes(self) -> bool:
        return self.prune is not None


def has_null(data: Any) -> bool:
    """Whether an object holds a null outside its metadata (ObjectMeta reads a null as no value)."""
    return isinstance(data, dict) and _has_null({k: v for k, v in data.items() if k != "metadata"})


def _check(doc, version: str, root: dict) -> None:
    """A schema that cannot be compiled (a type or pattern JSON Schema does not know) is the CRD's fault:
    one line naming it, not a traceback later."""
    from .pool import refs as _refs
    refs: list = []
    _refs(root, refs)
    stubs = {r.rsplit("/", 1)[-1]: {"type": "object"} for r in refs if r.startswith("#/$defs/")}
    try:
        jsonschema_rs.validator_for({**root, "properties": {**root["properties"], "metadata": {"type": "object"}},
                                     "$defs": stubs})
    except (jsonschema_rs.ValidationError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UsageError(f"--crd {doc.file}:{doc.line or 0}: CustomResourceDefinition {doc.name} version "
                         f"{version}: its schema cannot be used: {first}") from None


def _versions(spec: dict, beta: bool) -> list[tuple[str, Any]]:
    """(version name, its openAPIV3Schema or None) of every served version."""
    listed = spec.get("versions")
    if not isinstance(listed, list) or not listed:
        listed = [{"name": spec.get("version"), "served": True}] if beta and spec.get("version") else []
    shared = spec.get("validation") if beta else None
    shared = shared.get("openAPIV3Schema") if isinstance(shared, dict) else None
    out = []
    for version in listed:
        if not isinstance(version, dict) or version.get("served") is False or not isinstance(version.get("name"), str):
            continue
        own = version.get("schema")
        own = own.get("openAPIV3Schema") if isinstance(own, dict) else None
        out.append((version["name"], own if isinstance(own, dict) else shared))
    return out


def pools_of(docs, strict: bool = True) -> list[Pool]:
    """One pool per CRD document (v1, or v1beta1 as its era read it): every served version that has a schema, with
    what the API server does before validating (null pruning, defaults) and its CEL rules.

    `strict`: a schema that cannot be compiled is a UsageError now (`--crd`); otherwise the registry finds
    out when a document first needs it, and that kind is then left without a schema."""
    out = []
    for doc in docs:
        if not K.CRD.matches(doc) or not isinstance(doc.data, dict):
            continue
        beta = doc.api_version == f"{K.CRD.group}/v1beta1"
        spec = doc.data.get("spec") if isinstance(doc.data.get("spec"), dict) else {}
        group = spec.get("group")
        kind = (spec.get("names") or {}).get("kind") if isinstance(spec.get("names"), dict) else None
        if not isinstance(group, str) or not isinstance(kind, str):
            continue
        # v1beta1 types.go: preserveUnknownFields defaults to true; v1 requires false.
        preserve = beta and spec.get("preserveUnknownFields") is not False
        defs, kinds, admit, rules = {}, {}, {}, {}
        for version, schema in _versions(spec, beta):
            if not isinstance(schema, dict):
                if not beta:
                    continue
                schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            name = f"crd.{group}.{version}.{kind}"
            defs[name] = _root(schema, preserve)
            if strict:
                _check(doc, version, defs[name])
            kinds.setdefault(f"{group}/{version}", {})[kind] = name
            prune, default = (None if preserve else _null_pruner(schema)), _defaulter(schema)
            if prune is not None or default is not None:
                admit[name] = Admit(prune, default)
            found = crd_rules.schema_rules(schema)
            if found:
                rules[name] = crd_rules.trie(found)
        if kinds:
            out.append(Pool(f"CRD {doc.name} ({Path(doc.file).name})", defs, kinds, admit, rules))
    return out


@functools.lru_cache(maxsize=None)
def load(paths: tuple[str, ...]) -> tuple[Pool, ...]:
    """The CRD pools of these files and folders (folders: every *.yaml, *.yml, *.json below them)."""
    files: list[str] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            files += sorted(str(f) for f in path.rglob("*") if f.suffix in (".yaml", ".yml", ".json") and f.is_file())
        elif path.is_file():
            files.append(str(path))
        else:
            raise UsageError(f"--crd {p}: no such file or folder")
    docs, problems = load_paths(files)
    if problems:
        first = problems[0]
        raise UsageError(f"--crd {first.file}:{first.line or 0}: {first.message}")
    pools = pools_of(docs)
    if not pools:
        raise UsageError(f"--crd {', '.join(paths)}: no CustomResourceDefinition with a schema")
    return tuple(pools)


class RunCrds:
    """The CustomResourceDefinitions one run found (a walked repository, the files named, what its targets
    render): each becomes the schema of its kind for that run, as `--crd` does, and the output names them.

    The same CRD met twice (a base rendered by several overlays) counts once; two different CRDs of one kind
    both count (a document either accepts is valid, kdt.schemas.Registry.all). A CRD whose schema cannot be
    used here gives no schema (kdt.schemas.Registry._compile). Forked workers (kdt.stream) find the object
    by its number instead of receiving a copy."""

    _live: dict = {}

    def __init__(self, docs):
        import json
        unique: dict = {}
        texts: set = set()
        for d in docs:
            if K.CRD.matches(d) and isinstance(d.data, dict) and isinstance(d.data.get("spec"), dict):
                if d.text and d.text in texts:
                    continue            # the same text again (a base rendered by several overlays)
                texts.add(d.text)
                key = json.dumps(d.data["spec"], sort_keys=True, default=str)
                unique.setdefault(key, d)
        self.docs = list(unique.values())
        pools, self.found = [], []
        for d in self.docs:
            for p in pools_of([d], strict=False):
                pools.append(Pool(f"CRD {d.name} ({d.file})", p.defs, p.kinds, p.admit, p.rules))
                kind = next(iter(next(iter(p.kinds.values()))))
                vers = ", ".join(av.split("/", 1)[1] for av in p.kinds)
                self.found.append(f"{kind} ({d.data['spec'].get('group')} {vers}) from {d.file}")
        self.pools = tuple(pools)
        self.number = len(RunCrds._live)
        RunCrds._live[self.number] = self

    def __reduce__(self):
        return (_run_crds, (self.number,))

    def __bool__(self) -> bool:
        return bool(self.pools)

    def note(self) -> list[str]:
        """What the output says: how many CRDs give schemas, then one line per CRD."""
        if not self.found:
            return []
        return [f"{len(self.found)} CustomResourceDefinition(s) of this run give schemas to their kinds:",
                *(f"  {line}" for line in self.found)]


def _run_crds(number: int) -> RunCrds:
    return RunCrds._live[number]
