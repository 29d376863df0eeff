"""Chart tests: render with the project's pinned helm (kdt.paths.tool) and kubectl.

Helm's own metadata, set aside when a chart rendering is compared with an
overlay's: the labels and annotations Helm's conventions add to every resource
and that a kustomize overlay has no reason to carry.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
for _p in (ROOT / "src", ROOT / "scripts"):   # the package, and the generators (gen_chart_readme)
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from kdt import render as R  # noqa: E402
from kdt import targets as T  # noqa: E402
from kdt.documents import load_stream  # noqa: E402
from kdt.paths import tool  # noqa: E402

CHART = ROOT / "charts" / "trainer"
CI = CHART / "ci"

# Helm's own labels/annotations: helm.sh/chart (chart name-version), app.kubernetes.io/managed-by
# (Helm), app.kubernetes.io/version (the chart's appVersion). Removed from every `metadata`
# (the resource's and its pod templates') before comparing; everything else must be equal.
HELM_OWN_LABELS = frozenset({"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/version"})
HELM_OWN_ANNOTATIONS = frozenset({"meta.helm.sh/release-name", "meta.helm.sh/release-namespace", "helm.sh/hook",
                                  "helm.sh/hook-weight", "helm.sh/hook-delete-policy", "helm.sh/resource-policy"})


def overlays() -> list[str]:
    return sorted(d.name for d in (ROOT / "overlays").glob("*/") if T.is_kustomization(d))


def ci_files() -> list[str]:
    return sorted(p.stem for p in CI.glob("*.yaml"))


def helm(*args: str, check: bool = False) -> subprocess.CompletedProcess:
    proc = subprocess.run([tool("helm"), *args], capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{proc.stderr}")
    return proc


def template(*extra: str, values: Path | None = None) -> subprocess.CompletedProcess:
    """`helm template trainer charts/trainer` as kdt.render runs it, plus extra flags."""
    cmd = ["template", R.HELM_RELEASE, str(CHART), "--namespace", R.HELM_NAMESPACE]
    if values is not None:
        cmd += ["-f", str(values)]
    return helm(*cmd, *extra)


def template_docs(*extra: str, values: Path | None = None) -> list[dict]:
    proc = template(*extra, values=values)
    assert proc.returncode == 0, proc.stderr
    docs, findings = load_stream(proc.stdout, "helm template")
    assert not findings, findings
    return [d.data for d in docs if d.data]


def strip_helm_own(doc: dict) -> dict:
    """A copy of `doc` without Helm's own labels/annotations in any `metadata`."""
    def walk(node, parent_key=None):
        if isinstance(node, dict):
            out = {}
            for k, v in node.items():
                if parent_key == "metadata" and k in ("labels", "annotations") and isinstance(v, dict):
                    own = HELM_OWN_LABELS if k == "labels" else HELM_OWN_ANNOTATIONS
                    v = {lk: lv for lk, lv in v.items() if lk not in own}
                    if not v:
                        continue
                out[k] = walk(v, k)
            return out
        if isinstance(node, list):
            return [walk(x) for x in node]
        return node
    return walk(doc)


def keyed(docs) -> dict[tuple[str, str, str], dict]:
    return {(d.get("apiVersion"), d.get("kind"), (d.get("metadata") or {}).get("name")): d for d in docs}


def differences(a, b, path: str = "") -> list[str]:
    """Every JSON path where two parsed documents differ, with both values."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            p = f"{path}.{k}"
            if k not in a:
                out.append(f"{p}: only in the chart: {b[k]!r}")
            elif k not in b:
                out.append(f"{p}: only in the overlay: {a[k]!r}")
            else:
                out += differences(a[k], b[k], p)
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} item(s) in the overlay, {len(b)} in the chart"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    if a != b or type(a) is not type(b):
        return [f"{path}: overlay {a!r} != chart {b!r}"]
    return []


@pytest.fixture(scope="session")
def chart():
    return CHART
