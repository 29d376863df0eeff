"""The pinned kubectl as the judge of how a YAML file is read, both ways users apply it.

- `kubectl apply -f FILE`: `kubectl create --dry-run=client --validate=false -o yaml -f FILE` decodes
  FILE as apply does (k8s.io/cli-runtime pkg/resource/visitor.go FileVisitor/StreamVisitor:
  apimachinery's YAMLOrJSONDecoder, sigs.k8s.io/yaml over go.yaml.in/yaml/v2, then the typed
  decode of a built-in kind) and only then reaches for the API server's discovery, which this run
  points at a closed port: a document that got that far ("unable to recognize ... connection
  refused") was read; "unable to decode" refuses one document; "error parsing" ends the file.
  Many files go in one call (`-f` repeated; errors are reported per file and document, in order).
- `kubectl apply -k DIR`: `kubectl kustomize DIR` on a folder whose kustomization lists the file
  (kyaml over go.yaml.in/yaml/v3), whose output is then read as above: the file passes this way
  when kustomize builds it and its output decodes. kustomize reads a file whole: one verdict per file.

Nothing here reaches a cluster or the network (KUBECONFIG=/dev/null, an empty discovery cache, a
server on a closed port).
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = ROOT / ".venv" / "bin" / "kubectl"
SERVER = "http://127.0.0.1:1"        # a closed port: discovery fails at once, after decoding

OK = "ok"

_LINE = re.compile(r'^(?:unable to recognize "(?P<ok>[^"]+)": |unable to decode "(?P<bad>[^"]+)": |'
                   r'error parsing (?P<parse>.+?): )(?P<msg>.*)$')


def _env(cache: str) -> dict:
    return {**os.environ, "KUBECONFIG": os.devnull, "HOME": cache}


def apply_verdicts(files: list[Path], timeout: float = 120) -> dict[str, list[str]]:
    """{file name: verdict per non-empty document, in order}: "ok", "decode: MSG" or, last, "parse: MSG"."""
    out: dict[str, list[str]] = {f.name: [] for f in files}
    if not files:
        return out
    with tempfile.TemporaryDirectory() as cache:
        cmd = [str(KUBECTL), "create", "--dry-run=client", "--validate=false", "-o", "yaml",
               "--cache-dir", cache, "-s", SERVER]
        for f in files:
            cmd += ["-f", str(f)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env(cache),
                              cwd=files[0].parent)
    for line in proc.stderr.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        name = Path(m["ok"] or m["bad"] or m["parse"]).name
        if name not in out:
            continue
        if m["ok"]:
            out[name].append(OK)
        elif m["bad"]:
            out[name].append("decode: " + m["msg"])
        else:
            out[name].append("parse: " + m["msg"])
    return out


def _limit_memory() -> None:
    # An alias cycle makes kyaml's DeAnchor recurse until Go's 1 GB stack limit (about 30 s); with 1 GiB of
    # address space the build fails the same way in about a second. Nothing else here comes near it.
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def _kustomize(folder: Path) -> tuple[bool, str]:
    proc = subprocess.run([str(KUBECTL), "kustomize", str(folder)], capture_output=True, text=True,
                          timeout=60, env=_env(str(folder)), preexec_fn=_limit_memory)
    return proc.returncode == 0, (proc.stdout if proc.returncode == 0 else " ".join(proc.stderr.split()))


def _folder(work: Path, name: str, files: list[Path]) -> Path:
    d = work / name
    d.mkdir(parents=True, exist_ok=True)
    for f in files:
        (d / f.name).write_bytes(f.read_bytes())
    (d / "kustomization.yaml").write_text("resources:\n" + "".join(f"- {f.name}\n" for f in files))
    return d


def _decodes(text: str, work: Path, name: str) -> str:
    """OK, or the first thing `kubectl apply -k` would refuse in kustomize's output (decoded as above)."""
    out = work / f"{name}.rendered.yaml"
    out.write_text(text)
    bad = [v for v in apply_verdicts([out])[out.name] if v != OK]
    return OK if not bad else "apply -k: " + bad[0]


def kustomize_verdicts(files: list[Path], work: Path, likely_ok: set[str] = frozenset()) -> dict[str, str]:
    """{file name: "ok", "kustomize: MSG" or "apply -k: MSG"}: each file built by kustomize, its output decoded.

    The files named in `likely_ok` are built together first, in one kustomization (their objects have names
    of their own): when that builds and decodes, each of them does; otherwise each is built on its own,
    as the others always are. The verdicts are kubectl's either way; the guess only saves runs."""
    out: dict[str, str] = {}
    together = [f for f in files if f.name in likely_ok]
    alone = [f for f in files if f.name not in likely_ok]
    if together:
        ok, text = _kustomize(_folder(work, "together", together))
        if ok and _decodes(text, work, "together") == OK:
            out.update({f.name: OK for f in together})
        else:
            alone += together
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        built = list(pool.map(_kustomize, [_folder(work, f"k-{f.stem}", [f]) for f in alone]))
    rendered = []
    for f, (ok, text) in zip(alone, built):
        if not ok:
            out[f.name] = "kustomize: " + text
            continue
        r = work / f"{f.stem}.rendered.yaml"
        r.write_text(text)
        rendered.append((f.name, r))
    decoded = apply_verdicts([r for _, r in rendered])
    for name, r in rendered:
        bad = [v for v in decoded[r.name] if v != OK]
        out[name] = OK if not bad else "apply -k: " + bad[0]
    return out
