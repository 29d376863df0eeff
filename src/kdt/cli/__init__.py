"""Shared command-line plumbing: one-line errors, exit codes, atomic output files.

Each user-facing tool is `kdt <tool>` (kdt.cli.main dispatches to `kdt.cli.<tool>.main`).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path
from typing import Callable, Iterator

from .. import __version__, versions
from ..errors import UsageError
from ..report import FORMATS


_PROG: str | None = None   # "kdt validate" when run through the kdt command


def set_prog(name: str) -> None:
    """Name the tool as the user ran it (`kdt validate`), in usage lines and one-line errors."""
    global _PROG
    _PROG = name


class Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one line on bad usage (argparse's own habit) and knows --version."""

    def __init__(self, *args, **kwargs):
        if _PROG:
            kwargs["prog"] = _PROG
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        self.add_argument("--version", action="version",
                          version=f"%(prog)s {__version__} ({versions.describe()})")


def add_cluster_args(parser: argparse.ArgumentParser) -> None:
    """What the cluster runs that manifests cannot say (kdt.cluster_file): the repository's .kdt-cluster.yaml, or this."""
    parser.add_argument("--pytorch-init-container-template", metavar="FILE",
                        help="the Training Operator's init container template, the file its "
                             "--pytorch-init-container-template-file names (default: .kdt-cluster.yaml's "
                             "trainingOperator.pytorchInitContainerTemplateFile, else the operator's built-in one)")


def add_live_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--live", action="store_true",
                        help="also hold the documents against the real API server and operators on a local control "
                             "plane (kdt cluster; needs Go 1.26+, or kube-apiserver and etcd in KUBEBUILDER_ASSETS: "
                             "the first run builds for many minutes, later ones start in about 20 s): findings "
                             "live-admission and live-preview")


def trainer_version_arg(value: str) -> str:
    """The one check of --trainer-version: a release of kdt.versions.TRAINER ('2.3', 'v2.3.0' -> '2.3'),
    anything else one line and exit 2 (kdt.targets.trainer_release, the check of the markers too)."""
    from ..targets import trainer_release
    return trainer_release(value, "--trainer-version")


def kubernetes_version_arg(value: str) -> str:
    """The one check of --kubernetes-version: a release whose schemas are bundled ('v1.35.2' -> '1.35'),
    anything else one line and exit 2 (kdt.schemas.kubernetes_version)."""
    from ..schemas import kubernetes_version
    return kubernetes_version(value)


def add_trainer_version_arg(parser: argparse.ArgumentParser, default: str) -> None:
    """--trainer-version X.Y for every command that takes it; `default` says what decides without it."""
    parser.add_argument("--trainer-version", metavar="X.Y", type=trainer_version_arg, default=None,
                        help=f"Trainer release ({', '.join(versions.TRAINER_RELEASES)}; v2.3.0 reads as 2.3) "
                             f"{default}")


def add_kubernetes_version_arg(parser: argparse.ArgumentParser, uses: str) -> None:
    """--kubernetes-version X.Y for every command that takes it; `uses` says what the command reads of it."""
    parser.add_argument("--kubernetes-version", metavar="X.Y", type=kubernetes_version_arg,
                        default=versions.KUBERNETES_DEFAULT,
                        help=f"Kubernetes release the cluster runs: {uses} (default: {versions.KUBERNETES_DEFAULT})")


def cluster_of(args):
    from ..cluster_file import load
    return load(None, args.pytorch_init_container_template)


def add_output_args(parser: argparse.ArgumentParser, formats=FORMATS) -> None:
    parser.add_argument("-o", "--format", choices=formats, default="text", help="output format (default: text)")
    parser.add_argument("--output", metavar="FILE",
                        help="write the report to FILE (written whole or not at all) instead of standard output")


def add_jobs_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                        help="render N targets at a time (default: one per core this process may use)")
    parser.add_argument("--changed-files", action="store_true",
                        help="the files named are a change set (pre-commit passes every changed YAML file): one "
                             "that holds no Kubernetes object (a CI config, a values file) is skipped and counted, "
                             "as in a folder walk, instead of being an error")


@contextlib.contextmanager
def output(path: str | None) -> Iterator[io.TextIOBase]:
    """Standard output, or FILE written atomically: a temporary file renamed into place on success."""
    if not path:
        yield sys.stdout
        return
    target = Path(path)
    if not target.parent.exists():
        raise UsageError(f"{path}: folder {target.parent} does not exist")
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def invoke(main: Callable[[list[str] | None], int], argv: list[str] | None = None) -> int:
    """Run a tool's main; usage errors and unreadable input end in one line and exit 2."""
    prog = _PROG or Path(sys.argv[0]).stem
    try:
        return main(argv)
    except UsageError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        with contextlib.suppress(Exception):
            sys.stdout = open(os.devnull, "w")
        return 0
