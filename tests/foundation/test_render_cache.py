"""A warm run renders nothing that has not changed (kdt.render_cache), and never serves a stale render.

Each call is a fresh `python -m kdt render` process, as `make preview` runs; kubectl is this repository's,
behind a wrapper that counts its calls.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid

import pytest

from conftest import ROOT

JOB = """apiVersion: v1
kind: ConfigMap
metadata:
  name: NAME
data:
  k: v
"""


@pytest.fixture
def scratch(tmp_path):
    """A kustomization inside the repository (the cache serves only targets there), and a counting kubectl."""
    real = shutil.which("kubectl", path=str(ROOT / ".venv" / "bin"))
    assert real, "the pinned kubectl (make venv)"
    calls = tmp_path / "calls"
    wrapper = tmp_path / "kubectl"
    wrapper.write_text(f"#!/bin/sh\n[ \"$1\" = kustomize ] && echo x >> {calls}\nexec {real} \"$@\"\n")
    wrapper.chmod(0o755)
    folder = ROOT / ".pytest-np" / f"render-cache-{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True)
    (folder / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
    (folder / "cm.yaml").write_text(JOB.replace("NAME", "one"))
    env = {**os.environ, "KDT_KUBECTL": str(wrapper), "KDT_ROOT": str(ROOT), "KDT_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("KDT_RENDER_CACHE", None)

    def render(**extra):
        out = subprocess.run([sys.executable, "-m", "kdt", "render", str(folder)], capture_output=True, text=True,
                             env={**env, **extra}, timeout=120)
        assert out.returncode == 0, out.stderr
        return out.stdout, (len(calls.read_text().split()) if calls.exists() else 0)
    yield folder, render
    shutil.rmtree(folder, ignore_errors=True)


def test_a_second_run_renders_nothing_and_an_edit_renders_again(scratch):
    folder, render = scratch
    first, n1 = render()
    second, n2 = render()
    assert "name: one" in first and second == first
    assert (n1, n2) == (1, 1)                    # the second run took the kept render
    (folder / "cm.yaml").write_text(JOB.replace("NAME", "two"))
    third, n3 = render()
    assert "name: two" in third and n3 == 2      # an edited file: kubectl ran again
    (folder / "more.yaml").write_text(JOB.replace("NAME", "three"))
    _, n4 = render()
    assert n4 == 3                               # a file added anywhere in the tree is another fingerprint


def test_the_cache_can_be_turned_off(scratch):
    _, render = scratch
    render(KDT_RENDER_CACHE="0")
    _, n = render(KDT_RENDER_CACHE="0")
    assert n == 2


def test_in_one_process_an_edit_between_renders_is_seen(scratch, monkeypatch, tmp_path):
    """Outside a batch (render_all), each render takes the tree's fingerprint anew."""
    from kdt import render_cache
    folder, _ = scratch
    monkeypatch.setenv("KDT_CACHE_DIR", str(tmp_path / "cache2"))
    cmd = [str(ROOT / ".venv" / "bin" / "kubectl"), "kustomize", str(folder)]
    k1 = render_cache.key(cmd, [folder])
    render_cache.put(k1, "kept")
    assert render_cache.get(render_cache.key(cmd, [folder])) == "kept"
    (folder / "cm.yaml").write_text(JOB.replace("NAME", "edited"))
    assert render_cache.key(cmd, [folder]) != k1
    assert render_cache.key(cmd, [tmp_path]) is None          # a target outside the repository: never kept
