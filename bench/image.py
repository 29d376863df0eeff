#!/usr/bin/env python3
"""The daemonless image build (buildah), measured: cold and warm build time, size per variant, and the
layers a code edit reuses.

Builds in a containers-storage of its own (a temporary graph root, CONTAINERS_STORAGE_CONF), so the cold
build really starts from nothing but the wheel cache (~/.cache/kdt/image/wheels; --with-download starts
from an empty one too) and leaves the machine's own images and layer cache alone. For each variant:

  cold   debootstrap of the Debian base + the build, in the empty storage
  warm   the same build again, nothing changed (every layer from the cache)
  edit   the build of a copy of the checkout whose training/smoke.py has one more comment line: which
         steps came from the cache (the torch layer must) and which ran again
  size   the image's size in containers-storage (uncompressed) and its layers

    .venv/bin/python bench/image.py                      # gpu-debian and tensorflow-debian
    .venv/bin/python bench/image.py --targets gpu-debian
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STORAGE_CONF = """[storage]
driver = "overlay"
graphroot = "{root}/graph"
runroot = "{root}/run"
"""


def build(checkout: Path, target: str, env: dict[str, str]) -> tuple[float, str]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, str(checkout / "scripts" / "image.py"), "--engine", "buildah",
                           "--target", target, "--image", f"localhost/kdt-bench/trainer:{target}"],
                          cwd=checkout, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit(f"bench/image.py: the {target} build failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall, proc.stdout + proc.stderr


def steps(log: str) -> tuple[list[str], list[str]]:
    """(steps taken from the cache, steps that ran) of the final stage, from buildah's `STEP n/m:` lines."""
    cached, ran, current = [], [], None
    for line in log.splitlines():
        m = re.match(r"\[\d+/\d+\] STEP \d+/\d+: (.*)|STEP \d+/\d+: (.*)", line)
        if m:
            current = (m.group(1) or m.group(2))[:70]
            ran.append(current)
        elif "Using cache" in line and current and ran and ran[-1] == current:
            cached.append(ran.pop())
    return cached, ran


def size(ref: str, env: dict[str, str]) -> tuple[str, int]:
    """(size as buildah prints it, e.g. `5.87 GB`, uncompressed in containers-storage; layer count)."""
    info = json.loads(subprocess.run(["buildah", "inspect", "--type", "image", ref], env=env, capture_output=True,
                                     text=True, check=True).stdout)
    layers = info["OCIv1"]["rootfs"]["diff_ids"]
    out = subprocess.run(["buildah", "images", "--json", ref], env=env, capture_output=True, text=True, check=True)
    return str(json.loads(out.stdout)[0]["size"]), len(layers)


def edited_checkout(tmp: Path) -> Path:
    """A copy of the checkout's working tree (tracked and new files), training/smoke.py with one more line."""
    copy = tmp / "checkout"
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, files):
        src, dst = ROOT / name.decode(), copy / name.decode()
        if src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    git = ROOT / ".git"    # a worktree's .git is a file naming its git folder
    shutil.copytree(git, copy / ".git", symlinks=True) if git.is_dir() else shutil.copy2(git, copy / ".git")
    smoke = copy / "training" / "smoke.py"
    smoke.write_text(smoke.read_text() + "# an edit: the bench's code change\n")
    return copy


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--targets", default="gpu-debian,tensorflow-debian")
    p.add_argument("--with-download", action="store_true", help="start from an empty wheel cache as well")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kdt-bench-image-", dir=Path.home() / ".cache" / "kdt"))
    env = dict(os.environ, CONTAINERS_STORAGE_CONF=str(tmp / "storage.conf"))
    (tmp / "storage.conf").write_text(STORAGE_CONF.format(root=tmp))
    if args.with_download:
        env["KDT_IMAGE_CACHE"] = str(tmp / "cache")
    rows = []
    try:
        copy = edited_checkout(tmp)
        for target in args.targets.split(","):
            cold, _ = build(ROOT, target, env)
            warm, _ = build(ROOT, target, env)
            edit, log = build(copy, target, env)
            cached, ran = steps(log)
            print(f"{target}: cold {cold:.0f} s, warm {warm:.0f} s, after a training/*.py edit {edit:.0f} s", flush=True)
            total, layers = size(f"localhost/kdt-bench/trainer:{target}", env)
            rows.append((target, cold, warm, edit, total, layers, cached, ran))
            print(f"  {total} in {layers} layers", flush=True)
            print(f"  edit: from the cache: {len(cached)} steps ({'; '.join(s[:40] for s in cached)})")
            print(f"  edit: ran again: {len(ran)} steps ({'; '.join(s[:40] for s in ran)})", flush=True)
            if not any("from=wheels" in s for s in cached):    # the RUN that installs the lock's wheels
                print("  edit: THE TORCH LAYER WAS REBUILT", flush=True)
    finally:
        subprocess.run(["buildah", "rm", "--all"], env=env, capture_output=True)
        subprocess.run(["buildah", "rmi", "--all", "--force"], env=env, capture_output=True)
        subprocess.run(["umount", "-R", str(tmp / "graph" / "overlay")], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n{'variant':<18} {'cold s':>7} {'warm s':>7} {'edit s':>7} {'size':>9} {'layers':>6}")
    for target, cold, warm, edit, total, layers, _, _ in rows:
        print(f"{target:<18} {cold:>7.0f} {warm:>7.0f} {edit:>7.0f} {total:>9} {layers:>6}")
    print(f"({os.cpu_count()} cores; buildah {subprocess.run(['buildah', '--version'], capture_output=True, text=True).stdout.split()[2]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
