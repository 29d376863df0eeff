"""The flags every sample shares, spelled the same everywhere."""
from __future__ import annotations

import argparse
import os


def env_number(name: str, kind, default):
    """A flag's default from the environment (a local run's knob), the flag's own default when unset."""
    value = os.environ.get(name, "")
    try:
        return kind(value) if value else default
    except ValueError:
        raise SystemExit(f"{name}={value!r} is not a {kind.__name__}") from None


def add_common_args(p: argparse.ArgumentParser, *, epochs: int, batch_size: int, lr: float,
                    checkpoint_every: int, batch_flags: tuple[str, ...] = ("--batch-size",),
                    seed: int = 1) -> None:
    g = p.add_argument_group("training")
    g.add_argument("--epochs", type=int, default=epochs, help="epochs to train")
    g.add_argument(*batch_flags, dest="batch_size", type=int, default=batch_size,
                   help="samples per rank and step")
    g.add_argument("--lr", type=float, default=lr, help="learning rate")
    g.add_argument("--max-steps", type=int, default=env_number("TRAINKIT_MAX_STEPS", int, 0),
                   help="stop after this many optimizer steps in total, counted across restarts (0: no limit; "
                        "default: $TRAINKIT_MAX_STEPS, which `kdt run --max-steps` sets)")
    g.add_argument("--seed", type=int, default=seed, help="seed of model init, data order and dropout")
    g.add_argument("--deterministic", action="store_true",
                   help="deterministic kernels only; with a fixed world size, runs are bit-identical, "
                        "interrupted or not")
    g.add_argument("--log-every", type=int, default=10, help="print a [TRAIN] line every N steps")
    g.add_argument("--step-sleep", type=float, default=env_number("TRAINKIT_STEP_SLEEP", float, 0.0),
                   help="sleep this many seconds after each step: slows a run down for recovery drills "
                        "(kill a pod mid-run) and the recovery benchmark")
    g.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="auto: cuda + NCCL when GPUs exist, else cpu + gloo")
    c = p.add_argument_group("checkpoints")
    c.add_argument("--checkpoint-dir", default=None,
                   help="folder for checkpoints, on a volume every node shares (manifests: /checkpoints/<job>); "
                        "unset: no checkpoints, no resume")
    c.add_argument("--checkpoint-every", type=int, default=checkpoint_every,
                   help="save every N steps, besides each epoch end, the last step and SIGTERM "
                        "(0: only those)")
    c.add_argument("--keep-last", type=int, default=3, help="complete checkpoints to keep")
    c.add_argument("--async-checkpoint", action=argparse.BooleanOptionalAction, default=True,
                   help="write checkpoints in the background; only serialising/staging blocks training")
    c.add_argument("--audit-samples", action="store_true",
                   help="count how often each sample is trained on (kept in checkpoints) and report at each "
                        "epoch end whether every sample was seen exactly once")
    add_ft_args(p)


# -- fault tolerance (torchft replica groups): the flags here, the machinery in trainkit/ft.py --------------
MODES = ("off", "torchft")
MODE_ENV = "TRAINKIT_FAULT_TOLERANCE"
GROUP_ID_ENV = "REPLICA_GROUP_ID"          # the pod's own index (manifests: from the pod's labels)
NUM_GROUPS_ENV = "NUM_REPLICA_GROUPS"      # how many groups the job has (replicas / numNodes)
MIN_GROUPS_ENV = "TRAINKIT_FT_MIN_GROUPS"  # fewest groups a step may commit with
LIGHTHOUSE_ENV = "TORCHFT_LIGHTHOUSE"      # torchft's own variable (manager.py reads it too)
ADDRESS_ENV = "POD_IP"                     # where the other groups reach this one (downward API status.podIP)
GROUP_DIR = "replica-group-{id}"
REPLICA_PREFIX = "replica_group_"          # torchft reads the group id from a replica id's trailing digits


def add_ft_args(p: argparse.ArgumentParser) -> None:
    """The fault-tolerance flags every sample shares (defaults from the environment the manifests set)."""
    g = p.add_argument_group("fault tolerance (torchft replica groups; docs/training.md)")
    g.add_argument("--fault-tolerance", choices=MODES, default=os.environ.get(MODE_ENV) or "off",
                   help="torchft: this torchrun is one replica group of the job; the groups average gradients "
                        "through torchft, a failed group drops out of the step while the others go on, and heals "
                        f"from a live peer when it returns (default: ${MODE_ENV}, else off)")
    g.add_argument("--replica-group-id", type=int, default=env_number(GROUP_ID_ENV, int, None),
                   help=f"this group's id, unique in the job, 0..N-1 (default: ${GROUP_ID_ENV})")
    g.add_argument("--num-replica-groups", type=int, default=env_number(NUM_GROUPS_ENV, int, None),
                   help=f"the job's number of replica groups (default: ${NUM_GROUPS_ENV})")
    g.add_argument("--min-replica-groups", type=int, default=env_number(MIN_GROUPS_ENV, int, 1),
                   help="fewest groups a step may commit with: below it the groups wait (torchft "
                        f"min_replica_size; default: ${MIN_GROUPS_ENV}, else 1)")
    g.add_argument("--lighthouse", default=os.environ.get(LIGHTHOUSE_ENV) or None,
                   help=f"the Lighthouse's address, http://HOST:PORT (default: ${LIGHTHOUSE_ENV})")
    g.add_argument("--ft-timeout", type=float, default=30.0,
                   help="seconds a cross-group collective, a commit vote or a healing transfer may take before "
                        "the step is given up (torchft Manager timeout)")
    g.add_argument("--ft-quorum-timeout", type=float, default=60.0,
                   help="seconds to wait for a quorum before the step is given up (torchft quorum_timeout)")
    g.add_argument("--ft-lighthouse-grace", type=float, default=1.0,
                   help="seconds the Lighthouse may refuse connections during a quorum before the group saves "
                        "its step and restarts (exit 75) to wait for it")
    g.add_argument("--ft-lighthouse-wait", type=float, default=600.0,
                   help="seconds a starting group waits for the Lighthouse to answer before it gives up")


def check_ft_args(args, parser: argparse.ArgumentParser | None = None) -> None:
    """One line for a fault-tolerance setting that cannot work, before any process group starts."""
    if getattr(args, "fault_tolerance", "off") != "torchft":
        return

    def fail(msg: str):
        if parser is not None:
            parser.error(msg)
        raise SystemExit(msg)
    if args.replica_group_id is None:
        fail(f"--fault-tolerance torchft needs --replica-group-id (or ${GROUP_ID_ENV}): the pod's own index")
    if args.num_replica_groups is None or args.num_replica_groups < 1:
        fail(f"--fault-tolerance torchft needs --num-replica-groups (or ${NUM_GROUPS_ENV}) of at least 1")
    if not 0 <= args.replica_group_id < args.num_replica_groups:
        fail(f"--replica-group-id {args.replica_group_id} is outside 0..{args.num_replica_groups - 1} "
             f"(--num-replica-groups {args.num_replica_groups})")
    if not 1 <= args.min_replica_groups <= args.num_replica_groups:
        fail(f"--min-replica-groups {args.min_replica_groups} must be 1..{args.num_replica_groups} "
             "(more than the job's groups and no step ever commits)")
    if not args.lighthouse:
        fail(f"--fault-tolerance torchft needs --lighthouse (or ${LIGHTHOUSE_ENV}): the Lighthouse's http://HOST:PORT")
    if getattr(args, "audit_samples", False):
        fail("--audit-samples counts one process group's samples; with --fault-tolerance torchft each replica "
             "group only sees its own share, so it is not available")
