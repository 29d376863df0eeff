"""The enums, integer formats and CEL rules (`x-kubernetes-validations`) of the official CRDs.

The JSON schemas of the Kubeflow kinds come from the API packages (generate.py),
which carry neither enums nor CEL rules; the API server enforces both. This
module extracts them from a release's official CRDs into
crd-rules/crd-rules-<release>.json (committed), and applies them:

    python scripts/kdt/schemas/crd_rules.py --crds DIR --trainer 2.3 [--check]

DIR holds the release's `trainer.kubeflow.org_*.yaml` CRDs (kubeflow/trainer
manifests/base/crds at tag v<release>.0; the shared corpus has them at
corpus/kubeflow/crds/trainer-v<release>.0). What is kept:
- CEL rules that do not compare with `oldSelf` (those only judge updates);
- enums and int32/int64 formats outside the Kubernetes types the CRDs embed
  (pod templates, env, volumes: the Kubernetes schemas check those);
- nothing under `status` (the controller writes it).
JobSet has no CRD in the Trainer release; its spec is embedded in every runtime
at `spec.template.spec`, so the rules found there apply to a JobSet's `spec`.
"""
from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any, Iterator

HERE = Path(__file__).resolve().parent
GENERATED = HERE / "crd-rules"
JOBSET_AV, JOBSET = "jobset.x-k8s.io/v1alpha2", "JobSet"
RUNTIME_JOBSET_SPEC = ("spec", "template", "spec")
# Subtrees of Kubernetes types inside the CRDs: their enums and formats are the Kubernetes schemas' business.
_K8S_SUBTREES = ("podTemplateOverrides", "runtimePatches", "env", "volumeClaimPolicies", "metrics", "resourcesPerNode")
_INT_RANGE = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}


def _in_k8s_type(path: tuple) -> bool:
    if any(p in _K8S_SUBTREES for p in path):
        return True
    # replicatedJobs[*].template is a batch/v1 JobTemplateSpec
    return any(path[i] == "replicatedJobs" and "template" in path[i + 1:] for i in range(len(path)))


def _walk(node: Any, path: tuple, out: list) -> None:
    if not isinstance(node, dict) or path[:1] == ("status",):
        return
    for v in node.get("x-kubernetes-validations") or ():
        if "oldSelf" not in v.get("rule", ""):
            out.append({"path": list(path), "cel": v["rule"], "message": v.get("message") or v["rule"]})
    if not _in_k8s_type(path):
        if "enum" in node:
            out.append({"path": list(path), "enum": node["enum"]})
        if node.get("format") in _INT_RANGE and node.get("type") == "integer":
            out.append({"path": list(path), "format": node["format"]})
    for k, p in (node.get("properties") or {}).items():
        _walk(p, path + (k,), out)
    if isinstance(node.get("items"), dict):
        _walk(node["items"], path + ("*",), out)
    if isinstance(node.get("additionalProperties"), dict):
        _walk(node["additionalProperties"], path + ("*",), out)


def extract(crds: list[dict], release: str, source: str) -> dict:
    """The payload of crd-rules/crd-rules-<release>.json from the release's CRD documents."""
    kinds: dict = {}
    for crd in crds:
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            rules: list = []
            _walk(version["schema"]["openAPIV3Schema"], (), rules)
            kinds.setdefault(f"{group}/{version['name']}", {})[kind] = rules
            if kind.endswith("TrainingRuntime") and JOBSET not in kinds.get(JOBSET_AV, {}):
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


def _at(data: Any, pattern: list, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """Every (path, value) of `data` that matches `pattern` (`*`: each list item or map value)."""
    if not pattern:
        yield path, data
        return
    head, rest = pattern[0], pattern[1:]
    if head == "*":
        if isinstance(data, list):
            for i, v in enumerate(data):
                yield from _at(v, rest, path + (i,))
        elif isinstance(data, dict):
            for k, v in data.items():
                yield from _at(v, rest, path + (k,))
    elif isinstance(data, dict) and head in data:
        yield from _at(data[head], rest, path + (head,))


@functools.lru_cache(maxsize=None)
def _program(rule: str):
    import cel
    return cel.compile(rule)


def violations(release: str, api_version: str, kind: str, data: dict) -> Iterator[tuple[tuple, str, str]]:
    """(path, message, how) for each CRD enum, format or CEL rule the object breaks."""
    for r in rules_for(release, api_version, kind):
        for path, value in _at(data, r["path"]):
            if value is None:
                continue
            if "enum" in r:
                if value not in r["enum"]:
                    opts = ", ".join(json.dumps(o) for o in r["enum"])
                    yield path, f"{json.dumps(value)} is not one of: {opts}", "enum"
            elif "format" in r:
                lo, hi = _INT_RANGE[r["format"]]
                if isinstance(value, int) and not isinstance(value, bool) and not lo <= value <= hi:
                    yield path, f"{value} is out of the {r['format']} range", "format"
            else:
                try:
                    ok = _program(r["cel"]).execute({"self": value})
                except Exception as exc:   # a value the rule cannot take is refused by the API server too
                    ok = False
                    why = str(exc).split(".")[0]
                    yield path, f"{r['message']} (CEL rule `{r['cel']}` failed: {why})", "cel"
                    continue
                if ok is not True:
                    yield path, f"{r['message']} (CEL rule `{r['cel']}`)", "cel"


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
    out = output_path(args.trainer)
    if args.check:
        if not out.is_file() or out.read_text() != text:
            print(f"crd_rules.py: {out.name} is stale: regenerate it from {folder}", file=sys.stderr)
            return 1
        return 0
    out.write_text(text)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
