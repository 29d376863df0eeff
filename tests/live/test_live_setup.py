"""The live control plane's setup, without starting one: releases read from their one place, bad input
as one line, no Go as one line (exit 2) while every other command works."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kdt import versions
from kdt.errors import UsageError
from kdt.live import build
from kdt.live import releases as R

KDT = [sys.executable, "-m", "kdt"]
ROOT = Path(__file__).resolve().parents[2]


def test_control_plane_versions_are_the_go_modules_own():
    gomod = (R.CONTROL_PLANE_MODULE / "go.mod").read_text()
    assert f"k8s.io/kubernetes {R.KUBERNETES}" in gomod
    assert f"go.etcd.io/etcd/server/v3 {R.ETCD}" in gomod
    minor = R.KUBERNETES.split(".")[1]
    # every staging module is pinned to the matching v0.x, as k8s.io/kubernetes needs as a dependency
    replaced = [ln.split("=>")[1].split() for ln in gomod.splitlines() if "=>" in ln]
    assert len(replaced) > 25
    assert all(v == f"v0.{minor}.{R.KUBERNETES.split('.')[2]}" for _, v in replaced), replaced


def test_each_trainer_release_runs_the_jobset_it_ships():
    for release in versions.TRAINER:
        trainer, jobset = R.trainer(release)
        assert trainer.version == "v" + versions.TRAINER[release]
        assert jobset.version == versions.JOBSET[release]


def test_a_release_missing_from_a_table_is_an_error_not_a_fallback(monkeypatch):
    with pytest.raises(UsageError, match="no Trainer release '2.4'"):
        R.trainer("2.4")
    monkeypatch.setitem(versions.TRAINER, "2.4", "2.4.0")
    with pytest.raises(UsageError, match="JobSet it ships is not in"):
        R.trainer("2.4")
    with pytest.raises(UsageError, match="no Training Operator release"):
        R.training_operator("0.9")


def test_go_binary_names_follow_cmd_go():
    assert build._go_binary_name("go.etcd.io/etcd/server/v3") == "server"
    assert build._go_binary_name("k8s.io/kubernetes/cmd/kube-apiserver") == "kube-apiserver"
    assert build._go_binary_name("sigs.k8s.io/jobset") == "jobset"


def _env_without_go(tmp_path: Path) -> dict:
    # PATH with this Python and openssl but no go
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    for exe in ("openssl",):
        found = subprocess.run(["which", exe], capture_output=True, text=True).stdout.strip()
        if found and not (bindir / exe).exists():
            (bindir / exe).symlink_to(found)
    env = {k: v for k, v in os.environ.items() if k != "KUBEBUILDER_ASSETS"}
    env["PATH"] = f"{Path(sys.executable).parent}:{bindir}"
    env["KDT_LIVE_DIR"] = str(tmp_path / "live")
    return env


def test_no_go_is_one_line_and_exit_2(tmp_path):
    proc = subprocess.run([*KDT, "cluster", "up", "--name", "nogo"], capture_output=True, text=True,
                          env=_env_without_go(tmp_path), timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs Go 1.26 or later" in lines[0] and "KUBEBUILDER_ASSETS" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    # every other command works as before without Go
    ok = subprocess.run([*KDT, "validate", "-"], input="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
                        capture_output=True, text=True, env=_env_without_go(tmp_path), timeout=120)
    assert ok.returncode == 0, ok.stderr


def test_run_live_without_go_is_one_line_and_the_offline_path_still_runs(tmp_path):
    env = _env_without_go(tmp_path)
    args = [*KDT, "run", "overlays/ddp", "--nproc-per-node", "1", "--max-steps", "2"]
    proc = subprocess.run([*args, "--live", "--workdir", str(tmp_path / "a")], capture_output=True, text=True, env=env,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs Go 1.26 or later" in lines[0], proc.stderr
    assert not list((tmp_path / "a").glob("pods/*")) and not (tmp_path / "a" / "control-plane" / "kubeconfig").exists()
    # the offline path needs no Go (its pods' shell from this machine's /bin, where no go is here)
    assert not (Path("/bin") / "go").exists()
    offline = subprocess.run([*args, "--quiet", "--dry-run", "--workdir", str(tmp_path / "b")], capture_output=True,
                             text=True, env={**env, "PATH": env["PATH"] + ":/bin"}, timeout=120, cwd=ROOT)
    assert offline.returncode == 0 and "mnist-ddp-master-0" in offline.stdout, offline.stderr


def test_an_old_go_is_named(tmp_path):
    env = _env_without_go(tmp_path)
    fake = tmp_path / "bin" / "go"
    fake.write_text("#!/bin/sh\necho go1.22.5\n")
    fake.chmod(0o755)
    proc = subprocess.run([*KDT, "cluster", "up", "--name", "oldgo"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()] and "`go` on PATH is go1.22.5" in proc.stderr


def test_bad_release_is_usage(tmp_path):
    proc = subprocess.run([*KDT, "cluster", "up", "--trainer", "9.9"], capture_output=True, text=True,
                          env=_env_without_go(tmp_path), timeout=60)
    assert proc.returncode == 2 and "invalid choice: '9.9'" in proc.stderr


def test_status_and_down_of_nothing(tmp_path):
    env = _env_without_go(tmp_path)
    st = subprocess.run([*KDT, "cluster", "status", "--name", "none"], capture_output=True, text=True, env=env, timeout=60)
    assert st.returncode == 0 and "not running" in st.stdout
    down = subprocess.run([*KDT, "cluster", "down", "--name", "none"], capture_output=True, text=True, env=env, timeout=60)
    assert down.returncode == 0 and "not running" in down.stderr


def test_kubebuilder_assets_without_the_binaries_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(tmp_path))
    with pytest.raises(UsageError, match="no kube-apiserver there"):
        build._assets("kube-apiserver")
