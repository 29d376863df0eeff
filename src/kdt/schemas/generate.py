"""Generate the committed JSON schemas of the Kubeflow and JobSet kinds.

    .venv/bin/python src/kdt/schemas/generate.py           # rewrite src/kdt/schemas/generated/*.json
    .venv/bin/python src/kdt/schemas/generate.py --check   # exit 1 when regenerating would change them

Sources (official API packages on PyPI, installed on first use with
`pip install --no-deps --target .venv/schema-sources/<pkg>-<ver>`, one folder
per release because only one version of a package fits in an environment):

- `kubeflow-trainer-api` 2.1.0 and 2.3.0: pydantic v2 models of Trainer's
  `trainer.kubeflow.org/v1alpha1` kinds and of the JobSet (`jobset.x-k8s.io/v1alpha2`)
  that each release embeds. `model_json_schema(by_alias=True)`, then:
  * IntOrString becomes `string|integer`, Quantity `string|number` (the models
    describe them as objects, which no manifest is);
  * every object with declared properties gets `additionalProperties: false`
    (strict: a misspelt field is an error), while maps (labels, nodeSelector,
    resources.limits, ...) stay open maps of their value type;
  * `Optional[X]` (`anyOf: [X, null]`) becomes X with `null` allowed, so that
    errors name the real type instead of "not valid under any of anyOf";
  * titles, descriptions and defaults are dropped (they do not validate).
- `kubeflow-training` 1.9.4: the openapi-generator classes of the Training
  Operator's `kubeflow.org/v1` PyTorchJob, read from their `openapi_types`,
  `attribute_map` and required-argument checks (parsed, not imported: the
  package imports the `kubernetes` client). Kubernetes types they refer to
  (V1PodTemplateSpec, V1ObjectMeta, ...) become `kubernetes:<definition>`
  references that the loader resolves against the Kubernetes schemas of the
  version being validated (kubernetes-validate's strict definitions).

Argo CD's Application/ApplicationSet schema is written by hand (argocd.json):
no package on PyPI ships it.
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from pathlib import Path

from .. import versions
from ..operators import jobset as JS
from ..operators import trainer_v2 as TV2
from ..operators import training_operator_v1 as TO1

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
OUT = HERE / "generated"
SOURCES = ROOT / ".venv" / "schema-sources"

TRAINER_API = "kubeflow-trainer-api"
TRAINER_RELEASES = versions.TRAINER
TRAINING = "kubeflow-training"
TRAINING_RELEASE = versions.TRAINING_OPERATOR.lstrip("v")

INT_OR_STRING = {"type": ["string", "integer", "null"]}
QUANTITY = {"type": ["string", "number", "null"]}
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


# --- Training Operator v1 (openapi-generator classes) --------------------------------------------

# Kubernetes client class -> Kubernetes definition (resolved per Kubernetes version by the loader).
_K8S_PACKAGES = {"V1ObjectMeta": "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                 "V1ListMeta": "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
                 "V1Time": "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
                 "Quantity": "io.k8s.apimachinery.pkg.api.resource.Quantity",
                 "V1LabelSelector": "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
                 "V1PodTemplateSpec": "io.k8s.api.core.v1.PodTemplateSpec"}


def _k8s_ref(cls: str) -> str:
    if cls in _K8S_PACKAGES:
        return _K8S_PACKAGES[cls]
    m = re.match(r"^K8sIoApi([A-Z][a-z0-9]+)(V\d+(?:(?:alpha|beta)\d+)?)(\w+)$", cls)
    if m:
        return f"io.k8s.api.{m.group(1).lower()}.{m.group(2).lower()}.{m.group(3)}"
    m = re.match(r"^(V\d+(?:(?:alpha|beta)\d+)?)(\w+)$", cls)
    if m:
        return f"io.k8s.api.core.{m.group(1).lower()}.{m.group(2)}"
    raise SystemExit(f"generate: no Kubernetes definition known for {cls}")


def _v1_type(t: str, prefix: str) -> dict:
    simple = {"str": {"type": ["string", "null"]}, "int": {"type": ["integer", "null"]},
              "float": {"type": ["number", "null"]}, "bool": {"type": ["boolean", "null"]},
              "datetime": {"type": ["string", "null"]}, "date": {"type": ["string", "null"]},
              "object": {}}
    if t in simple:
        return dict(simple[t])
    m = re.match(r"^list\[(.+)\]$", t)
    if m:
        return {"type": ["array", "null"], "items": _v1_type(m.group(1), prefix)}
    m = re.match(r"^dict\(str, (.+)\)$", t)
    if m:
        return {"type": ["object", "null"], "additionalProperties": _v1_type(m.group(1), prefix)}
    if t.startswith(prefix):
        return {"$ref": f"#/$defs/{t}"}
    if t == "Quantity":
        return dict(QUANTITY)
    return {"$ref": f"kubernetes:{_k8s_ref(t)}"}


def _read_v1_class(path: Path) -> tuple[str, dict, dict, list]:
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            types, amap = {}, {}
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
                    if stmt.targets[0].id == "openapi_types":
                        types = ast.literal_eval(stmt.value)
                    elif stmt.targets[0].id == "attribute_map":
                        amap = ast.literal_eval(stmt.value)
            required = re.findall(r"client_side_validation and (\w+) is None:", path.read_text())
            return node.name, types, amap, required
    raise SystemExit(f"generate: no class in {path}")


# The Training Operator SDK lists runPolicy as required, but the PyTorchJob CRD
# of the Training Operator (v1.8.1 manifests/base/crds/kubeflow.org_pytorchjobs.yaml,
# `spec.required: [pytorchReplicaSpecs]`) does not: the API server accepts a job
# without it, and so do we.
_V1_NOT_REQUIRED = {("KubeflowOrgV1PyTorchJobSpec", "runPolicy")}
# Status is written by the operator, never by a manifest: its required fields are not enforced.
_V1_SKIP_REQUIRED = {"KubeflowOrgV1JobStatus", "KubeflowOrgV1JobCondition", "KubeflowOrgV1ReplicaStatus"}


def emit_training(folder: str) -> dict:
    models = Path(folder) / "kubeflow" / "training" / "models"
    prefix = "KubeflowOrgV1"
    classes = {}
    for path in sorted(models.glob("kubeflow_org_v1_*.py")):
        name, types, amap, required = _read_v1_class(path)
        classes[name] = (types, amap, required)

    defs: dict = {}
    todo = ["KubeflowOrgV1PyTorchJob"]
    while todo:
        name = todo.pop()
        if name in defs:
            continue
        types, amap, required = classes[name]
        props = {}
        for attr, t in types.items():
            props[amap[attr]] = _v1_type(t, prefix)
            todo.extend(re.findall(rf"\b({prefix}\w+)", t))
        req = sorted(amap[a] for a in required if (name, amap[a]) not in _V1_NOT_REQUIRED)
        d = {"type": ["object", "null"], "properties": dict(sorted(props.items())), "additionalProperties": False}
        if req and name not in _V1_SKIP_REQUIRED:
            d["required"] = req
        defs[name] = d
    root = defs["KubeflowOrgV1PyTorchJob"]
    root["properties"]["apiVersion"] = {"type": "string", "enum": [TO1.API_VERSION]}
    root["properties"]["kind"] = {"type": "string", "enum": [TO1.KIND]}
    root["required"] = sorted(set(root.get("required", [])) | {"apiVersion", "kind"})
    root["type"] = "object"
    return {"source": f"{TRAINING}=={TRAINING_RELEASE}",
            "kinds": {TO1.API_VERSION: {TO1.KIND: "KubeflowOrgV1PyTorchJob"}},
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
    payload = _emit("training", source_dir(TRAINING, TRAINING_RELEASE))
    files[f"training-operator-{TRAINING_RELEASE}.json"] = dumps(payload)
    return files


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="generate.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="exit 1 (and name the files) when regenerating would change them")
    p.add_argument("--emit", nargs=2, metavar=("MODE", "FOLDER"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.emit:
        mode, folder = args.emit
        payload = emit_trainer(folder) if mode == "trainer" else emit_training(folder)
        sys.stdout.write(json.dumps(payload))
        return 0
    files = generate()
    if args.check:
        stale = [n for n, text in files.items()
                 if not (OUT / n).is_file() or (OUT / n).read_text() != text]
        extra = sorted(p.name for p in OUT.glob("*.json") if p.name not in files)
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
