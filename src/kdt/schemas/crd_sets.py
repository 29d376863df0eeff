"""Other operators' kinds the project ships schemas for, generated from their official CRDs and committed.

| set | kinds | generated from |
| --- | --- | --- |
| `training-operator-v1.8.1` | `kubeflow.org/v1` PyTorchJob, TFJob, MPIJob, PaddleJob, XGBoostJob, MXJob | kubeflow/training-operator (now kubeflow/trainer) v1.8.1 `manifests/base/crds` |
| `training-operator-v1.9.4` | the same, JAXJob instead of MXJob | the same at v1.9.4 |
| `kueue-v0.19.2` | every `kueue.x-k8s.io` kind (v1beta2 stored, v1beta1 deprecated) | kubernetes-sigs/kueue v0.19.2 `config/components/crd/bases` |
| `volcano-v1.15.1` | PodGroup, Queue (`scheduling.volcano.sh`), Job (`batch.volcano.sh`) | volcano-sh/volcano v1.15.1 `config/crd/volcano/bases` |
| `scheduler-plugins-v0.34.7` | PodGroup, ElasticQuota (`scheduling.x-k8s.io`) | kubernetes-sigs/scheduler-plugins v0.34.7 `config/crd/bases` |

(The scheduler CRDs are in ../shared/corpus/scheduling; the Training Operator's at those tags of
kubeflow/trainer.) A file holds the CRDs themselves, read by the same engine as a CRD a user names or a
repository carries (kdt.schemas.crds: structure, defaults, CEL rules and formats), with what the engine
never reads left out (descriptions, examples, printer columns, status subresources) and each embedded
PodTemplateSpec replaced by a reference to Kubernetes' own (`x-kdt-kubernetes`): a job's pod templates are
checked against the Kubernetes version being validated, as for every kind of this project, instead of
the copy of the Kubernetes types the CRD was generated with. Regenerate (a test fails when a committed
file differs from what this makes of the official CRDs):

    python -m kdt.schemas.crd_sets --set kueue-v0.19.2 --crds DIR [--check]
"""
from __future__ import annotations

import functools
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import versions
from ..documents import Document
from .pool import Pool
from ..generated import write_or_check
from .crds import KUBERNETES_REF, pools_of

HERE = Path(__file__).resolve().parent
GENERATED = HERE / "generated"
POD_TEMPLATE_SPEC = "io.k8s.api.core.v1.PodTemplateSpec"


@dataclass(frozen=True)
class CrdSet:
    name: str          # file name stem, e.g. kueue-v0.19.2
    origin: str        # how findings name the schema: "Kueue v0.19.2"
    source: str        # repository, tag and folder of the official CRDs
    pattern: str       # the CRD files of that folder


def _training_operator(tag: str) -> CrdSet:
    return CrdSet(f"training-operator-{tag}", f"Training Operator {tag}",
                  f"kubeflow/training-operator {tag} manifests/base/crds", "kubeflow.org_*.yaml")


SETS: dict[str, CrdSet] = {s.name: s for s in (
    *(_training_operator(tag) for tag in versions.TRAINING_OPERATOR_RELEASES.values()),
    CrdSet(f"kueue-{versions.KUEUE}", f"Kueue {versions.KUEUE}",
           f"kubernetes-sigs/kueue {versions.KUEUE} config/components/crd/bases", "kueue.x-k8s.io_*.yaml"),
    CrdSet(f"volcano-{versions.VOLCANO}", f"Volcano {versions.VOLCANO}",
           f"volcano-sh/volcano {versions.VOLCANO} config/crd/volcano/bases", "*.volcano.sh_*.yaml"),
    CrdSet(f"scheduler-plugins-{versions.SCHEDULER_PLUGINS}", f"scheduler-plugins {versions.SCHEDULER_PLUGINS}",
           f"kubernetes-sigs/scheduler-plugins {versions.SCHEDULER_PLUGINS} config/crd/bases",
           "scheduling.x-k8s.io_*.yaml"),
)}
SCHEDULERS = tuple(n for n in SETS if not n.startswith("training-operator-"))


def training_operator_set(release: str) -> str:
    """'1.8' -> 'training-operator-v1.8.1' (kdt.versions.TRAINING_OPERATOR_RELEASES)."""
    return f"training-operator-{versions.TRAINING_OPERATOR_RELEASES[release]}"


def output_path(name: str) -> Path:
    return GENERATED / f"crds-{name}.json"


# Generating ----------------------------------------------------------------------------------------

_NOT_READ = {"description", "example", "externalDocs"}


def _is_pod_template(node: dict) -> bool:
    props = node.get("properties")
    if not isinstance(props, dict) or not props or set(props) - {"metadata", "spec"}:
        return False
    spec = props.get("spec")
    return isinstance(spec, dict) and isinstance(spec.get("properties"), dict) and "containers" in spec["properties"]


def _has_rules(node: Any) -> bool:
    if isinstance(node, dict):
        return "x-kubernetes-validations" in node or any(_has_rules(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_rules(v) for v in node)
    return False


def slim(node: Any) -> Any:
    """A schema node without what the engine never reads, embedded PodTemplateSpecs made references."""
    if not isinstance(node, dict):
        return node
    if _is_pod_template(node):
        if _has_rules(node):      # never seen in these CRDs; would be lost by the reference
            raise ValueError("an embedded PodTemplateSpec carries CEL rules")
        return {KUBERNETES_REF: POD_TEMPLATE_SPEC}
    out: dict = {}
    for key, value in node.items():
        if key in _NOT_READ:
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {k: slim(v) for k, v in value.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = slim(value)
        elif key in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
            out[key] = [slim(v) for v in value]
        else:
            out[key] = value
    return out


def _slim_crd(crd: dict) -> dict:
    spec = crd["spec"]
    names = {k: v for k, v in spec["names"].items() if k in ("kind", "listKind", "plural", "singular")}
    vers = []
    for v in spec["versions"]:
        kept = {k: v[k] for k in ("name", "served", "storage", "deprecated") if k in v}
        kept["schema"] = {"openAPIV3Schema": slim(v["schema"]["openAPIV3Schema"])}
        vers.append(kept)
    return {"apiVersion": crd["apiVersion"], "kind": crd["kind"], "metadata": {"name": crd["metadata"]["name"]},
            "spec": {"group": spec["group"], "names": names, "scope": spec["scope"], "versions": vers}}


def generate(name: str, folder: Path) -> str:
    """The committed file of set `name`, made from the official CRDs in `folder`."""
    import yaml
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    s = SETS[name]
    files = sorted(folder.glob(s.pattern))
    if not files:
        raise FileNotFoundError(f"{folder}: no {s.pattern}")
    crds = []
    for f in files:
        crds.extend(_slim_crd(d) for d in yaml.load_all(f.read_text(), Loader=loader) if isinstance(d, dict))
    payload = {"set": name, "source": s.source + ": " + ", ".join(f.name for f in files), "crds": crds}
    return json.dumps(payload, indent=1) + "\n"


# Reading -------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def pools(name: str) -> tuple[Pool, ...]:
    """The schemas of one committed set, as kdt.schemas.crds reads any CRD, each named by the set's origin."""
    path = output_path(name)
    payload = json.loads(path.read_text())
    docs = [Document(crd, i, str(path)) for i, crd in enumerate(payload["crds"])]
    origin = SETS[name].origin
    return tuple(Pool(origin, p.defs, p.kinds, p.admit, p.rules) for p in pools_of(docs, strict=False))


def main(argv=None) -> int:
    import argparse
    p = argparse.ArgumentParser(prog="python -m kdt.schemas.crd_sets", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--set", required=True, choices=sorted(SETS), help="the CRD set to write")
    p.add_argument("--crds", required=True, help="folder of the official CRDs of that release")
    p.add_argument("--check", action="store_true", help="exit 1 when the committed file differs")
    args = p.parse_args(argv)
    try:
        text = generate(args.set, Path(args.crds))
    except (FileNotFoundError, ValueError, KeyError) as exc:
        print(f"crd_sets: error: {exc}", file=sys.stderr)
        return 2
    return write_or_check(output_path(args.set), text, args.check, "crd_sets", args.crds)


if __name__ == "__main__":
    sys.exit(main())
