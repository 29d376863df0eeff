#!/usr/bin/env python3
"""Generate docs/migration.md from the table of equivalences, kdt.operators.migration (`--check`: exit 1 when stale)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from kdt import versions  # noqa: E402
from kdt.operators import migration as M  # noqa: E402
from kdt.generated import write_or_check  # noqa: E402
from kdt.paths import ROOT  # noqa: E402

OUT = ROOT / "docs" / "migration.md"

TOPICS = {
    "job": "The job",
    "pod": "The pod",
    "env": "The environment",
    "rendezvous": "The rendezvous",
    "policy": "The run policy",
    "shape": "Trainer 2.1 and 2.2+: the TrainJob's two shapes",
    "chart": "This repository's chart",
}
HOW = {M.SAME: "same", M.MAPPED: "mapped", M.REPLACED: "replaced", M.NONE: "**none**: a finding"}

INTRO = f"""\
# Migrating to Kubeflow Trainer v2: `kdt migrate`

Generated from the table of equivalences in `src/kdt/operators/migration.py` by
`scripts/gen_migration_doc.py`; do not edit by hand (a test keeps it current).

The Training Operator v1 is in maintenance; Kubeflow's way forward is Trainer v2 (a TrainJob on a
ClusterTrainingRuntime), whose TrainJob changed shape again between 2.1 and 2.2 (`podTemplateOverrides`
and `numProcPerNode: auto` gave way to `runtimePatches`). `kdt migrate` does the move and proves it:

```sh
kdt migrate overlays/ddp --output /tmp/migrated               # a PyTorchJob overlay -> a TrainJob overlay (2.2+)
kdt migrate overlays/fsdp --to 2.3                            # a TrainJob from 2.1's shape to 2.2+'s (--to 2.1: back)
kdt migrate charts/trainer/ci/ddp.yaml --to 2.1 -o markdown   # the chart's values: mode pytorchjob -> trainjob
make migrate ARGS="--check"                                   # every target; exit 1 on an unexplained difference
```

YAML files are read as one set (a TrainJob's runtime may sit in another file); `--runtime PATH` (files,
folders, overlays; repeatable) names runtimes a migrated job may run on, such as upstream's
`manifests/base/runtimes`.

**What moves.** A PyTorchJob (Master/Worker, or worker-only with an `elasticPolicy`) becomes a TrainJob of
the same name, labels and annotations on the runtime it needs: the Master's pod template is the one every
node gets; the `pytorch` container's image, command, args, env and resources go to `spec.trainer`; the pod
fields a TrainJob can patch go to `podTemplateOverrides` (2.1) or `runtimePatches` (2.2+); everything else
of the pod (and the run policy Trainer reads from a runtime) goes into a runtime generated for the job,
unless a runtime given with `--runtime` (or among the inputs) holds exactly that. torchrun's rendezvous
flags that name the Training Operator's env are removed, so torchrun takes Trainer's (rows
[torchrun-rendezvous](#torchrun-rendezvous), [group-restarts](#group-restarts)). A torchft job
(components/torchft: each pod a replica group) stays one: env read from the pod's replica-index label reads
the trainer Job's completion index, and each pod restarts alone, as the PyTorchJob's did (rows
[pod-index](#pod-index), [replica-group-restarts](#replica-group-restarts)); the chart's `faultTolerance` values
carry over to its trainjob mode, and the Lighthouse goes along as it is. A TrainJob or a runtime
changes shape between 2.1 and 2.2+ both ways. What has no equivalent is a located finding that says what
changes for the job: never dropped silently.

**What is written.** `--output DIR` (whole or not at all; the input is never modified): a YAML file with the
migrated documents in place, comments and key order kept (ruamel.yaml round trip; a comment goes with the
key it stands above), the generated runtime before the job; for an overlay, an overlay at the same path
below DIR whose kustomization takes the original overlay as its resource and patches it (JSON6902: `move`
carries each value from the PyTorchJob to its new place, so the base stays the one place it is written;
`test` guards every index), the generated runtime as a resource; for a chart values file, the values file
with `mode: trainjob`. Each carries a `# kdt:trainer-version=X.Y` marker, so `kdt validate`, `lint` and
`preview` check it against its release. Without `--output` nothing is written and the report says what
would be.

**The proof.** For each job, the merge preview (`kdt merge-preview`) before and after, compared pod by
pod: node i of the PyTorchJob (rank i, the Master node 0) with completion index i of the TrainJob's trainer
Job. Each pod is read as the program in it sees it: containers, image, the argument list (`command` +
`args`), resources, volumes and mounts, env after the operators' injection (the last entry of a name wins),
and torchrun's view with each operator's env names mapped to each other: node count, processes per node,
world size, node rank, the rendezvous (backend, the node that hosts it, the port), whether the pod hosts
the store, in-place restarts. Label selectors are compared by the pods they select, in the job and in the
objects that select its pods (a NetworkPolicy, a Service: their selectors move to JobSet's labels too; one
on other labels, such as the torchft Lighthouse's NetworkPolicy, stays as written and must select the same
pods after). The
proof builds every pod up to 4096 per replica type or Job (`kdt.migration.PROOF_PODS`); past that, the first
four and the last two of each, as the merge preview does, and compares those built on both sides. Then the run policy:
backoff limit, deadline, TTL, suspend, pods deleted at the end, gang scheduling, group restarts, the Kueue
queue, managedBy, the job's labels. Every difference is **explained** by a row below (one the comparison
applies, one the migration did, or a finding's) or **unexplained**; `--check` exits 1 on any unexplained
one. The migrated output is also validated and linted for its release, as `kdt preview` does.

**Reports.** `-o text` (default), `-o json` (everything, the written files included), `-o markdown` (a
table per target and one collapsible block each, for a pull-request comment); `--report FILE`.
Exit codes: 0 migrated, 1 an error (a job that cannot migrate, an output that does not render, an error of
validate or lint on the output) or with `--check` an unexplained difference, 2 an input that cannot be read
or rendered. The release written for: `--to` (2.1, or 2.2 and later, checked against
{versions.TRAINER_RELEASES[-1]}; default {versions.TRAINER_DEFAULT}).

**Measured** (`.venv/bin/python bench/migrate.py`, `make bench`; last run on this repository, the shared
corpus and the fetched gnosia93/training-on-eks):

| input | runs | jobs migrated | pod pairs compared | explained | unexplained | findings | output errors / warnings |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| this repository's PyTorchJob overlays and chart modes (8), to 2.1 and 2.2+ | 16 | 16 | 280 | 2490 | 0 | 42 | 0 / 0 |
| this repository's TrainJob overlays and chart modes (12), to 2.1 and 2.2+ (10 change shape; the rest are in it, or in both) | 24 | 10 | 148 | 0 | 0 | 0 | 0 / 0 |
| the corpus's PyTorchJob examples (Training Operator v1.8.1, v1.9.4: 17 files), to 2.1 and 2.2+ | 34 | 34 | 76 | 536 | 0 | 70 | 0 / 103 |
| Trainer 2.3.0's example TrainJobs (5), to 2.1 (4 use no field of either shape) | 5 | 1 | 2 | 0 | 0 | 0 | 0 / 0 |
| gnosia93/training-on-eks (its base and 2 overlays; shell-script launchers), to 2.1 and 2.2+ | 6 | 6 | 16 | 82 | 0 | 18 | 0 / 18 |

Findings over all the inputs, by row: backoff-limit 46, process-env 22 (the corpus's MNIST examples, among
others, read MASTER_ADDR and WORLD_SIZE without torchrun), clean-pod-policy 22, ttl 16, elastic 12, nproc-cpu 8,
replica-templates 4. The corpus outputs' 103 warnings are the examples' own (no
securityContext: pod-security 48; image-tag 26, resource-requests 18, gpu-shm 7), and
runtime-no-failure-policy 4 where a job had no group restarts to carry. 22 of its 34 migrations run on
upstream's `torch-distributed` (given with `--runtime`: nothing beyond the TrainJob's own fields); the others
on a generated runtime.

## The table of equivalences

Sources: the Training Operator at v1.8.1 and v1.9.4 (github.com/kubeflow/training-operator, since renamed
kubeflow/trainer; paths in that repository), Trainer at v2.1.0 and v2.3.0 (kubeflow/trainer), JobSet as
Trainer ships it ({", ".join(f"{k}: {v}" for k, v in versions.JOBSET.items())}), torch 2.13, Kubernetes
batch/v1. How: **same** carried as it is; **mapped** carried to another field or shape with the same
effect; **replaced** the other operator does it its own way, with the same effect for the job; **none** no
equivalent: a finding says what changes.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render() -> str:
    lines = [INTRO.rstrip("\n")]
    for topic, title in TOPICS.items():
        rows = [r for r in M.ROWS if r.topic == topic]
        if not rows:
            continue
        before = "Trainer 2.1" if topic == "shape" else "Training Operator v1 (PyTorchJob)"
        after = "Trainer 2.2+" if topic == "shape" else "Trainer v2 (TrainJob, runtime, JobSet)"
        lines += ["", f"### {title}", "", f"| row | {before} | {after} | how | sources |", "| --- | --- | --- | --- | --- |"]
        for r in rows:
            lines.append(f"| <a id=\"{r.id}\"></a>`{r.id}` | {_cell(r.before)} | {_cell(r.becomes)} | {HOW[r.how]} | "
                         f"{_cell(r.before_source)}; {_cell(r.after_source)} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--check", action="store_true", help="exit 1 if docs/migration.md is not current")
    args = p.parse_args()
    return write_or_check(OUT, render(), args.check, "gen_migration_doc.py",
                          "kdt.operators.migration: run scripts/gen_migration_doc.py", f"{len(M.ROWS)} rows")


if __name__ == "__main__":
    sys.exit(main())
