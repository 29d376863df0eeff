"""Build the live control plane's binaries into the user's cache, keyed by what they are built from.

`ensure(components)` returns the path of each binary, building what is missing with the `go` command:
the control plane from the project's module `go/controlplane`, each operator manager from the project's
module that pins its release (`go/<name>-<version>`), always `go build -mod=readonly`. A binary is kept under
`<cache>/live/bin/<key>/` where the key names the versions, the Go toolchain and a hash of the project's
module that pins it (go.mod and go.sum), so a change of any of them builds anew and nothing is ever committed. A cold build
prints its progress (packages compiled) every few seconds; a warm one prints nothing.

kube-apiserver and etcd may come from `KUBEBUILDER_ASSETS` instead (a folder holding both, as envtest reads
it: sigs.k8s.io/controller-runtime pkg/internal/testing/addr and tools/setup-envtest): then no Go is needed
for them.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..errors import UsageError
from . import releases as R

GO_MIN = (1, 26)    # the go directive of every module built here (k8s.io/kubernetes v1.36.3, trainer v2.3.0)


def cache_root() -> Path:
    base = os.environ.get("KDT_LIVE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "kdt" / "live"


def go_env() -> dict:
    """The environment of every go command: the local toolchain only (no toolchain download), the
    module proxy and checksum database as the user has them, no GOFLAGS of the caller's."""
    env = dict(os.environ)
    env["GOTOOLCHAIN"] = "local"
    env["GOFLAGS"] = "-mod=readonly"
    env.pop("GOBIN", None)
    return env


def go_version() -> str:
    exe = shutil.which("go")
    if exe is None:
        raise UsageError("the live control plane needs Go 1.26 or later to build its binaries (no `go` on PATH), "
                         "or KUBEBUILDER_ASSETS naming a folder with kube-apiserver and etcd")
    try:
        stamp = os.stat(exe).st_mtime_ns
    except OSError:
        stamp = 0
    return _go_version(exe, stamp)


@functools.lru_cache(maxsize=8)
def _go_version(exe: str, stamp: int) -> str:
    """`go env GOVERSION` of one go executable (asked once per process: a start asks for every binary)."""
    out = subprocess.run([exe, "env", "GOVERSION"], capture_output=True, text=True, env=go_env()).stdout.strip()
    nums = tuple(int(x) for x in out.removeprefix("go").split(".")[:2] if x.isdigit())
    if nums < GO_MIN:
        raise UsageError(f"the live control plane needs Go {'.'.join(map(str, GO_MIN))} or later to build; "
                         f"`go` on PATH is {out or 'unknown'}")
    return out


def _module_hash() -> str:
    h = hashlib.sha256()
    for name in ("go.mod", "go.sum", "tools.go"):
        h.update((R.CONTROL_PLANE_MODULE / name).read_bytes())
    return h.hexdigest()[:12]


def bin_dir(group: str) -> Path:
    gov = go_version()
    if group == "controlplane":
        key = f"controlplane-{R.KUBERNETES}-etcd-{R.ETCD}-{_module_hash()}-{gov}"
    else:
        key = f"{group}-{gov}"
    return cache_root() / "bin" / key


def _assets(name: str) -> Path | None:
    folder = os.environ.get("KUBEBUILDER_ASSETS")
    if folder and name in ("kube-apiserver", "etcd"):
        p = Path(folder) / name
        if not p.is_file():
            raise UsageError(f"KUBEBUILDER_ASSETS={folder}: no {name} there")
        return p
    return None


class _Progress:
    """Counts the packages `go build -v` names and says how far it got every `every` seconds."""

    def __init__(self, what: str, stream, every: float = 10.0):
        self.what, self.stream, self.every = what, stream, every
        self.count, self.lines = 0, []
        self.start = time.monotonic()

    def feed(self, pipe) -> None:
        last = time.monotonic()
        for line in pipe:
            self.lines.append(line.rstrip("\n"))
            if not line.startswith(("go: ", "#")):
                self.count += 1
            now = time.monotonic()
            if now - last >= self.every:
                last = now
                print(f"live: building {self.what}: {self.count} packages compiled, {now - self.start:.0f} s",
                      file=self.stream, flush=True)


def _go(args: list[str], cwd: Path | None, what: str, env: dict, stream) -> None:
    print(f"live: building {what} (a cold build takes minutes; later runs reuse {cache_root() / 'bin'})",
          file=stream, flush=True)
    proc = subprocess.Popen(["go", *args], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    progress = _Progress(what, stream)
    reader = threading.Thread(target=progress.feed, args=(proc.stderr,), daemon=True)
    reader.start()
    rc = proc.wait()
    reader.join()
    if rc != 0:
        errors = [ln for ln in progress.lines if not ln.startswith("go: downloading")] or progress.lines
        raise UsageError(f"building {what} failed (go exit {rc}): " + " | ".join(errors[-3:]))
    print(f"live: built {what} in {time.monotonic() - progress.start:.0f} s", file=stream, flush=True)


def _ldflags_version() -> str:
    v = R.KUBERNETES
    major, minor = v.lstrip("v").split(".")[:2]
    return ("-s -w -X k8s.io/component-base/version.gitVersion=" + v
            + f" -X k8s.io/component-base/version.gitMajor={major} -X k8s.io/component-base/version.gitMinor={minor}"
            + " -X k8s.io/component-base/version.gitTreeState=clean")


def _go_binary_name(package: str) -> str:
    """The file `go build -o DIR/` writes for a main package: its last path element, or the one before a
    major-version suffix (go.etcd.io/etcd/server/v3 is `server`), as cmd/go's DefaultExecName does."""
    parts = package.rstrip("/").split("/")
    last = parts[-1]
    if len(parts) > 1 and last.startswith("v") and last[1:].isdigit():
        return parts[-2]
    return last


def control_plane(stream=sys.stderr) -> dict[str, Path]:
    """kube-apiserver, kube-controller-manager, kube-scheduler and etcd: paths, built if missing."""
    out: dict[str, Path] = {}
    missing = []
    folder = None
    for c in R.CONTROL_PLANE:
        asset = _assets(c.name)
        if asset is not None:
            out[c.name] = asset
            continue
        folder = folder or bin_dir("controlplane")
        out[c.name] = folder / c.name
        if not out[c.name].is_file():
            missing.append(c)
    if missing:
        tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        names = ", ".join(c.name for c in missing)
        _go(["build", "-v", "-trimpath", "-ldflags", _ldflags_version(), "-o", str(tmp) + "/",
             *(c.package for c in missing)], R.CONTROL_PLANE_MODULE, f"{names} (Kubernetes {R.KUBERNETES})",
            go_env(), stream)
        folder.mkdir(parents=True, exist_ok=True)
        for c in missing:
            os.replace(tmp / _go_binary_name(c.package), folder / c.name)
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def operator(c: R.Component, stream=sys.stderr) -> Path:
    """One operator manager at its release: path, built from the project's module that pins it
    (kdt.live.releases.operator_module) if missing."""
    module = R.operator_module(c)
    if not (module / "go.mod").is_file():
        raise UsageError(f"no Go module pins {c.name} {c.version} ({module}); scripts/gen_live_modules.py writes it")
    h = hashlib.sha256((module / "go.mod").read_bytes() + (module / "go.sum").read_bytes()).hexdigest()[:12]
    folder = cache_root() / "bin" / f"{c.name}-{c.version}-{h}-{go_version()}"
    exe = folder / c.name
    if exe.is_file():
        return exe
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    _go(["build", "-v", "-trimpath", "-ldflags", "-s -w", "-o", str(tmp / c.name), c.package], module,
        f"{c.name} {c.version}", go_env(), stream)
    folder.mkdir(parents=True, exist_ok=True)
    os.replace(tmp / c.name, exe)
    shutil.rmtree(tmp, ignore_errors=True)
    return exe


def _link(folder: Path, tmp: Path, names) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        os.replace(tmp / name, folder / name)
    shutil.rmtree(tmp, ignore_errors=True)


def node_kubernetes(stream=sys.stderr) -> dict[str, Path]:
    """kubelet and kube-proxy from the control plane's module (the same Kubernetes pin): paths, built if
    missing, with the control plane's version stamp; the compiled packages they share with it come from Go's
    build cache."""
    folder = cache_root() / "bin" / f"node-kubernetes-{R.KUBERNETES}-{_module_hash()}-{go_version()}"
    out = {c.name: folder / c.name for c in R.NODE_KUBERNETES}
    missing = [c for c in R.NODE_KUBERNETES if not out[c.name].is_file()]
    if missing:
        tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        _go(["build", "-v", "-trimpath", "-p", _parallel(), "-ldflags", _ldflags_version(), "-o", str(tmp) + "/",
             *(c.package for c in missing)], R.CONTROL_PLANE_MODULE,
            f"{', '.join(c.name for c in missing)} (Kubernetes {R.KUBERNETES})", go_env(), stream)
        _link(folder, tmp, [c.name for c in missing])
    return out


def _parallel() -> str:
    """go build -p: KDT_GO_PARALLEL, else Go's default (the CPUs)."""
    return os.environ.get("KDT_GO_PARALLEL") or str(os.cpu_count() or 1)


def node_set(s: R.NodeSet, stream=sys.stderr) -> dict[str, Path]:
    """The binaries of one node set (containerd and its shim and ctr, the CNI plugins, CoreDNS, crictl):
    paths, built from the project's module that pins them (kdt.live.releases.node_module) if missing."""
    module = R.node_module(s)
    if not (module / "go.mod").is_file():
        raise UsageError(f"no Go module pins {s.name} {s.version} ({module}); scripts/gen_live_modules.py writes it")
    own = b"".join(p.read_bytes() for p in sorted(module.rglob("*.go")))      # a main of the project's own
    h = hashlib.sha256((module / "go.mod").read_bytes() + (module / "go.sum").read_bytes() + own
                       + s.tags.encode() + s.ldflags.encode()).hexdigest()[:12]
    folder = cache_root() / "bin" / f"{s.name}-{s.version}-{h}-{go_version()}"
    out = {b: folder / b for b in s.binaries}
    if all(p.is_file() for p in out.values()):
        return out
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    env = go_env()
    env["CGO_ENABLED"] = "1" if s.cgo else "0"
    ldflags = ("-s -w " + s.ldflags.format(version=s.version)).strip()
    _go(["build", "-v", "-trimpath", "-p", _parallel(), "-ldflags", ldflags,
         *(["-tags", s.tags] if s.tags else []),
         "-o", str(tmp) + "/", *s.packages], module, f"{s.name} {s.version}", env, stream)
    _link(folder, tmp, s.binaries)
    return out


def node(stream=sys.stderr) -> dict[str, Path]:
    """Every binary a real node runs (kdt cluster up --real-nodes): name -> path, built if missing."""
    out = dict(node_kubernetes(stream))
    for s in R.NODE_SETS:
        out.update(node_set(s, stream))
    return out


def module_dir(module: str, version: str) -> Path:
    """The source of `module@version` in the Go module cache (downloaded if missing): the operators' CRDs
    and webhook configurations are read from there, at the pinned tag."""
    import json
    cached = _mod_cache() / (_escape(module) + "@" + version)
    if (cached / "go.mod").is_file():     # extracted whole or not at all (the go command renames it into place)
        return cached
    proc = subprocess.run(["go", "mod", "download", "-json", f"{module}@{version}"], capture_output=True, text=True,
                          env=go_env())
    try:
        info = json.loads(proc.stdout)
    except ValueError:
        info = {}
    if proc.returncode != 0 or "Dir" not in info:
        raise UsageError(f"go mod download {module}@{version} failed: {info.get('Error') or proc.stderr.strip()[-300:]}")
    return Path(info["Dir"])


def _escape(module: str) -> str:
    """A module path as the module cache spells it: each capital letter `!` and its lower case
    (golang.org/x/mod module.EscapePath)."""
    return "".join("!" + ch.lower() if ch.isupper() else ch for ch in module)


def _mod_cache() -> Path:
    """GOMODCACHE as the go command reads it (its environment, else GOPATH's first entry /pkg/mod), without a
    go process: every start reads the operators' manifests from there."""
    env = os.environ.get("GOMODCACHE")
    if env:
        return Path(env)
    gopath = (os.environ.get("GOPATH") or "").split(os.pathsep)[0] or str(Path.home() / "go")
    return Path(gopath) / "pkg" / "mod"
