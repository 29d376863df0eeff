"""kdt migrate (#29): a PyTorchJob to a TrainJob on the runtime it needs, a TrainJob between Trainer 2.1 and
2.2+, a chart values file to mode trainjob; proved by the merge preview pod by pod (docs/migration.md).

Fixtures are written here (tests/migrate/fixtures/, and overlays made in tmp_path); the shipped overlays and
chart modes are migrated once per module to both shapes (the issue's "done when")."""
from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import re
from pathlib import Path

import pytest
import yaml

from kdt import kinds as K
from kdt import targets as T
from kdt.documents import load_stream
from kdt.findings import ERROR
from kdt.operators.framework.migrate import launcher as L
from kdt.operators.framework.migrate.compare import Claim, NodePod, Side, compare
from kdt.operators.framework.migrate.patch import Op, PatchError, apply, dump, normalize_comments, patch_text, reindent_comments, yaml_writer
from kdt.migration import migrate_targets
from kdt.operators import migration as M
from kdt.report import migrate_formats

ROOT = Path(__file__).resolve().parents[2]
FIX = Path(__file__).parent / "fixtures"


def _one(path, version, **kw):
    (r,) = migrate_targets(T.from_args([str(path)]), version, **kw)
    return r


def _docs(text):
    docs, findings = load_stream(text, "out.yaml")
    assert not findings
    return {(d.kind, d.name): d.data for d in docs}


def _rows(result, explained=True):
    return {d.row for j in result.jobs for d in j.differences if d.explained == explained}


# ------------------------------------------------------------------------------------------- the machinery
def test_patch_moves_a_value_with_its_comment_and_test_guards_indices():
    data = normalize_comments(yaml_writer().load("a:\n  # about b\n  b: [1, 2]   # eol\n  c: 3\n"))
    apply([Op("test", ("a", "b", 0), 1), Op("move", ("x",), src=("a", "b")), Op("remove", ("a", "c"))], data)
    text = dump(data)
    assert text.index("# about b") < text.index("x:") and "eol" in text and "c: 3" not in text
    with pytest.raises(PatchError):
        apply([Op("test", ("x", 0), 2)], data)
    with pytest.raises(PatchError):
        apply([Op("move", ("y",), src=("nope",))], data)


def test_comment_lines_follow_their_key_but_block_scalars_are_left_alone():
    text = "a:\n      # moved far\n  b: 1\nc: |\n    # not a comment\n  x\n"
    out = reindent_comments(text)
    assert "  # moved far\n  b: 1" in out and "    # not a comment" in out


def test_patch_text_is_a_kustomize_json6902_list():
    text = patch_text([Op("add", ("spec", "trainer", "env", "-"), {"name": "A", "value": "1"}, note="why"),
                       Op("move", ("spec", "x"), src=("spec", "a/b"))])
    ops = yaml.safe_load(text)
    assert ops == [{"op": "add", "path": "/spec/trainer/env/-", "value": {"name": "A", "value": "1"}},
                   {"op": "move", "from": "/spec/a~1b", "path": "/spec/x"}]
    assert text.startswith("# why\n- op: add")


def test_launcher_reads_torchrun_flags_as_torchrun_does():
    c = {"command": ["python3", "-m", "trainkit.torchrun", "--nnodes", "$(N)", "--rdzv_backend=c10d", "--standalone"],
         "args": ["train.py", "--rdzv-backend=static"]}
    launch = L.find(c)
    assert launch.launcher.text == "trainkit.torchrun" and launch.script.text == "train.py"
    assert L.setting(launch, "nnodes", {"N": "4"}) == "4"
    assert L.setting(launch, "rdzv_backend", {}) == "c10d"          # the script's own flag is not torchrun's
    assert L.setting(launch, "master_port", {"PET_MASTER_PORT": "23456"}) == "23456"
    assert launch.has_bool("--standalone")
    assert L.find({"command": ["sh", "-c", "torchrun train.py"]}) is None
    assert L.in_shell({"command": ["sh", "-c", "torchrun train.py"]}) is not None


def test_the_table_is_the_doc_and_a_plan_names_only_its_rows():
    spec = importlib.util.spec_from_file_location("gen_migration_doc", ROOT / "scripts" / "gen_migration_doc.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert (ROOT / "docs" / "migration.md").read_text() == gen.render(), "run scripts/gen_migration_doc.py"
    for r in M.ROWS:
        assert r.before_source and r.after_source and r.how in (M.SAME, M.MAPPED, M.REPLACED, M.NONE)
        assert f'<a id="{r.id}"></a>' in gen.render()
    from kdt.operators.framework.migrate.plan import Plan
    doc = load_stream((FIX / "elastic.yaml").read_text(), "x.yaml")[0][0]
    with pytest.raises(KeyError):                     # a plan cannot name a row the table does not have
        Plan(doc, "2.3").note("no-such-row", "x")
    with pytest.raises(KeyError):
        Plan(doc, "2.3").finding("no-such-row", "x")


# ------------------------------------------------------------------------------------------- the comparison
def _pod(name, env, image="img:1", node=0, main="c"):
    return NodePod(f"node {node}", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                    "spec": {"containers": [{"name": main, "image": image, "env": env}]}},
                   main, (name,), node)


def test_a_difference_no_row_explains_is_unexplained_and_a_claim_explains_only_its_value():
    before = Side([_pod("a-0", [{"name": "X", "value": "1"}])])
    after = Side([_pod("b-0", [{"name": "X", "value": "2"}], image="img:2")])
    diffs, paired = compare(before, after, [], "node")
    assert paired == 1
    unexplained = {d.path for d in diffs if not d.explained}
    assert ("spec", "containers", "<training container>", "image") in unexplained
    assert ("spec", "containers", "<training container>", "env", "X") in unexplained
    claim = Claim("reserved-env", ("spec", "containers", "<training container>", "env", "X"), after="3")
    diffs, _ = compare(before, after, [claim], "node")
    assert ("spec", "containers", "<training container>", "env", "X") in {d.path for d in diffs if not d.explained}
    claim = Claim("reserved-env", ("spec", "containers", "<training container>", "env", "X"), after="2")
    diffs, _ = compare(before, after, [claim], "node")
    assert {d.path for d in diffs if not d.explained} == {("spec", "containers", "<training container>", "image")}


def test_selectors_are_compared_by_the_pods_they_select():
    def side(key, value, labels):
        pods = []
        for i in range(2):
            p = _pod(f"p-{i}", [], node=i)
            p.obj["metadata"]["labels"] = {key: "job", **labels}
            p.obj["spec"]["topologySpreadConstraints"] = [
                {"topologyKey": "h", "maxSkew": 1, "labelSelector": {"matchExpressions": [{"key": key, "operator": value}]}}]
            pods.append(p)
        return Side(pods)
    diffs, _ = compare(side("training.kubeflow.org/job-name", "Exists", {}),
                       side("jobset.sigs.k8s.io/jobset-name", "Exists", {}), [], "node")
    assert not [d for d in diffs if not d.explained and "topologySpreadConstraints" in d.path]
    diffs, _ = compare(side("training.kubeflow.org/job-name", "Exists", {}),
                       side("jobset.sigs.k8s.io/jobset-name", "DoesNotExist", {}), [], "node")
    assert [d for d in diffs if not d.explained and "topologySpreadConstraints" in d.path]


# ------------------------------------------------------------------------------------------- PyTorchJob -> TrainJob
@pytest.fixture(scope="module")
def ddp():
    return {v: _one(FIX / "ddp.yaml", v) for v in ("2.1", "2.3")}


@pytest.mark.parametrize("version", ["2.1", "2.3"])
def test_master_worker_job_moves_whole_with_trainers_rendezvous(ddp, version):
    r = ddp[version]
    assert r.unexplained == 0 and not [f for f in r.checks if f.level == ERROR]
    (job,) = r.jobs
    assert (job.before, job.after, job.pods) == ("PyTorchJob/ddp-test", "TrainJob/ddp-test", 3)
    out = _docs(r.files["tests/migrate/fixtures/ddp.yaml"])
    tj = out[("TrainJob", "ddp-test")]["spec"]
    rt = out[("ClusterTrainingRuntime", "ddp-test")]["spec"]
    assert tj["trainer"]["numNodes"] == 3 and tj["trainer"]["command"] == ["torchrun", "/app/train.py"]
    assert tj["trainer"]["args"] == ["--epochs=1"] and tj["trainer"]["image"] == "example.com/train:1.0"
    assert [e["name"] for e in tj["trainer"]["env"]] == ["EXTRA", "PYTHONUNBUFFERED"]     # HOST_STORE: read by is_host only
    assert tj["trainer"]["resourcesPerNode"]["limits"]["nvidia.com/gpu"] == "2"
    assert "numProcPerNode" not in tj["trainer"] if version == "2.3" else tj["trainer"]["numProcPerNode"] == "auto"
    if version == "2.3":
        patch = tj["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
        pod = patch["template"]["spec"]["template"]["spec"]
        assert "podTemplateOverrides" not in tj
    else:
        (ov,) = tj["podTemplateOverrides"]
        assert ov["targetJobs"] == [{"name": "node"}]
        pod = ov["spec"]
    assert pod["nodeSelector"] == {"pool": "gpu"} and pod["containers"] == [{"name": "node", "volumeMounts": [
        {"name": "data", "mountPath": "/data"}]}]
    rpod = rt["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert rpod["automountServiceAccountToken"] is False and rpod["securityContext"]["runAsNonRoot"] is True
    assert rpod["topologySpreadConstraints"][0]["matchLabelKeys"] == ["jobset.sigs.k8s.io/jobset-name"]
    assert rt["template"]["spec"]["failurePolicy"] == {"maxRestarts": 2}                   # --max-restarts=2
    assert rt["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["backoffLimit"] == 4
    assert rt["podGroupPolicy"] == {"coscheduling": {"scheduleTimeoutSeconds": 120}}
    assert out[("TrainJob", "ddp-test")]["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "training"}
    assert {"torchrun-rendezvous", "group-restarts", "rdzv-port", "pod-identity", "init-container", "ttl"} <= _rows(r)
    assert [f.extra["row"] for f in r.findings] == ["ttl"]
    (ttl,) = r.findings
    assert ttl.path == "spec.runPolicy.ttlSecondsAfterFinished" and ttl.line == 14


def test_gang_scheduling_is_compared_as_the_jobs_gang(ddp):
    # without a gang scheduler the Training Operator ignores schedulingPolicy; the runtime's podGroupPolicy is Trainer's
    (gang,) = [d for d in ddp["2.3"].jobs[0].differences if d.path == ("job", "gang")]
    assert (gang.before, gang.after, gang.row) == (None, {"timeout": 120, "needs": "every pod"}, "gang")
    from kdt.cluster_file import Cluster
    r = _one(FIX / "ddp.yaml", "2.3", cluster=Cluster(gang_scheduler="volcano"))
    assert r.unexplained == 0                          # its schedulerName and annotations: the job's gang, the same
    assert not [d for d in r.jobs[0].differences if "gang" in d.path or "schedulerName" in d.path]


def test_the_files_comments_and_key_order_are_kept(ddp):
    text = ddp["2.3"].files["tests/migrate/fixtures/ddp.yaml"]
    assert text.index("kind: ClusterTrainingRuntime") < text.index("kind: TrainJob")      # the runtime first
    assert "  # one process per GPU" not in text                                          # nprocPerNode went
    assert re.search(r"\n      - name: EXTRA\n        value: kept +# carried to trainer.env\n", text)
    assert "# torchrun: c10d rendezvous" not in text      # its words were removed: the comment no longer holds
    job = text[text.index("kind: TrainJob"):]
    assert job.index("runtimeRef:") < job.index("trainer:") < job.index("runtimePatches:")


def test_elastic_job_finding_says_what_changes(tmp_path):
    r = _one(FIX / "elastic.yaml", "2.3")
    assert r.unexplained == 0
    (f,) = [f for f in r.findings if f.extra["row"] == "elastic"]
    assert "exactly 3 node(s)" in f.message and f.path == "spec.elasticPolicy" and f.line == 8
    nnodes = [d for d in r.jobs[0].differences if d.path == ("facts", "nnodes")]
    assert {(d.before, d.after, d.row) for d in nnodes} == {("1:3", "3", "elastic")}
    tj = _docs(r.files["tests/migrate/fixtures/elastic.yaml"])[("TrainJob", "elastic-test")]["spec"]
    assert tj["trainer"]["command"] == ["python", "-m", "torch.distributed.run", "/app/train.py"]


def test_what_has_no_equivalent_is_a_located_finding_and_explains_its_difference():
    r = _one(FIX / "plain.yaml", "2.1")
    assert r.unexplained == 0
    rows = {f.extra["row"]: f for f in r.findings}
    assert {"process-env", "replica-templates", "exit-code", "clean-pod-policy"} <= set(rows)
    assert rows["replica-templates"].path == "spec.pytorchReplicaSpecs.Worker.template.spec.nodeSelector.pool"
    worker = [d for d in r.jobs[0].differences if d.path == ("spec", "nodeSelector", "pool")]
    assert [(d.where, d.before, d.after, d.row) for d in worker] == [("node 1", "big", "small", "replica-templates")]
    env = {d.path[1] for d in r.jobs[0].differences if d.row == "process-env"}
    assert env == {"env MASTER_ADDR", "env MASTER_PORT", "env WORLD_SIZE", "env RANK"}


def test_a_job_of_2_30_nodes_is_proved_on_the_pods_the_preview_builds(tmp_path):
    f = tmp_path / "huge.yaml"
    f.write_text((FIX / "ddp.yaml").read_text().replace("replicas: 2\n", f"replicas: {2**30 - 1}\n"))
    r = _one(f, "2.3")
    (job,) = r.jobs
    assert job.partial and job.pods == 6 and r.unexplained == 0     # nodes 0-3 and the last two, on both sides
    assert {d.where for d in job.differences if d.path == ("pod",)} == {"node 0", "node 1", "node 2", "node 3",
                                                                        f"node {2**30 - 2}", f"node {2**30 - 1}"}
    out = io.StringIO()
    migrate_formats.write([r], "text", out, "2.2+")
    assert f"nodes 0-3, {2**30 - 2}-{2**30 - 1}: pod:" in out.getvalue()


def test_a_runtime_given_that_fits_is_used_instead_of_a_generated_one(tmp_path, ddp):
    generated = _docs(ddp["2.3"].files["tests/migrate/fixtures/ddp.yaml"])[("ClusterTrainingRuntime", "ddp-test")]
    generated["metadata"]["name"] = "shared-torch"
    generated["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0][
        "image"] = "any:1"                               # the trainer's image wins: no part of the fit
    (tmp_path / "rt.yaml").write_text(yaml.safe_dump(generated))
    from kdt.migration import load_runtimes
    r = _one(FIX / "ddp.yaml", "2.3", runtimes=load_runtimes([str(tmp_path / "rt.yaml")]))
    assert r.jobs[0].runtime == "ClusterTrainingRuntime/shared-torch (given)" and r.unexplained == 0
    assert ("ClusterTrainingRuntime", "ddp-test") not in _docs(r.files["tests/migrate/fixtures/ddp.yaml"])


def test_other_objects_selecting_the_jobs_pods_select_the_trainjobs_after():
    r = _one(FIX / "peers.yaml", "2.3")
    assert r.unexplained == 0
    sel = {(d.where, d.path): (d.before, d.after, d.row) for d in r.jobs[0].differences if d.path[0] == "selects"}
    assert sel[("NetworkPolicy/peers", ("selects", "spec", "podSelector"))] == (["node 0", "node 1"], ["node 0", "node 1"],
                                                                               "selectors")
    assert sel[("Service/peers-master", ("selects", "spec", "selector"))] == (["node 0"], ["node 0"], "selectors")
    out = _docs(r.files["tests/migrate/fixtures/peers.yaml"])
    assert out[("Service", "peers-master")]["spec"]["selector"] == {"jobset.sigs.k8s.io/jobset-name": "peers-test",
                                                                    "batch.kubernetes.io/job-completion-index": "0"}
    assert "# the job's pods" in r.files["tests/migrate/fixtures/peers.yaml"]


def test_node_i_must_get_rank_i_whatever_a_claim_says():
    def side(rank):
        p = _pod("x", [{"name": "PET_NODE_RANK", "value": str(rank)}, {"name": "PET_MASTER_ADDR", "value": "x"}], node=1)
        p.obj["spec"]["containers"][0]["command"] = ["torchrun", "t.py"]
        return Side([p])
    claim = Claim("torchrun-rendezvous", ("facts", "node rank"))
    diffs, _ = compare(side(1), side(0), [claim], "node")
    unexplained = {d.path for d in diffs if not d.explained}
    assert {("facts", "node rank is the node index"), ("facts", "only node 0 hosts the store")} <= unexplained
    assert ("facts", "node rank") not in unexplained              # the claim did explain the value itself


# ------------------------------------------------------------------------------------------- TrainJob shapes
def test_trainjob_2_1_to_2_3_keeps_every_pod():
    r = _one(FIX / "trainjob-2.1.yaml", "2.3")
    assert r.unexplained == 0 and r.jobs[0].pods == 2 and not r.jobs[0].differences
    out = _docs(r.files["tests/migrate/fixtures/trainjob-2.1.yaml"])
    tj = out[("TrainJob", "shape-test")]["spec"]
    assert "podTemplateOverrides" not in tj and "labels" not in tj and "numProcPerNode" not in tj["trainer"]
    (patch,) = tj["runtimePatches"]
    assert patch["trainingRuntimeSpec"]["template"]["metadata"] == {"labels": {"team": "a"}}
    pod = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"pool": "gpu"} and pod["volumes"] == [{"name": "data", "emptyDir": {}}]  # 2 merged
    assert out[("ClusterTrainingRuntime", "test-torch")]["spec"]["mlPolicy"]["torch"] == {}
    assert r.others and r.others[0][0] == "ClusterTrainingRuntime/test-torch"


def test_trainjob_2_3_to_2_1_reports_what_2_1_cannot_say():
    r = _one(FIX / "trainjob-2.3.yaml", "2.1")
    assert r.unexplained == 0
    assert {f.extra["row"] for f in r.findings} == {"shape-patch-fields", "shape-deadline"}
    tj = _docs(r.files["tests/migrate/fixtures/trainjob-2.3.yaml"])[("TrainJob", "shape-test-23")]["spec"]
    assert tj["podTemplateOverrides"] == [{"targetJobs": [{"name": "node"}], "spec": {"nodeSelector": {"pool": "gpu"}}}]
    assert "runtimePatches" not in tj and "activeDeadlineSeconds" not in tj


def test_a_trainjob_in_the_shape_asked_for_is_left_alone():
    r = _one(FIX / "trainjob-2.1.yaml", "2.1")
    assert r.nothing and not r.jobs and not r.files


# ------------------------------------------------------------------------------------------- overlays, charts, CLI
def _overlay(tmp_path) -> Path:
    base = tmp_path / "repo" / "base"
    base.mkdir(parents=True)
    (base / "job.yaml").write_text((FIX / "ddp.yaml").read_text())
    (base / "kustomization.yaml").write_text("resources: [job.yaml]\n")
    ov = tmp_path / "repo" / "overlay"
    ov.mkdir()
    (ov / "kustomization.yaml").write_text("resources: [../base]\nnamePrefix: team-\n")
    return ov


def test_an_overlay_becomes_an_overlay_beside_it_and_the_input_is_untouched(tmp_path):
    ov = _overlay(tmp_path)
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (tmp_path / "repo").rglob("*") if p.is_file()}
    out = tmp_path / "out"
    r = _one(ov, "2.3", output=out)
    assert r.unexplained == 0 and not [f for f in r.checks if f.level == ERROR]
    assert before == {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (tmp_path / "repo").rglob("*") if p.is_file()}
    written = sorted(p.name for p in out.rglob("*") if p.is_file())
    assert written == ["kustomization.yaml", "team-ddp-test-pytorchjob-to-trainer-2.2.yaml", "team-ddp-test-runtime.yaml"]
    kfile = next(out.rglob("kustomization.yaml"))
    k = yaml.safe_load(kfile.read_text())
    assert (kfile.parent / k["resources"][0]).resolve() == ov.resolve()
    assert k["patches"][0]["target"] == {"group": "kubeflow.org", "version": "v1", "kind": "PyTorchJob",
                                         "name": "team-ddp-test"}
    assert kfile.read_text().startswith("# kdt:trainer-version=2.3")
    ops = yaml.safe_load((kfile.parent / k["patches"][0]["path"]).read_text())
    assert {"op": "move", "from": "/spec/pytorchReplicaSpecs/Master/template/spec/containers/0/image",
            "path": "/spec/trainer/image"} in ops


def test_output_is_written_whole_or_not_at_all(tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "kustomization.yaml").write_text("resources: [missing.yaml]\n")
    out = tmp_path / "out"
    results = migrate_targets(T.from_args([str(bad), str(FIX / "ddp.yaml")]), "2.3", output=out)
    assert [r.failed for r in results] == [True, False] and results[1].files
    assert not out.exists()                           # the job that migrated is not written without the other


def test_without_output_nothing_is_written(tmp_path):
    ov = _overlay(tmp_path)
    r = _one(ov, "2.1")
    assert r.files and not (tmp_path / "out").exists() and not list(ov.parent.glob(".kdt-migrate-*"))


def test_cli_check_fails_on_an_unexplained_difference(capsys, monkeypatch):
    from kdt.cli import main
    assert main.main(["migrate", str(FIX / "ddp.yaml"), "--check"]) == 0
    capsys.readouterr()
    from kdt.operators.framework.migrate import plan as P
    monkeypatch.setattr(P.Plan, "claim", lambda self, *a, **k: None)   # the rewrite no longer says what it did
    assert main.main(["migrate", str(FIX / "ddp.yaml")]) == 0
    assert "[unexplained]" in capsys.readouterr().out
    assert main.main(["migrate", str(FIX / "ddp.yaml"), "--check"]) == 1


def test_reports_parse_back(ddp):
    out = io.StringIO()
    migrate_formats.write([ddp["2.3"]], "json", out, "2.2+")
    data = json.loads(out.getvalue())
    (res,) = data["results"]
    assert res["jobs"][0]["pods_compared"] == 3 and res["findings"][0]["extra"]["row"] == "ttl"
    assert all(d["explained_by"] in M.BY_ID for d in res["jobs"][0]["differences"])
    out = io.StringIO()
    migrate_formats.write([ddp["2.3"]], "markdown", out, "2.2+")
    assert "| `tests/migrate/fixtures/ddp.yaml` | `PyTorchJob/ddp-test` → `TrainJob/ddp-test` |" in out.getvalue()


def test_bad_usage_is_one_line(capsys):
    from kdt.cli import main
    assert main.main(["migrate", str(FIX / "ddp.yaml"), "--to", "3.0"]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0


# ------------------------------------------------------------------------------------------- torchft replica groups
@pytest.fixture(scope="module")
def groups():
    return {v: _one(FIX / "torchft.yaml", v) for v in ("2.1", "2.3")}


@pytest.mark.parametrize("version", ["2.1", "2.3"])
def test_torchft_groups_keep_an_id_per_pod_and_restart_alone(groups, version):
    from kdt.operators.torchft import groups as XFT
    from kdt.merge_preview import expand_documents
    r = groups[version]
    assert r.unexplained == 0 and not [f for f in r.checks if f.level == ERROR]
    assert not [f for f in r.checks if f.rule in ("torchft-group-id", "torchft-failure-policy")]
    text = r.files["tests/migrate/fixtures/torchft.yaml"]
    docs, _ = load_stream(text, "out.yaml")
    items, _ = expand_documents(docs, trainer_version=version)
    found = [(pod, gid) for e in items for pod, gid, _ in XFT.groups(e, K.POD.matches)]
    # the merge preview of the output: each of the TrainJob's pods a group of its own, numbered as before
    assert sorted(found) == [(f"groups-test-node-0-{i}", str(i)) for i in range(3)]
    out = _docs(text)
    rt = out[("ClusterTrainingRuntime", "groups-test")]["spec"]["template"]["spec"]
    node = rt["replicatedJobs"][0]["template"]["spec"]
    assert node["backoffLimit"] == 50 and node["template"]["spec"]["restartPolicy"] == "OnFailure"   # a pod alone
    assert rt["failurePolicy"] == {"maxRestarts": 0}                                              # no group restart
    assert "--max-restarts=3" in out[("TrainJob", "groups-test")]["spec"]["trainer"]["command"]   # in the pod
    job = r.jobs[0]
    assert not [d for d in job.differences if d.path in (("job", "group restarts"), ("job", "backoff limit"))]
    assert {"pod-index", "replica-group-restarts"} <= {row for row, _ in job.done}
    (sel,) = [d for d in job.differences if d.path[0] == "selects"]
    assert (sel.where, sel.before, sel.after, sel.row) == ("NetworkPolicy/lighthouse", ["node 0", "node 1", "node 2"],
                                                           ["node 0", "node 1", "node 2"], "selectors")


def test_a_selector_left_as_written_that_loses_the_pods_is_unexplained(tmp_path):
    # the Lighthouse's policy admits the groups by a Training Operator label no TrainJob pod has
    f = tmp_path / "ft.yaml"
    f.write_text((FIX / "torchft.yaml").read_text().replace("matchLabels: {example.com/lighthouse: groups}",
                                                             "matchLabels: {training.kubeflow.org/replica-type: worker}"))
    r = _one(f, "2.3")
    (d,) = r.jobs[0].unexplained
    assert (d.where, d.before, d.after) == ("NetworkPolicy/lighthouse", ["node 0", "node 1", "node 2"], [])


def test_a_replica_index_beside_a_master_is_a_finding_not_a_rewrite(tmp_path):
    master = ("    Master:\n      replicas: 1\n      template:\n        spec:\n          containers:\n"
              "            - name: pytorch\n              image: example.com/train:1.0\n"
              "              command: [torchrun, /app/train.py]\n              env:\n"
              "                - name: REPLICA_GROUP_ID\n                  valueFrom: {fieldRef: {fieldPath: "
              "\"metadata.labels['training.kubeflow.org/replica-index']\"}}\n")
    f = tmp_path / "mw.yaml"
    f.write_text((FIX / "torchft.yaml").read_text().replace("    Worker:\n", master + "    Worker:\n"))
    r = _one(f, "2.3")
    (finding,) = [x for x in r.findings if x.extra.get("row") == "pod-index"]
    assert finding.path.endswith("env[0].valueFrom.fieldRef.fieldPath") and "left as written" in finding.message
    env = [d for d in r.jobs[0].differences if d.path[-2:] == ("env", "REPLICA_GROUP_ID")]
    assert env and all(d.row in ("pod-index", "replica-templates") for d in env)
    assert "pod-index" not in {row for row, _ in r.jobs[0].done}


# ------------------------------------------------------------------------------------------- the shipped targets
SHIPPED = ["overlays/ddp", "overlays/ddp-git", "overlays/elastic", "overlays/scale-512-pytorchjob", "overlays/torchft-pytorchjob",
           "charts/trainer/ci/ddp.yaml", "charts/trainer/ci/ddp-git.yaml", "charts/trainer/ci/elastic.yaml",
           "charts/trainer/ci/scale-512-pytorchjob.yaml", "charts/trainer/ci/torchft-pytorchjob.yaml"]


@pytest.fixture(scope="module")
def shipped():
    tl = T.from_args([str(ROOT / s) for s in SHIPPED])
    return {v: {r.name: r for r in migrate_targets(tl, v)} for v in ("2.1", "2.3")}


def test_the_shipped_pytorchjob_targets_are_the_ones_tested():
    from kdt.render import render
    found = sorted(t.name for t in T.discover() if any(K.PYTORCHJOB.matches(d) for d in render(t).documents))
    assert found == sorted(SHIPPED)


@pytest.mark.parametrize("version", ["2.1", "2.3"])
@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_pytorchjob_target_migrates_with_nothing_unexplained(shipped, version, name):
    r = shipped[version][name]
    assert len(r.jobs) == 1 and r.jobs[0].pods >= 2
    assert r.unexplained == 0, [d for d in r.jobs[0].unexplained]
    assert r.checks == [], r.checks                    # validates and lints clean for its release
    assert all(f.level != ERROR for f in r.findings)


@pytest.mark.parametrize("version", ["2.1", "2.3"])
def test_the_charts_torchft_job_keeps_fault_tolerance_in_trainjob_mode(shipped, version):
    r = shipped[version]["charts/trainer/ci/torchft-pytorchjob.yaml"]
    values = yaml.safe_load(r.files["charts/trainer/ci/torchft-pytorchjob.yaml"])
    assert values["mode"] == "trainjob" and values["faultTolerance"] == {"enabled": True}
    assert values["trainJob"]["runtime"]["maxRestarts"] == 0            # JobSet restarts no group
    assert not [f for f in r.findings if f.extra.get("row") == "backoff-limit"]   # faultTolerance.backoffLimit: both modes


SHAPES = {"overlays/fsdp": "2.3", "overlays/fsdp-trainer-2.3": "2.1", "overlays/scale-512-trainjob": "2.1",
          "overlays/llm-trainjob": "2.1", "charts/trainer/ci/fsdp.yaml": "2.3",
          "charts/trainer/ci/fsdp-trainer-2.3.yaml": "2.1", "charts/trainer/ci/scale-512-trainjob.yaml": "2.1",
          "charts/trainer/ci/llm-trainjob.yaml": "2.1", "overlays/torchft-trainjob": "2.1",
          "charts/trainer/ci/torchft-trainjob.yaml": "2.1"}


@pytest.fixture(scope="module")
def shapes():
    out = {}
    for v in ("2.1", "2.3"):
        tl = T.from_args([str(ROOT / n) for n, to in SHAPES.items() if to == v])
        out.update({r.name: r for r in migrate_targets(tl, v)})
    return out


@pytest.mark.parametrize("name", SHAPES)
def test_every_shipped_trainjob_target_changes_shape_with_the_same_pods(shapes, name):
    r = shapes[name]
    assert len(r.jobs) == 1 and r.jobs[0].pods >= 2
    assert r.jobs[0].differences == [] and r.checks == [] and r.findings == []


# ------------------------------------------------------------------------------------------- robustness
ODD = ["5", "true", "~", "[]", "{}", "-1", '"x"', "1.5", "[a, b]", "{a: 1}", "null", "'2'"]


def test_mutated_jobs_are_findings_never_tracebacks(tmp_path):
    """Copies of the fixtures with odd values, lines dropped or repeated: every run ends in a result."""
    import random
    texts = [p.read_text() for p in sorted(FIX.glob("*.yaml"))]
    rng = random.Random(29)
    for it in range(30):
        lines = rng.choice(texts).splitlines()
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(lines))
            line, op = lines[i], rng.random()
            if op < 0.4 and ":" in line:
                lines[i] = line.split(":", 1)[0] + ": " + rng.choice(ODD)
            elif op < 0.6:
                del lines[i]
            elif op < 0.8 and ":" in line:
                lines[i] = line.split(":", 1)[0] + ":"
            else:
                lines.insert(i, lines[rng.randrange(len(lines))])
        f = tmp_path / f"m{it}.yaml"
        f.write_text("\n".join(lines) + "\n")
        (r,) = migrate_targets(T.from_args([str(f)]), rng.choice(["2.1", "2.3"]))
        assert isinstance(r.unexplained, int)


# ------------------------------------------------------------------------------------------- deadlines
def _chart_values(tmp_path, extra: str) -> Path:
    """charts/trainer copied, with a values file beside its values.yaml: ci/ddp.yaml plus `extra`."""
    import shutil
    chart = tmp_path / "trainer"
    shutil.copytree(ROOT / "charts" / "trainer", chart)
    values = chart / "deadline.yaml"
    values.write_text((ROOT / "charts/trainer/ci/ddp.yaml").read_text() + extra)
    return values


@pytest.mark.parametrize("version,create", [("2.3", True), ("2.1", True), ("2.1", False)])
def test_the_charts_run_policy_deadline_becomes_the_trainjobs(tmp_path, version, create):
    """pytorchJob.runPolicy.activeDeadlineSeconds -> trainJob.activeDeadlineSeconds (2.2+ the TrainJob's, 2.1 the
    chart's runtime's trainer Job's); on a 2.1 runtime the chart does not create, a finding: no deadline."""
    extra = "pytorchJob:\n  runPolicy:\n    activeDeadlineSeconds: 5400\n"
    if not create:
        extra += "trainJob:\n  runtime:\n    create: false\n    name: torch-distributed\n"
    values = _chart_values(tmp_path, extra)
    r = _one(values, version)
    (text,) = r.files.values()
    out = yaml.safe_load(text)
    lost = [f for f in r.findings if f.extra.get("row") == "active-deadline"]
    if create:
        assert out["trainJob"]["activeDeadlineSeconds"] == 5400 and not lost
        assert ("active-deadline", "pytorchJob.runPolicy.activeDeadlineSeconds 5400 -> trainJob.activeDeadlineSeconds") \
            in r.jobs[0].done
        assert r.unexplained == 0, [d for d in r.jobs[0].unexplained]
    else:
        assert "activeDeadlineSeconds" not in out.get("trainJob", {})
        assert len(lost) == 1 and "Trainer 2.1 has no TrainJob deadline" in lost[0].message
