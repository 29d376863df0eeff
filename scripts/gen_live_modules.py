#!/usr/bin/env python3
"""Write the Go module that pins each operator manager the live control plane builds, and each node binary set
(containerd, the CNI plugins, CoreDNS, crictl) its real nodes run (src/kdt/live/go/<name>-<version>/).

Each module requires the operator's release and, at the same versions, everything that release's own go.mod
requires, so Go's minimal version selection gives exactly the build list upstream's release builds with;
go.sum is filled by Go from the module proxy and checked against the checksum database. The module is
committed, so every later build reads only pinned, checksummed sources (`go install PKG@VERSION` would too,
but the proxy refuses some modules' version lists, which it reads for deprecations: sigs.k8s.io/jobset).

    python scripts/gen_live_modules.py            # every operator of kdt.live.releases
    python scripts/gen_live_modules.py --check    # exit 1 when a module is missing or names other versions
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kdt.live import build, releases as R  # noqa: E402


def requires(gomod: str) -> tuple[str, list[str]]:
    go = re.search(r"^go (\S+)", gomod, re.M).group(1)
    reqs = []
    for block in re.findall(r"^require \((.*?)^\)", gomod, re.M | re.S):
        reqs += [ln.split("//")[0].strip() for ln in block.splitlines() if ln.split("//")[0].strip()]
    reqs += [m.split("//")[0].strip() for m in re.findall(r"^require ([^(].*)$", gomod, re.M)]
    return go, reqs


# Where the module proxy refuses a module version a release's build list names, the nearest patch release it
# serves instead, with why (written into the module as a replace directive and a comment).
SUBSTITUTES = {
    "scheduler-plugins": {"k8s.io/csi-translation-lib": (
        "v0.34.5", "the module proxy refuses v0.34.7 and v0.34.6 (403 Forbidden: not available); the scheduler's "
                   "nodevolumelimits plugin imports it; v0.34.5 is the newest patch release it serves")},
}


def replaces(gomod: str) -> list[str]:
    """The release's replace directives that name a module version (a replace by a local path is its own
    checkout's and cannot be followed): scheduler-plugins pins k8s.io's staging modules so."""
    out = []
    for block in re.findall(r"^replace \((.*?)^\)", gomod, re.M | re.S):
        out += [ln.split("//")[0].strip() for ln in block.splitlines() if ln.split("//")[0].strip()]
    out += [m.split("//")[0].strip() for m in re.findall(r"^replace ([^(].*)$", gomod, re.M)]
    return [r for r in out if not r.split("=>")[1].strip().startswith((".", "/"))]


def generate(c: R.Component, out: Path) -> None:
    src = build.module_dir(c.module, c.version)
    text = (src / "go.mod").read_text()
    go, reqs = requires(text)
    reps = replaces(text)
    subs = SUBSTITUTES.get(c.name, {})
    reps = [r for r in reps if r.split("=>")[0].strip() not in subs]
    reps += [f"{mod} => {mod} {ver} // {why}" for mod, (ver, why) in subs.items()]
    lines = [f"// The {c.name} manager at {c.version}: its release's build list (scripts/gen_live_modules.py).",
             f"module kdt.live/{c.name}-{c.version}", "", f"go {go}", "", "require (",
             f"\t{c.module} {c.version}", *(f"\t{r}" for r in reqs), ")", ""]
    if reps:
        lines += ["replace (", *(f"\t{r}" for r in reps), ")", ""]
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "go.mod").write_text("\n".join(lines))
        env = build.go_env()
        env["GOFLAGS"] = "-mod=mod"
        # `go list -deps` loads every package the build compiles, so Go fills go.sum as a build would,
        # without compiling (the build itself is kdt.live.build's)
        proc = subprocess.run(["go", "list", "-deps", "-e=false", c.package], cwd=t, env=env, capture_output=True,
                              text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{c.name} {c.version}: {proc.stderr.strip()[-800:]}")
        out.mkdir(parents=True, exist_ok=True)
        # the module as Go left it (go.sum filled; go.mod as written unless Go had to add a requirement)
        shutil.copy(t / "go.mod", out / "go.mod")
        shutil.copy(t / "go.sum", out / "go.sum")


def generate_node(s: R.NodeSet, out: Path) -> None:
    """A node set's module: its release's build list; go.sum filled by `go list -deps` of its main packages
    (no compile: the build that uses the module compiles them once)."""
    src = build.module_dir(s.module, s.version)
    go, reqs = requires((src / "go.mod").read_text())
    lines = [f"// {s.name} at {s.version}: its release's build list (scripts/gen_live_modules.py).",
             f"module kdt.live/{s.name}-{s.version}", "", f"go {go}", "", "require (",
             f"\t{s.module} {s.version}", *(f"\t{r}" for r in reqs), ")", ""]
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "go.mod").write_text("\n".join(lines))
        for main in out.rglob("*.go") if out.is_dir() else []:      # a main of the project's own (CoreDNS)
            (t / main.relative_to(out)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(main, t / main.relative_to(out))
        env = build.go_env()
        env["GOFLAGS"] = "-mod=mod"
        args = ["go", "list", "-deps", *(["-tags", s.tags] if s.tags else []), *s.packages]
        proc = subprocess.run(args, cwd=t, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{s.name} {s.version}: {proc.stderr.strip()[-800:]}")
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(t / "go.mod", out / "go.mod")
        shutil.copy(t / "go.sum", out / "go.sum")


def _stale(out: Path, module: str, version: str) -> bool:
    return not (out / "go.mod").is_file() or f"\t{module} {version}\n" not in (out / "go.mod").read_text()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--check", action="store_true")
    p.add_argument("--only", nargs="*", default=[], metavar="NAME", help="only these modules (e.g. containerd)")
    args = p.parse_args()
    bad = 0
    # (name, version, module, its go.mod folder, the generator): the node sets, then the operators' managers
    modules = ([(s.name, s.version, s.module, R.node_module(s), lambda o, s=s: generate_node(s, o)) for s in R.NODE_SETS]
               + [(c.name, c.version, c.module, R.operator_module(c), lambda o, c=c: generate(c, o))
                  for c in R.operator_components()])
    for name, version, module, out, make in modules:
        if args.check:
            if _stale(out, module, version):
                print(f"{out}: missing or stale; run python scripts/gen_live_modules.py", file=sys.stderr)
                bad = 1
            continue
        if args.only and name not in args.only:
            continue
        print(f"{name} {version} -> {out.relative_to(ROOT)}", file=sys.stderr)
        make(out)
    return bad


if __name__ == "__main__":
    sys.exit(main())
