"""kdt: check Kubernetes manifests for distributed PyTorch training, in any repository.

    kdt validate [PATHS]       schema validation (Kubernetes, Kubeflow Trainer, Training Operator, JobSet, Argo CD)
    kdt lint [PATHS]           training-aware rules (what the operators reject, what silently breaks a run)
    kdt preview [PATHS]        render, validate, lint and expand every target; the summary table
    kdt render [PATHS]         render kustomizations and charts with the pinned kubectl and helm
    kdt merge-preview [PATHS]  the pods or JobSet each operator will create, with what it injects
    kdt diff --base REF        what a change does to every rendered resource
    kdt migrate [PATHS]        move a PyTorchJob to a TrainJob (or a TrainJob between Trainer shapes), proved pod by pod
    kdt run TARGET             start a target's pods as local processes, as the operator would (faults: --kill, --lose)
    kdt cluster up|down|status a local control plane: the real API server, controllers and operators (Go 1.26+)
    kdt argocd [FILES]         expand Argo CD ApplicationSets offline, then render and validate each Application
    kdt install-tools          install the pinned helm beside this Python (kubectl comes with the package)

PATHS: kustomization folders, chart folders or their values files, YAML files or
folders of them, `-` for standard input; with none, every overlays/*/ and
charts/*/ci/*.yaml of the repository. `kdt COMMAND --help` for each.

Exit codes: 0 clean, 1 findings, 2 bad usage or unreadable/unrenderable input.
"""
from __future__ import annotations

import importlib
import sys

from .. import __version__, versions

COMMANDS = {
    "validate": "validate",
    "lint": "lint",
    "preview": "preview",
    "render": "render",
    "merge-preview": "merge_preview",
    "diff": "diff",
    "migrate": "migrate",
    "argocd": "argocd",
    "run": "run",
    "cluster": "cluster",
}


def version_line() -> str:
    return f"kdt {__version__} ({versions.describe()})"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0 if args else 2
    if args[0] in ("--version", "version"):
        print(version_line())
        return 0
    command, rest = args[0], args[1:]
    if command == "install-tools":
        from .. import tools
        from ..paths import venv_bin
        try:
            tools.install_helm(venv_bin())
        except tools.InstallError as exc:
            print(f"kdt install-tools: error: {exc}", file=sys.stderr)
            return 2
        return 0
    if command not in COMMANDS:
        print(f"kdt: error: unknown command {command!r}; one of: {', '.join([*COMMANDS, 'install-tools'])}",
              file=sys.stderr)
        return 2
    from . import invoke, set_prog
    set_prog(f"kdt {command}")
    module = importlib.import_module(f"{__package__}.{COMMANDS[command]}")
    return invoke(module.main, rest)


def entry() -> None:
    """The `kdt` console script."""
    sys.exit(main())


if __name__ == "__main__":
    entry()
