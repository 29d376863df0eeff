"""Schemas from CustomResourceDefinitions the user names (`validate --crd PATH`).

A repository that installs another operator (Kueue, Volcano, the
scheduler-plugins, ...) usually keeps that operator's CRDs beside the objects
that use them. Each served version of each CRD (apiextensions.k8s.io/v1) becomes
the schema of its kind, read as the API server reads it:

- unknown fields are errors (kubectl's strict field validation), except where
  the schema says `x-kubernetes-preserve-unknown-fields`;
- `x-kubernetes-int-or-string` takes an integer or a string, `nullable` also null;
- `x-kubernetes-embedded-resource` objects carry apiVersion, kind and metadata;
- the object's `metadata` is Kubernetes' ObjectMeta (strict, like every kind).

Not applied: CEL rules (`x-kubernetes-validations`), formats, defaults and
conversion webhooks; so nothing is reported that the CRD does not spell out.
The project's own schemas of a kind (Kubeflow, JobSet, Argo CD, Kubernetes) win
over a CRD's.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jsonschema_rs

from .. import kinds as K
from ..documents import load_paths
from ..errors import UsageError
from . import Pool

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_DROP = {"description", "default", "example", "externalDocs", "format", "nullable", "x-kubernetes-validations",
         "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
         "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource"}
_SUBSCHEMA = ("items", "additionalProperties", "not")
_SUBSCHEMAS = ("allOf", "anyOf", "oneOf")


def to_json_schema(node: Any) -> Any:
    """One node of a CRD's openAPIV3Schema as the JSON Schema the API server enforces."""
    if not isinstance(node, dict):
        return node
    out: dict = {}
    for key, value in node.items():
        if key in _DROP:
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {str(k): to_json_schema(v) for k, v in value.items()}
        elif key in _SUBSCHEMA and isinstance(value, dict):
            out[key] = to_json_schema(value)
        elif key in _SUBSCHEMAS and isinstance(value, list):
            out[key] = [to_json_schema(v) for v in value]
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string") is True:
        out["type"] = ["integer", "string"]
    if node.get("x-kubernetes-embedded-resource") is True:
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", {"type": "object"})
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
    if out.get("type") == "object" and "properties" in out and "additionalProperties" not in out and not preserve:
        out["additionalProperties"] = False
    if node.get("nullable") is True and "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = [*types, "null"]
    return out


def _root(schema: dict) -> dict:
    root = to_json_schema(schema)
    props = root.setdefault("properties", {})
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    props["metadata"] = {"$ref": f"#/$defs/{OBJECT_META}"}
    root.setdefault("type", "object")
    if not schema.get("x-kubernetes-preserve-unknown-fields"):
        root["additionalProperties"] = False
    return root


def _check(doc, version: str, root: dict) -> None:
    """A schema that cannot be compiled (a type or pattern JSON Schema does not know) is the CRD's fault:
    one line naming it, not a traceback later."""
    try:
        jsonschema_rs.validator_for({**root, "properties": {**root["properties"], "metadata": {"type": "object"}}})
    except (jsonschema_rs.ValidationError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UsageError(f"--crd {doc.file}:{doc.line or 0}: CustomResourceDefinition {doc.name} version "
                         f"{version}: its schema cannot be used: {first}") from None


def pools_of(docs) -> list[Pool]:
    """One pool per CRD document: every served version that has a schema."""
    out = []
    for doc in docs:
        if not K.CRD.matches(doc) or not isinstance(doc.data, dict):
            continue
        spec = doc.data.get("spec") if isinstance(doc.data.get("spec"), dict) else {}
        group = spec.get("group")
        kind = (spec.get("names") or {}).get("kind") if isinstance(spec.get("names"), dict) else None
        if not isinstance(group, str) or not isinstance(kind, str):
            continue
        defs, kinds = {}, {}
        for version in spec.get("versions") or []:
            if not isinstance(version, dict) or version.get("served") is False:
                continue
            schema = ((version.get("schema") or {}).get("openAPIV3Schema")
                      if isinstance(version.get("schema"), dict) else None)
            if not isinstance(schema, dict) or not isinstance(version.get("name"), str):
                continue
            name = f"crd.{group}.{version['name']}.{kind}"
            defs[name] = _root(schema)
            _check(doc, version["name"], defs[name])
            kinds.setdefault(f"{group}/{version['name']}", {})[kind] = name
        if kinds:
            out.append(Pool(f"CRD {doc.name} ({Path(doc.file).name})", defs, kinds))
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
