"""Generate the committed JSON schemas of the Trainer and JobSet kinds.

    .venv/bin/python src/kdt/schemas/generate.py           # rewrite src/kdt/schemas/generated/*.json
    .venv/bin/python src/kdt/schemas/generate.py --check   # exit 1 when regenerating would change them

Sources (official API packages on PyPI, installed on first use with
`pip install --no-deps --target .venv/schema-sources/<pkg>-<ver>`, one folder
per release because only one version of a package fits in an environment):

- `kubeflow-trainer-api` 2.1.0 and 2.3.0: pydantic v2 models of Trainer's
  `trainer.kubeflow.org/v1alpha1` kinds and of the JobSet (`jobset.x-k8s.io/v1alpha2`)
  that each release embeds. `model_json_schema(by_alias=True)`, then:
  * IntOrString becomes `string|integer`, Quantity a reference to Kubernetes'
    definition, which a custom resource reads as its CRD does, a whole number or a
    string (kdt.schemas.CUSTOM_QUANTITY; the models describe both as objects,
    which no manifest is);
  * every object with declared properties gets `additionalProperties: false`
    (strict: a misspelt field is an error), while maps (labels, nodeSelector,
    resources.limits, ...) stay open maps of their value type;
  * `Optional[X]` (`anyOf: [X, null]`) becomes X with `null` allowed, so that
    errors name the real type instead of "not valid under any of anyOf";
  * titles, descriptions and defaults are dropped (they do not validate).
The Training Operator's `kubeflow.org/v1` kinds come from its official CRDs of
each release (kdt.schemas.crd_sets), not from a package. Argo CD's Application/ApplicationSet schema is written by hand (argocd.json):
no package on PyPI ships it.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from .. import versions
from ..operators.jobset import facts as JS
from ..operators.trainer_v2 import facts as TV2

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
OUT = HERE / "generated"
SOURCES = ROOT / ".venv" / "schema-sources"

TRAINER_API = "kubeflow-trainer-api"
TRAINER_RELEASES = versions.TRAINER

INT_OR_STRING = {"type": ["string", "integer", "null"]}
# Kubernetes' own Quantity definition (kdt.schemas: a custom resource's is its CRD's int-or-string, CUSTOM_QUANTITY)
QUANTITY = {"$ref": "kubernetes:io.k8s.apimachinery.pkg.api.resource.Quantity"}
_SPECIAL = {
    "IoK8sApimachineryPkgUtilIntstrIntOrString": INT_OR_STRING,
    "IoK8sApimachineryPkgApiResourceQuantity": QUANTITY,
}
_DROP = {"title", "description", "default", "examples", "discriminator"}

# Root models of each trainer release: (apiVersion, kind, pydantic class).
TRAINER_KINDS = [
    (TV2.API_VERSION, TV2.TRAINJOB, "TrainerV1alpha1TrainJob"),
    (TV2.API_VERSION, TV2.TRAINING_RUNTIME, "TrainerV1alpha1TrainingRuntime"),
    (TV2.API_VERSION, TV2.CLUSTER_TRAINING_RUNTIME, "TrainerV1alpha1ClusterTrainingRuntime"),
    (JS.API_VERSION, JS.KIND, "JobsetV1alpha2JobSet"),
]


def source_dir(package: str, version: str) -> Path:
    """The package's release under .venv/schema-sources, installed from PyPI when missing."""
    target = SOURCES / f"{package}-{version}"
    marker = target / ".complete"
    if not marker.exists():
        target.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
             "--upgrade", "--target", str(target), f"{package}=={version}"],
            capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"generate: cannot install {package}=={version}: {proc.stderr.strip()[-500:]}")
        marker.write_text(f"{package}=={version}\n")
    return target


# --- schema cleaning ----------------------------------------------------------------------------

def _nullable(schema: dict) -> dict:
    if "$ref" in schema or "type" not in schema:
        return schema      # referenced definitions accept null themselves
    t = schema["type"]
    types = list(t) if isinstance(t, list) else [t]
    if "null" not in types:
        types.append("null")
    return {**schema, "type": types}


def clean(schema, defs_prefix: str = "#/$defs/"):
    """Strict, compact, readable-error form of a pydantic JSON schema node."""
    if isinstance(schema, list):
        return [clean(s, defs_prefix) for s in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if ref is not None:
        name = ref.rsplit("/", 1)[-1]
        if name in _SPECIAL:
            return dict(_SPECIAL[name])
        return {"$ref": ref}
    any_of = schema.get("anyOf")
    if any_of is not None:
        branches = [b for b in any_of if b != {"type": "null"}]
        if len(branches) == 1 and len(branches) < len(any_of):
            rest = {k: v for k, v in schema.items() if k != "anyOf" and k not in _DROP}
            return _nullable(clean({**branches[0], **rest}, defs_prefix))
    out = {}
    for key, value in schema.items():
        if key in _DROP:
            continue
        if key in ("properties", "$defs", "patternProperties"):
            out[key] = {k: clean(v, defs_prefix) for k, v in sorted(value.items())}
        elif key in ("additionalProperties", "items", "not"):
            out[key] = clean(value, defs_prefix)
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            out[key] = [clean(v, defs_prefix) for v in value]
        else:
            out[key] = value
    if "properties" in out:
        out["additionalProperties"] = False
        out["type"] = ["object", "null"]
    elif out.get("type") == "object":
        out["type"] = ["object", "null"]
    return out


def _defs(schema: dict) -> dict:
    defs = {}
    for name, d in schema.get("$defs", {}).items():
        if name in _SPECIAL:
            defs[name] = dict(_SPECIAL[name])
        else:
            defs[name] = clean(d)
    return defs


def _root(apiversion: str, kind: str, schema: dict) -> dict:
    """A root kind: apiVersion and kind fixed and required."""
    root = clean({k: v for k, v in schema.items() if k != "$defs"})
    props = dict(root.get("properties", {}))
    props["apiVersion"] = {"type": "string", "enum": [apiversion]}
    props["kind"] = {"type": "string", "enum": [kind]}
    root["properties"] = dict(sorted(props.items()))
    root["required"] = sorted(set(root.get("required", [])) | {"apiVersion", "kind"})
    root["type"] = "object"
    return root


# --- Trainer (pydantic) -------------------------------------------------------------------------

def emit_trainer(folder: str) -> dict:
    """Run inside a subprocess whose sys.path starts with one release of kubeflow-trainer-api."""
    sys.path.insert(0, folder)
    import kubeflow_trainer_api  # noqa: F401
    from kubeflow_trainer_api import models

    defs: dict = {}
    kinds: dict = {}
    for apiversion, kind, cls_name in TRAINER_KINDS:
        schema = getattr(models, cls_name).model_json_schema(by_alias=True, ref_template="#/$defs/{model}")
        for name, d in _defs(schema).items():
            defs.setdefault(name, d)
        defs[cls_name] = _root(apiversion, kind, schema)
        kinds.setdefault(apiversion, {})[kind] = cls_name
    return {"source": f"{TRAINER_API}=={kubeflow_trainer_api.__version__}", "kinds": kinds,
            "$defs": dict(sorted(defs.items()))}


# --- driver ---------------------------------------------------------------------------------------

def dumps(payload: dict) -> str:
    return json.dumps(payload, indent=1, sort_keys=True) + "\n"


def _emit(mode: str, folder: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", __spec__.name, "--emit", mode, str(folder)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"generate: {mode} from {folder} failed:\n{proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout)


def generate() -> dict[str, str]:
    """file name -> content of every generated schema file."""
    files = {}
    for short, release in TRAINER_RELEASES.items():
        payload = _emit("trainer", source_dir(TRAINER_API, release))
        files[f"trainer-{short}.json"] = dumps(payload)
    return files


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="generate.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="exit 1 (and name the files) when regenerating would change them")
    p.add_argument("--emit", nargs=2, metavar=("MODE", "FOLDER"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.emit:
        mode, folder = args.emit
        payload = emit_trainer(folder)
        sys.stdout.write(json.dumps(payload))
        return 0
    files = generate()
    if args.check:
        stale = [n for n, text in files.items()
                 if not (OUT / n).is_file() or (OUT / n).read_text() != text]
        # crds-*.json are kdt.schemas.crd_sets' (generated from CRDs, checked by its own test)
        extra = sorted(p.name for p in OUT.glob("*.json") if p.name not in files and not p.name.startswith("crds-"))
        for n in stale:
            print(f"generate: {OUT / n} is out of date; run make schemas", file=sys.stderr)
        for n in extra:
            print(f"generate: {OUT / n} is not generated any more; delete it", file=sys.stderr)
        return 1 if stale or extra else 0
    OUT.mkdir(exist_ok=True)
    for n, text in files.items():
        (OUT / n).write_text(text)
        print(f"wrote {OUT / n} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
