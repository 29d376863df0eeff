"""The enums, integer formats, list types and CEL rules (`x-kubernetes-validations`) of the official CRDs.

The JSON schemas of the Kubeflow kinds come from the API packages (generate.py),
which carry neither enums nor CEL rules; the API server enforces both. This
module extracts them from a release's official CRDs into
crd-rules/crd-rules-<release>.json (committed), and applies them:

    python -m kdt.schemas.crd_rules --crds DIR --trainer 2.3 [--check]

DIR holds the release's `trainer.kubeflow.org_*.yaml` CRDs (kubeflow/trainer
manifests/base/crds at tag v<release>.0; the shared corpus has them at
corpus/kubeflow/crds/trainer-v<release>.0). What is kept:
- CEL rules that do not compare with `oldSelf` (those only judge updates);
- `x-kubernetes-list-type: map` and `set` arrays, everywhere (the API server enforces them on every custom
  resource, the Kubernetes types a CRD embeds included), with the defaults of a map's key fields;
- enums and int32/int64 formats outside the Kubernetes types the CRDs embed
  (pod templates, env, volumes: the Kubernetes schemas check those);
- nothing under `status` (the controller writes it).
JobSet has no CRD in the Trainer release; its spec is embedded in every runtime
at `spec.template.spec`, so the rules found there apply to a JobSet's `spec`.
"""
from __future__ import annotations

import functools
import json
import re
import sys
from pathlib import Path
from typing import Any, Iterator

from ..generated import write_or_check
from ..operators.jobset import facts as JS
from ..operators.trainer_v2 import facts as TV2

HERE = Path(__file__).resolve().parent
GENERATED = HERE / "crd-rules"
JOBSET_AV, JOBSET = JS.API_VERSION, JS.KIND
RUNTIME_JOBSET_SPEC = ("spec", "template", "spec")
# Subtrees of Kubernetes types inside the CRDs: their enums and formats are the Kubernetes schemas' business.
_K8S_SUBTREES = ("podTemplateOverrides", "runtimePatches", "env", "volumeClaimPolicies", "metrics", "resourcesPerNode")
# What Go's int32 and int64 hold: encoding/json refuses a number past the field's type.
INT_RANGE = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}


def _in_k8s_type(path: tuple) -> bool:
    if any(p in _K8S_SUBTREES for p in path):
        return True
    # replicatedJobs[*].template is a batch/v1 JobTemplateSpec
    return any(path[i] == "replicatedJobs" and "template" in path[i + 1:] for i in range(len(path)))


# The value limits of an OpenAPI schema node the API server enforces on a custom resource (apiextensions
# validation: minimum/maximum, lengths, item and property counts); kept from the Trainer CRDs outside a
# runtime's JobTemplateSpec (a Kubernetes type, whose limits kdt.apivalidation checks), so a TrainJob's
# runtimePatches pod spec (Trainer's PodSpecPatch: terminationGracePeriodSeconds `minimum: 0`,
# trainjob_types.go +kubebuilder:validation:Minimum=0 at v2.3.0) and spec.trainer.command items (maxLength
# 1048576) are held to them.
LIMITS = ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")


def _in_job_template(path: tuple) -> bool:
    """A runtime's replicatedJobs[*].template (batch/v1 JobTemplateSpec); a TrainJob's patches are Trainer types."""
    return "runtimePatches" not in path and any(
        path[i] == "replicatedJobs" and "template" in path[i + 1:] for i in range(len(path)))


def _walk(node: Any, path: tuple, out: list, enums: bool = True, k8s_type=_in_k8s_type, limits: bool = False) -> None:
    """Every CEL rule (but those comparing with `oldSelf`), `x-kubernetes-list-type` map and set, enum
    (`enums`), int32/int64 format and (`limits`) value limit of a CRD schema node and the nodes below it,
    `status` aside; `k8s_type(path)`: a subtree whose enums and formats are the Kubernetes schemas' business."""
    if not isinstance(node, dict) or path[:1] == ("status",):
        return
    listed = node.get("x-kubernetes-list-type")
    if listed in ("map", "set") and node.get("type") == "array":
        # enforced on every custom resource, Kubernetes types embedded in the CRD included
        out.append(_list_rule(node, path))
    for v in node.get("x-kubernetes-validations") or ():
        if isinstance(v, dict) and isinstance(v.get("rule"), str) and "oldSelf" not in v["rule"]:
            out.append({"path": list(path), "cel": v["rule"], "message": v.get("message") or v["rule"]})
    if not k8s_type(path):
        if enums and "enum" in node:
            out.append({"path": list(path), "enum": node["enum"]})
        if node.get("format") in INT_RANGE and node.get("type") == "integer":
            out.append({"path": list(path), "format": node["format"]})
    if limits and not _in_job_template(path):
        for key in LIMITS:
            if isinstance(node.get(key), (int, float)) and not isinstance(node.get(key), bool):
                out.append({"path": list(path), "limit": key, "value": node[key]})
    for k, p in (node.get("properties") or {}).items() if isinstance(node.get("properties"), dict) else ():
        _walk(p, path + (k,), out, enums, k8s_type, limits)
    if isinstance(node.get("items"), dict):
        _walk(node["items"], path + ("*",), out, enums, k8s_type, limits)
    if isinstance(node.get("additionalProperties"), dict):
        _walk(node["additionalProperties"], path + ("*",), out, enums, k8s_type, limits)


def _list_rule(node: dict, path: tuple) -> dict:
    """An `x-kubernetes-list-type: map` or `set` array: its keys, and the defaults of its key fields (the API
    server defaults an item before its keys are compared)."""
    if node["x-kubernetes-list-type"] == "set":
        return {"path": list(path), "list": "set"}
    keys = [k for k in node.get("x-kubernetes-list-map-keys") or () if isinstance(k, str)]
    items = node.get("items") if isinstance(node.get("items"), dict) else {}
    props = items.get("properties") if isinstance(items.get("properties"), dict) else {}
    defaults = {k: props[k]["default"] for k in keys
                if isinstance(props.get(k), dict) and props[k].get("default") is not None}
    return {"path": list(path), "list": "map", "keys": keys, **({"defaults": defaults} if defaults else {})}


def schema_rules(schema: dict) -> list[dict]:
    """The CEL rules and integer formats of any CRD version's openAPIV3Schema (its enums are the JSON
    schema's, kdt.schemas.crds): what a CustomResourceDefinition found in a run adds to its structure."""
    out: list = []
    _walk(schema, (), out, enums=False, k8s_type=lambda path: False)
    return out


def extract(crds: list[dict], release: str, source: str) -> dict:
    """The payload of crd-rules/crd-rules-<release>.json from the release's CRD documents."""
    kinds: dict = {}
    for crd in crds:
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            rules: list = []
            _walk(version["schema"]["openAPIV3Schema"], (), rules, limits=True)
            kinds.setdefault(f"{group}/{version['name']}", {})[kind] = rules
            if kind in TV2.RUNTIME_KINDS and JOBSET not in kinds.get(JOBSET_AV, {}):
                n = len(RUNTIME_JOBSET_SPEC)
                js = [{**r, "path": ["spec", *r["path"][n:]]} for r in rules if tuple(r["path"][:n]) == RUNTIME_JOBSET_SPEC]
                kinds.setdefault(JOBSET_AV, {})[JOBSET] = js
    return {"release": release, "source": source,
            "kinds": {av: dict(sorted(ks.items())) for av, ks in sorted(kinds.items())}}


def dumps(payload: dict) -> str:
    return json.dumps(payload, indent=1, sort_keys=False) + "\n"


def output_path(release: str) -> Path:
    return GENERATED / f"crd-rules-{release}.json"


# Applying the rules ----------------------------------------------------------

@functools.lru_cache(maxsize=None)
def load(release: str) -> dict:
    path = output_path(release)
    if not path.is_file():
        return {"kinds": {}}
    return json.loads(path.read_text())


def rules_for(release: str, api_version: str, kind: str) -> list[dict]:
    return load(release)["kinds"].get(api_version, {}).get(kind, [])


def enum_at(release: str, api_version: str, kind: str, path: tuple) -> tuple:
    """The CRD enum at a path (wildcards `*`), e.g. JobSet failure-policy actions of a release."""
    for r in rules_for(release, api_version, kind):
        if "enum" in r and tuple(r["path"]) == tuple(path):
            return tuple(r["enum"])
    return ()


class _Node:
    """A trie of rule paths: one walk of a document visits every rule's matches."""
    __slots__ = ("children", "rules")

    def __init__(self) -> None:
        self.children: dict[str, "_Node"] = {}
        self.rules: list[dict] = []


@functools.lru_cache(maxsize=None)
def _trie(release: str, api_version: str, kind: str) -> _Node | None:
    return trie(rules_for(release, api_version, kind))


def trie(rules: list[dict]) -> _Node | None:
    """The rules as a trie of their paths (None when there is none)."""
    if not rules:
        return None
    root = _Node()
    for r in rules:
        node = root
        for part in r["path"]:
            node = node.children.setdefault(part, _Node())
        node.rules.append(r)
    return root


def _matches(node: _Node, data: Any, path: tuple, out: list) -> None:
    if node.rules and data is not None:
        out.extend((r, path, data) for r in node.rules)
    for key, child in node.children.items():
        if key == "*":
            if isinstance(data, list):
                for i, v in enumerate(data):
                    _matches(child, v, path + (i,), out)
            elif isinstance(data, dict):
                for k, v in data.items():
                    _matches(child, v, path + (k,), out)
        elif isinstance(data, dict) and key in data:
            _matches(child, data[key], path + (key,), out)


# CEL: the library's execute costs ~20 us even on a tiny value, so each rule's
# verdict is cached by the part of the value it reads: the `self.a.b` chains it
# names (a chain stops before a method or macro call), or the whole value when
# it uses `self` bare.
_CHAIN = re.compile(r"\b(self|[a-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)*)")
_MACRO = re.compile(r"\bself((?:\.[A-Za-z_][A-Za-z0-9_]*)*)\.(?:exists_one|exists|all|filter|map)\(\s*([a-z_][A-Za-z0-9_]*)\s*,")
_CACHE_MAX = 8192
_verdicts: dict = {}


def _closing(text: str, i: int) -> int:
    """Index of the parenthesis that closes the one before `i`."""
    depth = 1
    while i < len(text):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
        i += 1
    return len(text)


def _var_chains(rule: str, var: str) -> tuple | None:
    """The chains of `var` a text reads (a trailing call is not a field); None when it uses `var` bare."""
    out = []
    for m in _CHAIN.finditer(rule):
        if m.group(1) != var:
            continue
        parts = [p for p in m.group(2).split(".") if p]
        if parts and rule[m.end():m.end() + 1] == "(":
            parts.pop()
        if not parts:
            return None
        out.append(tuple(parts))
    return tuple(out)


_TWO_VARIABLES = re.compile(r"\s*[a-z_][A-Za-z0-9_]*\s*,")


@functools.lru_cache(maxsize=None)
def _chains(rule: str):
    """What a rule reads of `self`: a tuple of (field chain, item chains or None) where item chains
    say what a macro (`self.list.exists(x, ...)`) reads of each item; None when it reads `self` whole.

    A macro's body may read `self` too (Kueue v0.19.2 ClusterQueue `resourceGroups[*]`:
    `self.flavors.all(x, size(x.resources) == size(self.coveredResources))`): those chains are read as well,
    or the projection would drop `coveredResources` and the rule fail to evaluate (and say nothing)."""
    macro_spans = []
    found: list = []
    for m in _MACRO.finditer(rule):
        chain = tuple(p for p in m.group(1).split(".") if p)
        end = _closing(rule, m.end())
        body = rule[m.end():end]
        if not chain:
            return None
        # `self.list.all(i, x, ...)`: CEL's two-variable comprehensions (index or key, value) read items whole
        items = None if _TWO_VARIABLES.match(body) else _var_chains(body, m.group(2))
        found.append((chain, items))
        macro_spans.append((m.start(), m.end()))
    # the macros' heads (`self.flavors.all(x,`) blanked: their bodies' own `self` chains are read below
    rest = "".join(c if not any(a <= i < b for a, b in macro_spans) else " " for i, c in enumerate(rule))
    plain = _var_chains(rest, "self")
    if plain is None:
        return None
    return tuple((c, None) for c in plain) + tuple(found)


_WHOLE = True


def _merge(node: Any, chain: tuple, leaf: Any) -> Any:
    """A projection tree with one more chain: a node is `_WHOLE` (the value as it is) or
    {"fields": {name: node}, "items": node}; the whole value absorbs whatever else reads it."""
    if node is _WHOLE:
        return node
    node = node if isinstance(node, dict) else {"fields": {}}
    if not chain:
        if leaf is _WHOLE:
            return _WHOLE
        merged = dict(node)
        merged["items"] = leaf if "items" not in node else _union(node["items"], leaf)
        return merged
    fields = dict(node.get("fields", {}))
    fields[chain[0]] = _merge(fields.get(chain[0]), chain[1:], leaf)
    return {**node, "fields": fields}


def _union(a: Any, b: Any) -> Any:
    if a is _WHOLE or b is _WHOLE:
        return _WHOLE
    out = {"fields": dict(a.get("fields", {}))}
    for k, v in b.get("fields", {}).items():
        out["fields"][k] = _union(out["fields"][k], v) if k in out["fields"] else v
    if "items" in a or "items" in b:
        out["items"] = _union(a["items"], b["items"]) if "items" in a and "items" in b else a.get("items", b.get("items"))
    return out


@functools.lru_cache(maxsize=None)
def _tree(chains) -> Any:
    """The projection tree of a rule's chains (`_chains`), None for the whole value."""
    if chains is None:
        return None
    root: Any = {"fields": {}}
    for chain, items in chains:
        leaf: Any = _WHOLE
        if items is not None:
            leaf = {"fields": {}}
            for c in items:
                leaf = _merge(leaf, c, _WHOLE)
        root = _merge(root, chain, _WHOLE) if items is None else _merge(root, chain, leaf)
    return None if root is _WHOLE else root


def _cut(value: Any, node: Any) -> Any:
    """`value` cut to a projection tree; new containers only (the value itself is never changed)."""
    if node is _WHOLE or node is None:
        return value
    if isinstance(value, dict):
        if "items" in node:           # a macro over a map iterates its keys: the body may index it
            return value
        return {k: _cut(value[k], sub) for k, sub in node["fields"].items() if k in value}
    if isinstance(value, list):
        if node.get("fields") or "items" not in node:
            return value
        return [_cut(x, node["items"]) for x in value]
    return value


def _project(value: Any, chains) -> Any:
    """The part of `value` the chains read: a rule's verdict on it is its verdict on `value`."""
    if chains is None or not isinstance(value, dict):
        return value
    return _cut(value, _tree(chains))


def _evaluation_error(exc: Exception) -> str:
    """The API server's words for an error of evaluating a rule on a value (apiextensions-apiserver v0.36.3
    pkg/apiserver/schema/cel/validation.go validateExpressions: "no such key: {key}, index out of bounds:
    {index}, ... division by zero"), or "" for an error of this engine (a function of the API server's CEL
    libraries it lacks, a type it reads otherwise)."""
    if isinstance(exc, KeyError):
        return f"no such key: {exc.args[0] if exc.args else ''}"
    if isinstance(exc, IndexError) and str(exc).startswith("index out of bounds"):
        return str(exc)
    if isinstance(exc, ZeroDivisionError):
        return "division by zero"
    return ""


def _cel(rule: str, value: Any) -> tuple[bool, str, str]:
    """(holds, error text, the API server's evaluation error or "") of one CEL rule on one value."""
    try:
        chains = _chains(rule)
    except RecursionError:
        chains = None
    projected = _project(value, chains)
    try:
        key = (rule, json.dumps(projected, sort_keys=True, separators=(",", ":")))
    except (TypeError, ValueError):
        key = None
    if key is not None and key in _verdicts:
        return _verdicts[key]
    try:
        verdict = (_program(rule).execute({"self": projected}) is True, "", "")
    except Exception as exc:   # a value the rule cannot take is refused by the API server too
        evaluation = _evaluation_error(exc)
        verdict = (False, evaluation or str(exc).split(".")[0], evaluation)
    if key is not None:
        if len(_verdicts) >= _CACHE_MAX:
            _verdicts.clear()
        _verdicts[key] = verdict
    return verdict


@functools.lru_cache(maxsize=None)
def _cel_module():
    """The compiled core of common-expression-language, without `import cel`.

    The package's __init__ also imports its command line (typer, prompt_toolkit):
    0.26 s of start-up for nothing the validator uses, so the extension module
    is loaded on its own.
    """
    import importlib.machinery
    import importlib.util
    spec = importlib.util.find_spec("cel")
    if spec is None or not spec.origin:
        from ..errors import UsageError
        raise UsageError("common-expression-language is not installed; run `make venv` to bootstrap .venv")
    folder = Path(spec.origin).parent
    so = next(iter(sorted(folder.glob("cel.*.so")) + sorted(folder.glob("cel.*.pyd"))), None)
    if so is None:
        import cel
        return cel
    loader = importlib.machinery.ExtensionFileLoader("cel.cel", str(so))
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location("cel.cel", str(so), loader=loader))
    loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=None)
def _program(rule: str):
    return _cel_module().compile(rule)


def violations(release: str, api_version: str, kind: str, data: dict) -> Iterator[tuple[tuple, str, str]]:
    """(path, message, how) for each CRD enum, format or CEL rule the object breaks."""
    yield from violations_of(_trie(release, api_version, kind), data)


def violations_of(rules: _Node | None, data: dict, lenient: bool = False) -> Iterator[tuple[tuple, str, str]]:
    """(path, message, how) for each rule of a trie (`trie(rules)`) the object breaks.

    `lenient`: a rule this engine cannot compile or evaluate on the value says nothing (the rules of a CRD
    found in a run, written for the API server's CEL environment and its libraries, kdt.schemas.crds),
    where the Trainer CRDs' rules, all of which are known to run here, report it. An error the API server's
    evaluation gives too (no such key, index out of bounds, division by zero) is reported either way.

    Every rule is evaluated wherever its schema node sits: the object, nested objects, the items of lists and
    the values of maps (`*`), at any depth (tests/validate/test_crd_rule_positions.py, per CRD set)."""
    if rules is None:
        return
    found: list = []
    _matches(rules, data, (), found)
    for r, path, value in found:
        if "list" in r:
            for i, item in duplicates(r, value):
                yield path + (i,), f"Duplicate value: {_go_value(item)}", "list-type"
        elif "enum" in r:
            if value not in r["enum"]:
                opts = ", ".join(json.dumps(o) for o in r["enum"])
                yield path, f"{json.dumps(value)} is not one of: {opts}", "enum"
        elif "format" in r:
            lo, hi = INT_RANGE[r["format"]]
            if isinstance(value, float) and value.is_integer():
                value = int(value)          # past int64, kubectl's reader gives a float64
            if isinstance(value, int) and not isinstance(value, bool) and not lo <= value <= hi:
                yield path, f"{value} is out of the {r['format']} range", "format"
        elif "limit" in r:
            broken = _limit_broken(r["limit"], r["value"], value)
            if broken:
                yield path, broken, "limit"
        else:
            ok, error, evaluation = _cel(r["cel"], value)
            if evaluation:
                yield path, f"{evaluation} evaluating rule: {r['message']} (CEL rule `{r['cel']}`)", "cel"
            elif error and lenient:
                continue
            elif error:
                yield path, f"{r['message']} (CEL rule `{r['cel']}` failed: {error})", "cel"
            elif not ok:
                yield path, f"{r['message']} (CEL rule `{r['cel']}`)", "cel"


# x-kubernetes-list-type: apiextensions-apiserver v0.36.3 pkg/apiserver/schema/listtype/validation.go,
# ValidateListSetsAndMaps, run on every custom resource after its defaults (pkg/registry/customresource/strategy.go).

class _Unspecified:
    """An item without the key field (listtype's unspecifiedKeyValue)."""


_UNSPECIFIED = _Unspecified()


def _identity(x: Any) -> Any:
    """What Go compares: compound values by their JSON, scalars by type and value (true is not 1, 1 is not 1.0)."""
    if isinstance(x, (dict, list)):
        return ("json", json.dumps(x, sort_keys=True, separators=(",", ":"), default=str))
    return (type(x).__name__, x)


def _non_unique(values: list) -> list[int]:
    """validateListSet: the index of the second occurrence of each repeated value (a third is not reported)."""
    seen: dict = {}
    out = []
    for i, x in enumerate(values):
        key = _identity(x) if x is not _UNSPECIFIED else ("unspecified",)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 2:
            out.append(i)
    return out


def duplicates(rule: dict, value: Any) -> list[tuple[int, Any]]:
    """(index, the value the API server names) of each duplicate of a list-type set or map."""
    if not isinstance(value, list) or len(value) <= 1:
        return []
    if rule["list"] == "set":
        return [(i, value[i]) for i in _non_unique(value)]
    if not all(x is None or isinstance(x, dict) for x in value):
        return []      # "must be an object for an array of list-type map": the schema's finding
    keys, defaults = rule["keys"], rule.get("defaults") or {}

    def field(x, k):
        if isinstance(x, dict) and k in x:
            return x[k]
        return defaults.get(k, _UNSPECIFIED) if isinstance(x, dict) else _UNSPECIFIED
    if len(keys) == 1:
        k = keys[0]
        found = [field(x, k) for x in value]
        return [(i, {} if found[i] is _UNSPECIFIED else {k: found[i]}) for i in _non_unique(found)]
    found = [{k: v for k in keys if (v := field(x, k)) is not _UNSPECIFIED} for x in value]
    return [(i, found[i]) for i in _non_unique(found)]


def _go_value(x: Any) -> str:
    """A value as field.Duplicate prints it: strings quoted, objects as JSON."""
    return json.dumps(x, sort_keys=True, separators=(",", ":"), default=str)


def _limit_broken(limit: str, bound, value) -> str:
    """The API server's message (k8s.io/apiextensions-apiserver pkg/apiserver/validation, kube-openapi
    validate: field.TooLong / TooMany / Invalid) when `value` breaks the schema's `limit`, else ''."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if limit == "minimum" and number and value < bound:
        return f"Invalid value: {value}: should be greater than or equal to {bound}"
    if limit == "maximum" and number and value > bound:
        return f"Invalid value: {value}: should be less than or equal to {bound}"
    if limit == "maxLength" and isinstance(value, str) and len(value) > bound:
        return f"Too long: may not be more than {bound} characters"
    if limit == "minLength" and isinstance(value, str) and len(value) < bound:
        return f"Invalid value: should be at least {bound} characters long"
    if limit == "maxItems" and isinstance(value, list) and len(value) > bound:
        return f"Too many: {len(value)}: must have at most {bound} items"
    if limit == "minItems" and isinstance(value, list) and len(value) < bound:
        return f"Invalid value: should have at least {bound} items"
    if limit == "maxProperties" and isinstance(value, dict) and len(value) > bound:
        return f"Too many: {len(value)}: must have at most {bound} properties"
    if limit == "minProperties" and isinstance(value, dict) and len(value) < bound:
        return f"Invalid value: should have at least {bound} properties"
    return ""


# Generator command -------------------------------------------------------------

def main(argv=None) -> int:
    import argparse
    import yaml
    p = argparse.ArgumentParser(prog="crd_rules.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--crds", required=True, help="folder of the release's trainer.kubeflow.org_*.yaml CRDs")
    p.add_argument("--trainer", required=True, help="the Trainer release, e.g. 2.3")
    p.add_argument("--check", action="store_true", help="exit 1 when the committed file differs")
    args = p.parse_args(argv)
    folder = Path(args.crds)
    files = sorted(folder.glob("trainer.kubeflow.org_*.yaml"))
    if not files:
        print(f"crd_rules.py: error: {folder}: no trainer.kubeflow.org_*.yaml CRDs", file=sys.stderr)
        return 2
    crds = []
    for f in files:
        try:
            crds.extend(d for d in yaml.safe_load_all(f.read_text()) if d)
        except yaml.YAMLError as exc:
            print(f"crd_rules.py: error: {f}: {exc}", file=sys.stderr)
            return 2
    text = dumps(extract(crds, args.trainer, f"kubeflow/trainer v{args.trainer}.0 manifests/base/crds/"
                                             + ", ".join(f.name for f in files)))
    return write_or_check(output_path(args.trainer), text, args.check, "crd_rules.py", str(folder))


if __name__ == "__main__":
    sys.exit(main())
