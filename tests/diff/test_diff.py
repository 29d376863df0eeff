"""diff: resources and fields changed between two git refs of a temporary repository made here."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from kdt import diff as D  # noqa: E402

JOB = """apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: demo
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: img:1
              resources:
                requests: {{cpu: "4", memory: 8Gi}}
                limits: {{nvidia.com/gpu: 1}}
    Worker:
      replicas: {workers}
      template:
        spec:
          containers:
            - name: sidecar
              image: side:1
            - name: pytorch
              image: {image}
              resources:
                requests: {{cpu: "4", memory: 8Gi}}
                limits: {{nvidia.com/gpu: 1}}
"""
SVC = """apiVersion: v1
kind: Service
metadata:
  name: demo
spec:
  clusterIP: None
"""
CM = """apiVersion: v1
kind: ConfigMap
metadata:
  name: demo-config
data:
  a: "1"
"""


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def write_overlay(repo: Path, workers: int, image: str, extra: str, resources: list[str]):
    o = repo / "overlays" / "demo"
    o.mkdir(parents=True, exist_ok=True)
    (o / "job.yaml").write_text(JOB.format(workers=workers, image=image))
    (o / "extra.yaml").write_text(extra)
    (o / "kustomization.yaml").write_text("resources:\n" + "".join(f"  - {r}\n" for r in resources))


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("repo")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    write_overlay(repo, 1, "img:1", SVC, ["job.yaml", "extra.yaml"])
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a")
    a = git(repo, "rev-parse", "HEAD")
    write_overlay(repo, 3, "img:2", CM, ["job.yaml", "extra.yaml"])
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "b")
    b = git(repo, "rev-parse", "HEAD")
    return repo, a, b


def test_field_changes_match_named_items():
    old = {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "env": [{"name": "K", "value": "1"}]}]}}
    new = {"spec": {"containers": [{"name": "new", "image": "n"}, {"name": "a", "image": "y"},
                                   {"name": "b", "env": [{"name": "K", "value": "2"}]}]}}
    got = [(c.op, c.path, c.old, c.new) for c in D.field_changes(old, new)]
    assert got == [("added", "spec.containers[0]", None, {"name": "new", "image": "n"}),
                   ("changed", "spec.containers[1].image", "x", "y"),
                   ("changed", "spec.containers[2].env[0].value", "1", "2")]
    assert D.field_changes({"a": 1}, {"a": 1.0}) == []
    assert [c.op for c in D.field_changes({"a": "1"}, {"a": 1})] == ["changed"]


def test_diff_between_two_commits(repo):
    repo, a, b = repo
    status_before = git(repo, "status", "--porcelain")
    [td] = D.diff_refs(repo, a, b)
    assert td.target == "overlays/demo" and td.status == "changed"
    ops = {r.label: r.op for r in td.resources}
    assert ops == {"Service/demo": "removed", "PyTorchJob/demo": "changed", "ConfigMap/demo-config": "added"}
    job = next(r for r in td.resources if r.key[1] == "PyTorchJob")
    assert [(c.path, c.old, c.new) for c in job.changes] == [
        ("spec.pytorchReplicaSpecs.Worker.replicas", 1, 3),
        ("spec.pytorchReplicaSpecs.Worker.template.spec.containers[1].image", "img:1", "img:2")]
    assert (td.before.nodes, td.after.nodes) == (2, 4)
    assert (td.before.gpus, td.after.gpus) == (2, 4)
    assert (td.before.cpu, td.after.cpu) == (8.0, 16.0)
    assert git(repo, "status", "--porcelain") == status_before


def test_diff_against_working_tree_leaves_it_alone(repo, tmp_path):
    repo, a, b = repo
    job = repo / "overlays" / "demo" / "job.yaml"
    original = job.read_text()
    try:
        job.write_text(original.replace("image: img:2", "image: img:3"))
        [td] = D.diff_refs(repo, b, None)
        [r] = td.resources
        assert [(c.old, c.new) for c in r.changes] == [("img:2", "img:3")]
        assert "img:3" in job.read_text()
        assert git(repo, "status", "--porcelain") == "M overlays/demo/job.yaml"
        [td] = D.diff_refs(repo, b, b)
        assert td.status == "unchanged" and td.resources == []
    finally:
        job.write_text(original)


def cli(*args):
    return subprocess.run([sys.executable, "-m", "kdt", "diff", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_cli_formats_and_exit_codes(repo, tmp_path):
    repo, a, b = repo
    r = cli("--repo", str(repo), "--base", a, "--head", b, "--exit-code")
    assert r.returncode == 1, r.stderr
    assert "overlays/demo: 3 resource(s) changed; nodes 2 -> 4, GPUs 2 -> 4" in r.stdout
    assert "spec.pytorchReplicaSpecs.Worker.replicas: 1 -> 3" in r.stdout
    assert "\033[" not in r.stdout                      # not a TTY: no colour
    r = cli("--repo", str(repo), "--base", a, "--head", b)
    assert r.returncode == 0
    out = tmp_path / "d.md"
    r = cli("--repo", str(repo), "--base", a, "--head", b, "-o", "markdown", "--output", str(out))
    text = out.read_text()
    assert "<details><summary><b>overlays/demo</b>" in text and "</details>" in text
    assert "| `spec.pytorchReplicaSpecs.Worker.replicas` | `1` | `3` |" in text
    r = cli("--repo", str(repo), "--base", a, "--head", b, "-o", "json")
    data = json.loads(r.stdout)
    assert data["changed"] == 1 and data["targets"][0]["after"]["nodes"] == 4
    r = cli("--repo", str(repo), "--base", b, "--head", b, "--exit-code")
    assert r.returncode == 0 and "0 of 1 target(s) changed" in r.stdout
    r = cli("--repo", str(repo), "--base", "no-such-ref")
    assert r.returncode == 2 and "no-such-ref" in r.stderr and "Traceback" not in r.stderr


def test_cli_render_failure_is_exit_2(repo):
    repo, a, b = repo
    k = repo / "overlays" / "demo" / "kustomization.yaml"
    original = k.read_text()
    try:
        k.write_text(original + "  - missing.yaml\n")
        r = cli("--repo", str(repo), "--base", b)
        assert r.returncode == 2
        assert "could not render" in r.stdout
    finally:
        k.write_text(original)


def test_long_values_are_cut_around_the_change():
    from kdt.report.diff_formats import _value
    old = "--rdzv-conf=" + ",".join(f"key{i}=v" for i in range(30)) + ",last=3"
    new = old[:-1] + "2"
    assert old[:120] == new[:120]
    shown_old, shown_new = _value(old, new), _value(new, old)
    assert len(shown_old) <= 120 and shown_old != shown_new
    assert shown_old.endswith('last=3"') and shown_new.endswith('last=2"')
    assert _value("short") == '"short"'


def test_a_path_that_is_no_target_is_a_usage_error():
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-m", "kdt", "diff", "--base", "HEAD", "overlays/no-such-overlay"],
                          cwd=root, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "overlays/no-such-overlay: not a target" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
