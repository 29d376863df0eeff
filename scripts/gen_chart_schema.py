#!/usr/bin/env python3
"""Fill the chart's pass-through values with Kubernetes' own schemas.

`affinity`, `podSecurityContext`, `securityContext`, `tolerations`, `topologySpreadConstraints` and
`env` go into the pods
unchanged, so `charts/trainer/values.schema.json` describes them with the
strict Kubernetes definitions (`additionalProperties: false`) of the version
the project targets (kdt.versions.KUBERNETES_DEFAULT), embedded under `$defs`.
A misspelt field (`podSecurityContext.runAsUsr`) then fails `helm install`
with Helm's own message instead of being dropped on the way to the cluster.
`trainJob.trainerVersion` takes the labels of the Trainer shapes' table
(kdt.operators.trainer_v2.shapes), so a new shape's label is written here too, and `trainJob.managedBy`
the values Trainer's CEL rule allows (kdt.operators.trainer_v2.facts.MANAGED_BY), or "".

    .venv/bin/python scripts/gen_chart_schema.py          # rewrite the file
    .venv/bin/python scripts/gen_chart_schema.py --check  # exit 1 if it is stale (make chart, tests)
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kdt import versions  # noqa: E402
from kdt.generated import write_or_check  # noqa: E402
from kdt.operators.trainer_v2 import facts as TV2  # noqa: E402
from kdt.operators.trainer_v2 import shapes as SH  # noqa: E402
from kdt.schemas import closure, kubernetes_pool  # noqa: E402

SCHEMA = ROOT / "charts" / "trainer" / "values.schema.json"
# value -> (Kubernetes definition, whether the value is a list of them)
PASS_THROUGH = {
    "affinity": ("io.k8s.api.core.v1.Affinity", False),
    "podSecurityContext": ("io.k8s.api.core.v1.PodSecurityContext", False),
    "securityContext": ("io.k8s.api.core.v1.SecurityContext", False),
    "tolerations": ("io.k8s.api.core.v1.Toleration", True),
    "topologySpreadConstraints": ("io.k8s.api.core.v1.TopologySpreadConstraint", True),
    "env": ("io.k8s.api.core.v1.EnvVar", True),
}


def generate(current: dict) -> dict:
    pool = kubernetes_pool(versions.KUBERNETES_DEFAULT)
    out = dict(current)
    props = dict(out["properties"])
    defs: dict = {}
    for value, (definition, is_list) in PASS_THROUGH.items():
        defs.update(closure(definition, [pool])["$defs"])
        ref = {"$ref": f"#/$defs/{definition}"}
        props[value] = {"type": "array", "items": ref} if is_list else ref
    train_job = dict(props["trainJob"])
    train_job["properties"] = {**train_job["properties"], "trainerVersion": {
        **train_job["properties"]["trainerVersion"], "enum": [s.label for s in SH.SHAPES]},
        "managedBy": {**train_job["properties"].get("managedBy", {}), "enum": ["", *TV2.MANAGED_BY]}}
    props["trainJob"] = train_job
    out["properties"] = props
    out["$comment"] = (f"$defs: Kubernetes {versions.KUBERNETES_DEFAULT} strict definitions, written by "
                       f"scripts/gen_chart_schema.py; edit the rest by hand.")
    out["$defs"] = dict(sorted(defs.items()))
    return out


def render(schema: dict) -> str:
    return json.dumps(schema, indent=2) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="exit 1 if the file differs from what would be written")
    args = p.parse_args(argv)
    text = SCHEMA.read_text()
    try:
        current = json.loads(text)
    except json.JSONDecodeError as e:
        print(f"{SCHEMA.relative_to(ROOT)}:{e.lineno}:{e.colno}: not JSON: {e.msg}", file=sys.stderr)
        return 2
    return write_or_check(SCHEMA, render(generate(current)), args.check, "gen_chart_schema.py",
                          f"the Kubernetes {versions.KUBERNETES_DEFAULT} definitions or the Trainer shapes' labels: "
                          "run scripts/gen_chart_schema.py",
                          f"{len(PASS_THROUGH)} values from Kubernetes {versions.KUBERNETES_DEFAULT}, "
                          f"trainJob.trainerVersion from {len(SH.SHAPES)} Trainer shapes")


if __name__ == "__main__":
    sys.exit(main())
