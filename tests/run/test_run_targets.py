"""Acceptance: `kdt run` starts every shipped target's commands exactly as rendered and they train to the end.

Each target runs for a few steps on CPU, one process per node (set on the job object), and must end
Succeeded with every rank of the last group printing the same final weights. The 512-rank chart
files at two nodes (the chart's own value, --set nodes=2) start the processes of an overlay that runs,
but for listed differences (SAME_PROCESSES below, proved by a test); the two 4-node fine-tune overlays
run as their chart twins at two nodes, which start their processes but for the node count (the same
table and test); overlays/fsdp-trainer-2.3 expands to overlays/fsdp's objects and runs as it. With a
fault: an elastic job resumes from its checkpoint on the surviving and recreated pods, a TrainJob restarts its group by
its failurePolicy and finishes with the weights of an uninterrupted run, a PyTorchJob whose
backoffLimit is used up fails with that reason; bad targets are one located line, nothing left running.
"""
from __future__ import annotations

import json
import os
import re
import socket
import sys
from pathlib import Path

import pytest
import yaml

from run_support import ROOT, final_digest, kdt_run, of, processes_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

OVERLAYS = sorted(p.name for p in (ROOT / "overlays").iterdir()
                  if (p / "kustomization.yaml").is_file() and not p.name.startswith("scale-512-"))
# The torchft targets' replica groups run in the fault tests below (torchft-pytorchjob, torchft-trainjob);
# torchft-statefulset is the fine-tune of overlays/statefulset with the same component (4 pods and a
# Lighthouse: time the suite does not have), its replica groups run in tests/training/test_torchft.py.
TORCHFT = {"torchft-pytorchjob", "torchft-trainjob", "torchft-statefulset"}
OVERLAYS = [o for o in OVERLAYS if o not in TORCHFT]
CHART_FILES = sorted(p.name for p in (ROOT / "charts" / "trainer" / "ci").glob("*.yaml"))
# A chart ci file renders the resources of its overlay twin (tests/chart/test_parity.py), so running both
# would run the same pods twice. The 512-rank files have no twin; at --set nodes=2 each starts the processes
# of an overlay that runs, but for the differences listed here and nothing else (the same containers,
# commands, arguments, env and mounts: test_same_processes_are_not_started_twice proves it, and fails the day
# they differ otherwise): the c10d rendezvous keep-alive of 512 ranks (keep_alive_interval and
# keep_alive_max_attempt: read by torch only to expire a node that stops sending heartbeats, which no run here
# does; the values are checked with torch's own parser instead), and the node count (the StatefulSet's
# NNODES or the PET_NNODES Trainer derives from numNodes, and so the number of pods).
KEEP_ALIVE, NODES = "the rendezvous keep-alive", "the node count"
SAME_PROCESSES = {"charts/trainer/ci/scale-512-trainjob.yaml": ("overlays/fsdp", ()),
                  "charts/trainer/ci/scale-512-pytorchjob.yaml": ("overlays/ddp", (KEEP_ALIVE,)),
                  "charts/trainer/ci/scale-512-statefulset.yaml": ("overlays/statefulset", (KEEP_ALIVE, NODES))}
# The fine-tune overlays run 4 nodes (seed 003's size): 4 pods, each importing transformers and peft, for
# 3 steps. Each has a chart twin (charts/trainer/ci/<name>.yaml: the overlay's resources at the chart's
# nodes: 4, tests/chart/test_parity.py) that runs instead at --set nodes=2: the overlay's processes but for
# the node count (SAME_PROCESSES, proved below), half as many.
AT_TWO_NODES = {"overlays/statefulset": "charts/trainer/ci/statefulset.yaml",
                "overlays/llm-trainjob": "charts/trainer/ci/llm-trainjob.yaml",
                "overlays/llm-trainjob-initializers": "charts/trainer/ci/llm-trainjob-initializers.yaml"}
SAME_PROCESSES.update({chart: (overlay, (NODES,)) for overlay, chart in AT_TWO_NODES.items()})
# overlays/fsdp-trainer-2.3 is overlays/fsdp for Trainer 2.3 (components/trainer-2.3): the same JobSet, Job, Service
# and pods, plus the runtime snapshot ConfigMap Trainer 2.3 writes, which no pod mounts
# (test_an_overlay_twin_expands_to_the_same_objects). Run once, as overlays/fsdp.
OVERLAY_TWINS = {"overlays/fsdp-trainer-2.3": "overlays/fsdp"}
SAME_PROCESSES.update({overlay: (twin, ()) for overlay, twin in OVERLAY_TWINS.items()})
# overlays/elastic runs to the end in its fault test below (a pod lost, the job Succeeded, every rank's
# final weights alike), which is a to-completion run of the same pods plus a fault: not run twice.
FAULT_RUNS_TO_COMPLETION = {"overlays/elastic"}
# overlays/ddp-git clones a commit of this repository's history (a shallow checkout lacks it): its own pieces
# (base, components/git-code) run to the end, with a pod lost, pinned to a repository the test makes, in
# tests/run/test_git_code.py.
FAULT_RUNS_TO_COMPLETION |= {"overlays/ddp-git"}
TARGETS = [AT_TWO_NODES.get(f"overlays/{o}", f"overlays/{o}") for o in OVERLAYS
           if f"overlays/{o}" not in FAULT_RUNS_TO_COMPLETION | set(OVERLAY_TWINS)]
# The fine-tune (training/llm_finetune.py) reads /data and /models/base: --volume gives them (llm_volumes).
LLM = set(AT_TWO_NODES.values())
# The fine-tune whose dataset and model come through Trainer's initializers: nothing downloads here, the
# initializer volume's folder holds them (initializer_volumes) and the run says so, one line per initializer.
INITIALIZERS = {"charts/trainer/ci/llm-trainjob-initializers.yaml"}
# The fine-tune's three epochs end before step 6: the test data packs into 2 rows of --seq-len=2048
# tokens, one step of every rank's --batch-size=8 rows.
LLM_STEPS = 3


# The TensorFlow target runs 70 steps: its run is also the uninterrupted reference of the group-restart test
# below (a fault at step 60, after the step-50 checkpoint), run once for both (shared_run).
TF_STEPS = 70


def _knobs(target: str) -> list[str]:
    if target == "overlays/tensorflow":
        return ["--max-steps", str(TF_STEPS), "--quiet"]
    knobs = ["--nproc-per-node", "1", "--max-steps", "6", "--quiet"]
    if target in SAME_PROCESSES and target.startswith("charts/"):
        knobs += ["--set", "nodes=2"]
    return knobs


def _steps(target: str) -> int:
    return LLM_STEPS if target in LLM else TF_STEPS if target == "overlays/tensorflow" else 6


def test_every_target_is_run():
    assert {"ddp", "elastic", "fsdp", "fsdp-trainer-2.3", "statefulset", "tensorflow", "llm-trainjob"} <= set(OVERLAYS)
    scale = {c for c in CHART_FILES if c.startswith("scale-512-")}
    assert len(CHART_FILES) >= 10 and len(scale) == 3
    assert {Path(c).name for c in SAME_PROCESSES} == (scale | {Path(c).name for c in AT_TWO_NODES.values()}
                                                      | {Path(o).name for o in OVERLAY_TWINS})
    assert not set(OVERLAY_TWINS) & set(TARGETS) and set(OVERLAY_TWINS.values()) <= set(TARGETS)
    assert set(CHART_FILES) - scale <= {f"{o}.yaml" for o in [*OVERLAYS, *TORCHFT]}   # the rest have a twin
    assert all(f"charts/trainer/ci/{Path(o).name}.yaml" == c for o, c in AT_TWO_NODES.items())
    # every overlay the table names runs, itself or as its twin at two nodes
    assert all(o in TARGETS or AT_TWO_NODES.get(o) in TARGETS for o, _ in SAME_PROCESSES.values())
    assert FAULT_RUNS_TO_COMPLETION <= {f"overlays/{o}" for o in OVERLAYS}
    runs = {t for t in TARGETS if "llm_finetune.py" in _rendered(t)}
    assert runs == LLM


def _processes(target: str) -> list[dict]:
    """What `kdt run TARGET` would start, pod by pod: each container's name, image, command, arguments, env,
    working folder and mount paths, from the pods kdt run builds (in process, nothing started)."""
    from kdt import kinds as K
    from kdt.cli import run as R
    args = R._parser().parse_args([str(ROOT / target), *[k for k in _knobs(target) if k != "--quiet"]])
    _, _, expanded = R._expanded(args)
    out = []
    for pod in K.local_pods(expanded):
        spec = pod.obj.get("spec") or {}
        for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            out.append({"pod": pod.name, "name": c.get("name"), "image": c.get("image"), "command": c.get("command"),
                        "args": c.get("args"), "workingDir": c.get("workingDir"),
                        "env": [json.dumps(e, sort_keys=True) for e in c.get("env") or []],
                        "mounts": sorted(str(m.get("mountPath")) for m in c.get("volumeMounts") or [])})
    return out


KEEP_ALIVE_CONF = re.compile(r"keep_alive_interval=[^,\s\"]*,keep_alive_max_attempt=[^,\s\"]*")


def _but(processes: list[dict], differences) -> tuple[list[dict], list[str]]:
    """The processes with the listed differences taken out, and the keep-alive settings taken out."""
    confs = []

    def keep_alive(text):
        if KEEP_ALIVE not in differences or not isinstance(text, str):
            return text
        confs.extend(KEEP_ALIVE_CONF.findall(text))
        return KEEP_ALIVE_CONF.sub("keep_alive=*", text)

    out = []
    for p in processes:
        p = dict(p, command=[keep_alive(a) for a in p["command"] or []], args=[keep_alive(a) for a in p["args"] or []],
                 env=[keep_alive(e) for e in p["env"]])
        if NODES in differences:
            p.pop("pod")
            p["env"] = [re.sub(r'^(\{"name": "(PET_)?NNODES", "value": )"\d+"', r'\1"*"', e) for e in p["env"]]
            if p in out:
                continue        # one pod's processes stand for every pod's (they differ in nothing else)
        out.append(p)
    return out, confs


@pytest.mark.parametrize("target", sorted(SAME_PROCESSES))
def test_same_processes_are_not_started_twice(target):
    from torch.distributed.elastic.rendezvous.utils import _parse_rendezvous_config
    overlay, differences = SAME_PROCESSES[target]
    twin, twin_confs = _but(_processes(overlay), differences)
    mine, confs = _but(_processes(target), differences)
    assert twin and mine == twin
    assert bool(confs) == bool(twin_confs) == (KEEP_ALIVE in differences)
    assert set(confs) != set(twin_confs) or not confs        # a listed difference is one
    for conf in confs:          # what torch's c10d rendezvous reads of it (get_as_int: int(value)), and positive
        assert all(int(v) > 0 for v in _parse_rendezvous_config(conf).values()), conf


@pytest.mark.parametrize("overlay", sorted(OVERLAY_TWINS))
def test_an_overlay_twin_expands_to_the_same_objects(overlay):
    """What kdt run acts on, object by object (the controllers' JobSet, Job and Service, the pods): the same for
    the overlay and its twin; only a ConfigMap no pod mounts may be the overlay's own."""
    from kdt.cli import run as R

    def objects(target):
        args = R._parser().parse_args([str(ROOT / target), *[k for k in _knobs(target) if k != "--quiet"]])
        return {(e.kind, e.name): e.obj for e in R._expanded(args)[2]}
    mine, twin = objects(overlay), objects(OVERLAY_TWINS[overlay])
    own = {k for k in set(mine) - set(twin)}
    assert own and all(kind == "ConfigMap" for kind, _ in own), own
    assert not set(twin) - set(mine) and all(mine[k] == twin[k] for k in twin)
    mounted = {v["configMap"]["name"] for pod in mine.values() if isinstance(pod, dict)
               for v in (pod.get("spec") or {}).get("volumes") or [] if "configMap" in v}
    assert not {name for _, name in own} & mounted


def _rendered(target: str) -> str:
    """The target's rendered documents as one JSON text (kdt's own render, in process)."""
    from kdt import targets as T
    from kdt.render import render
    (t,) = T.resolve([str(ROOT / target)])
    r = render(t)
    assert r.ok, r.findings
    return json.dumps([d.data for d in r.documents])


@pytest.mark.parametrize("target", TARGETS)
def test_target_runs_to_completion(target, shared_run, request):
    volumes = (request.getfixturevalue("initializer_volumes") if target in INITIALIZERS
               else request.getfixturevalue("llm_volumes") if target in LLM else [])
    code, out, err, events, folder = shared_run(target, *_knobs(target), *volumes)
    assert code == 0, out + err
    if target in INITIALIZERS:
        notes = [e["text"] for e in of(events, "note") if "not downloaded by a local run" in e["text"]]
        assert sorted(n.split(":")[0] for n in notes) == ["dataset-initializer", "model-initializer"], notes
    assert out.startswith("Succeeded"), out
    starts = {e["pod"] for e in of(events, "start")}
    assert len(starts) >= 2, starts                  # every target is multi-node
    digest = final_digest(events)
    assert len(digest) == 64
    done = of(events, "done")
    assert {int(e["data"]["step"]) for e in done} == {_steps(target)}
    assert not processes_of(folder)
    if target in LLM:      # the fine-tune's outputs, on the outputs PVC's folder
        out_dir = next(p.parent for p in (folder / "run" / "volumes" / "pvc-outputs-pvc").glob("*/report.json"))
        report = json.loads((out_dir / "report.json").read_text())
        assert report["steps"] == LLM_STEPS and report["weights_sha256"] == digest
        assert (out_dir / "best" / "adapter_model.safetensors").is_file() and (out_dir / "mlflow_run_id").is_file()
        if "trainjob" in target:     # a TrainJob of 2.2+: kdt serves Trainer's status endpoint (a StatefulSet has none)
            _holds_its_trainer_status(events, report)


def _holds_its_trainer_status(events, report):
    """A TrainJob of Trainer 2.2+: kdt served Trainer's status endpoint and the fine-tune reported to it (trainkit's
    reporter); the last report is the run's end: its steps, its final loss, its validation perplexity, 100%."""
    progress = of(events, "progress")
    assert progress, "no trainerStatus report"
    last = progress[-1]["data"]["status"]
    metrics = {m["name"]: m["value"] for m in last["metrics"]}
    assert last["progressPercentage"] == 100 and last["estimatedRemainingSeconds"] == 0
    assert metrics["step"] == metrics["total_steps"] == str(LLM_STEPS)
    assert float(metrics["loss"]) == pytest.approx(report["final_train_loss"], rel=1e-5)
    assert "val_ppl" in metrics and float(metrics["target_tokens_per_s"]) > 0
    steps = [int({m["name"]: m["value"] for m in e["data"]["status"]["metrics"]}["step"]) for e in progress]
    assert steps == sorted(steps)
    assert "[####################] 100%" in progress[-1]["text"]


def _trainkit_default(dest: str):
    """A default of trainkit's common training flags, read from trainkit itself."""
    import argparse
    import importlib.util
    spec = importlib.util.spec_from_file_location("trainkit_args", ROOT / "training" / "trainkit" / "args.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    p = argparse.ArgumentParser()
    mod.add_common_args(p, epochs=1, batch_size=1, lr=0.1, checkpoint_every=1)
    return getattr(p.parse_args([]), dest)


def test_elastic_lost_pod_resumes_from_checkpoint(tmp_path):
    # Lost at step 80 of 120: the survivor's 40 steps leave the recreated pod time to rejoin on a loaded
    # machine (at 90 it once finished alone first). Lost 30 steps after the step-50 checkpoint: trainkit writes checkpoints in the background
    # (dcp.async_save), and on a loaded machine a pod lost 10 steps after it was seen to resume from nothing,
    # rightly (an incomplete checkpoint is never loaded), which is not what this test is about.
    # The shipped keep-alive (1 s x 2) relaxed to 3 s x 3 for this run: on a fresh clone's make test (3 pytest
    # workers on 2 cores) the survivor's agent missed its 2 s, torch's rendezvous (dynamic_rendezvous._sanitize)
    # dropped it from the round, and the recreated pod formed a second group of world size 1 beside it (both
    # trained on; seen at c929e76 too). That hazard of the short keep-alive on a starved node is the
    # rendezvous-keep-alive rule's and the README's matter; this test is about the resume.
    target = tmp_path / "elastic-relaxed"
    target.mkdir()
    (target / "kustomization.yaml").write_text(
        "resources: [%s]\npatches:\n- target: {group: kubeflow.org, kind: PyTorchJob, name: mnist-elastic}\n"
        "  patch: |-\n"
        "    - {op: test, path: /spec/elasticPolicy/rdzvConf/1/key, value: keep_alive_interval}\n"
        "    - {op: replace, path: /spec/elasticPolicy/rdzvConf/1/value, value: '3'}\n"
        "    - {op: test, path: /spec/elasticPolicy/rdzvConf/2/key, value: keep_alive_max_attempt}\n"
        "    - {op: replace, path: /spec/elasticPolicy/rdzvConf/2/value, value: '3'}\n"
        % os.path.relpath(ROOT / "overlays" / "elastic", target))
    code, out, err, events = kdt_run(target, "--nproc-per-node", "1", "--max-steps", "120",
                                     "--lose", "mnist-elastic-worker-1@step=80", "--quiet",
                                     "--timeline", tmp_path / "t.png", workdir=tmp_path)
    assert code == 0, out + err
    assert out.startswith("Succeeded"), out             # the target's to-completion run (FAULT_RUNS_TO_COMPLETION)
    assert of(events, "lose") and of(events, "recreate")
    lost = of(events, "lose")[0]
    # After the loss every resume is from a checkpoint no older than the step-50 one (--checkpoint-every=50)
    # and no newer than the last step trained; resumes never go back, and both pods train again. Elastic
    # (1 to 2 nodes): the survivor may go on alone from 50 while the pod is recreated, and the group re-form
    # from a later step it saved (SIGTERM on re-forming), or the recreated pod resume from it.
    # [TRAIN] lines come every --log-every steps (trainkit's default), so the last step trained before a
    # resume is below the next logged one: a checkpoint the survivor saved at step 77 follows logged step 70.
    resumed = [e for e in of(events, "resume") if e["t"] > lost["t"] and e["data"]["step"] not in (None, "0")]
    assert resumed, events
    log_every = _trainkit_default("log_every")
    for e in resumed:
        trained = [int(t["data"]["step"]) for t in of(events, "train") if t["t"] < e["t"]]
        assert 50 <= int(e["data"]["step"]) < max(trained) + log_every, (e, trained)
    steps = [int(e["data"]["step"]) for e in resumed]
    assert steps == sorted(steps), steps
    assert {e["pod"] for e in resumed} == {"mnist-elastic-worker-0", "mnist-elastic-worker-1"}, resumed
    assert len(final_digest(events)) == 64
    last = [e for e in of(events, "done") if e["t"] > resumed[-1]["t"]]
    assert {e["pod"] for e in last} == {"mnist-elastic-worker-0", "mnist-elastic-worker-1"}, last
    assert {int(e["data"]["step"]) for e in last} == {120}, last
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not processes_of(tmp_path)


def _log_lines(folder: Path, pod: str, tag: str) -> list[dict]:
    """The trainkit/tfkit lines of one tag that a pod of a run printed (the run's pod log, kept in its folder)."""
    sys.path.insert(0, str(ROOT / "training"))
    from trainkit.log import parse_line
    (log,) = (folder / "run" / "logs").glob(f"{pod}.*.log")
    return [f for t, f in map(lambda x: parse_line(x) or (None, None), log.read_text().splitlines()) if t == tag]


def test_tensorflow_pods_get_their_tf_config_and_only_the_chief_saves(shared_run):
    """The TensorFlow sample (training/tf_mnist.py) in the pods kdt run makes of the rendered TrainJob: TF_CONFIG from
    the runtime's mechanism names two workers, the pod of completion index 0 is the chief and the only writer."""
    code, out, err, events, folder = shared_run("overlays/tensorflow", *_knobs("overlays/tensorflow"))
    assert code == 0, out + err
    chief = _log_lines(folder, "tf-mnist-node-0-0", "SETUP")[0]
    other = _log_lines(folder, "tf-mnist-node-0-1", "SETUP")[0]
    assert chief["workers"] == other["workers"] == "2" and chief["replicas"] == "2"
    assert chief["chief"] == "true" and other["chief"] == "false"
    assert _log_lines(folder, "tf-mnist-node-0-0", "CKPT") and not _log_lines(folder, "tf-mnist-node-0-1", "CKPT")


def test_trainjob_group_restart_resumes_with_identical_weights(tmp_path, shared_run):
    common = _knobs("overlays/tensorflow")          # --max-steps 70: the to-completion run is the reference
    code, out, err, base, _ = shared_run("overlays/tensorflow", *common)
    assert code == 0, out + err
    code, out, err, events = kdt_run("overlays/tensorflow", *common, "--kill", "tf-mnist-node-0-1@step=60",
                                     workdir=tmp_path / "fault")
    assert code == 0, out + err
    restarts = of(events, "jobset-restart")
    assert len(restarts) == 1 and "failurePolicy.maxRestarts" in restarts[0]["text"]
    assert "1 restart(s)" in out
    # From the step-50 checkpoint, or a later one the survivor saved when the restart stopped it (SIGTERM).
    steps = {int(e["data"]["step"]) for e in of(events, "resume") if e["t"] > restarts[0]["t"]}
    assert len(steps) == 1 and 50 <= steps.pop() < 70, events
    assert final_digest(events) == final_digest(base)


def test_pytorchjob_backoff_limit_exhausted_fails(tmp_path):
    import subprocess
    rendered = subprocess.run([str(ROOT / ".venv" / "bin" / "kubectl"), "kustomize", str(ROOT / "overlays" / "ddp")],
                              capture_output=True, text=True, check=True).stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    for d in docs:
        if d["kind"] == "PyTorchJob":
            d["spec"]["runPolicy"]["backoffLimit"] = 1
    f = tmp_path / "job.yaml"
    f.write_text(yaml.safe_dump_all(docs))
    code, out, err, events = kdt_run(f, "--nproc-per-node", "1", "--max-steps", "400", "--quiet",
                                     "--kill", "mnist-ddp-worker-0@step=3", workdir=tmp_path)
    assert code == 1, out + err
    assert out.startswith("Failed (PyTorchJobFailed): Job mnist-ddp has failed because it has reached the specified backoff limit"), out
    assert of(events, "restart")
    assert not processes_of(tmp_path)


def _job(command: list[str], port: int) -> str:
    return yaml.safe_dump({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "bad"},
                           "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "restartPolicy": "Never", "template": {
                               "spec": {"containers": [{"name": "pytorch", "image": "busybox", "command": command,
                                                        "ports": [{"name": "pytorchjob-port", "containerPort": port}]}]}}}}}})


def test_bad_targets_one_located_line_and_nothing_started(tmp_path):
    cm = tmp_path / "cm.yaml"
    cm.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n")
    code, out, err, _ = kdt_run(cm, workdir=tmp_path / "a")
    assert code == 2 and "nothing to run" in err and len(err.strip().splitlines()) == 1

    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x\n")
    code, out, err, _ = kdt_run(broken, workdir=tmp_path / "y")
    assert code == 2 and "broken.yaml:" in err and "nothing to run" not in err, err

    missing = tmp_path / "missing.yaml"
    missing.write_text(_job(["/opt/not-here/train", "--x"], 23456))
    code, out, err, _ = kdt_run(missing, workdir=tmp_path / "b")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "missing.yaml:" in err and "containers[0].command[0]" in err and "/opt/not-here/train" in err

    with socket.socket() as held:
        held.bind(("0.0.0.0", 0))       # a port another program listens on, on every address
        held.listen()
        port = held.getsockname()[1]
        busy = tmp_path / "busy.yaml"
        busy.write_text(_job(["sleep", "30"], port))
        code, out, err, _ = kdt_run(busy, workdir=tmp_path / "c")
    assert code == 2 and f"port {port} is in use" in err and "containerPort" in err, err
    assert not processes_of(tmp_path)


def test_usage_errors(tmp_path):
    code, _, err, _ = kdt_run("overlays/ddp", "--kill", "nope-0@3", workdir=tmp_path)
    assert code == 2 and "no pod 'nope-0'" in err and len(err.strip().splitlines()) == 1
    code, _, err, _ = kdt_run("overlays/ddp", "--set", "nodes=3", workdir=tmp_path)
    assert code == 2 and "--set applies to a chart values file" in err
    code, _, err, _ = kdt_run("overlays/statefulset", "--volume", f"model-pvc={tmp_path}", workdir=tmp_path)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "no pod of overlays/statefulset mounts a claim 'model-pvc' (claims: datasets-pvc, models-pvc, outputs-pvc)" in err
    code, _, err, _ = kdt_run("overlays/statefulset", "--volume", f"models-pvc={tmp_path / 'none'}", workdir=tmp_path)
    assert code == 2 and "is not a folder" in err
    code, _, err, _ = kdt_run("overlays/statefulset", "--volume", "models-pvc", workdir=tmp_path)
    assert code == 2 and "expected CLAIM=DIR" in err


def _set(script: str, flag_path: str | None = None) -> str:
    """A one-pod StatefulSet whose container runs `script` (Python), reading `flag_path` from a claim."""
    args = [f"--model-dir={flag_path}", "--output-dir=/data/out"] if flag_path else []
    return yaml_dump({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "loop"},
        "spec": {"replicas": 1, "serviceName": "loop", "selector": {"matchLabels": {"app": "loop"}},
                 "template": {"metadata": {"labels": {"app": "loop"}}, "spec": {
                     "containers": [{"name": "main", "image": "busybox:1.36", "command": ["python3", "-c", script, *args],
                                     "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                     "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-pvc"}}]}}}})


def yaml_dump(obj) -> str:
    import yaml
    return yaml.safe_dump(obj, sort_keys=False)


def test_a_claim_that_holds_nothing_the_command_reads_stops_the_run_before_it_starts(tmp_path):
    """The command reads /data/model from claim data-pvc (--model-dir); writes /data/out (--output-dir, not an
    input). Empty: one line naming the claim, the path and how to fill it, exit 2, nothing started. Filled
    with --volume: the run goes on."""
    target = tmp_path / "set.yaml"
    target.write_text(_set("import sys; print(open(sys.argv[1].split('=')[1] + '/w').read())", "/data/model"))
    code, out, err, events = kdt_run(target, "--quiet", workdir=tmp_path / "empty")
    assert code == 2 and len(err.strip().splitlines()) == 1 and not of(events, "start"), err
    assert "reads /data/model (--model-dir) from claim data-pvc, which holds nothing there" in err
    assert "--volume data-pvc=DIR" in err and "set.yaml:" in err and "/data/out" not in err
    filled = tmp_path / "filled"
    (filled / "model").mkdir(parents=True)
    (filled / "model" / "w").write_text("weights\n")
    code, out, err, events = kdt_run(target, "--quiet", "--volume", f"data-pvc={filled}", workdir=tmp_path / "ok")
    assert "holds nothing" not in err and of(events, "start"), err
    assert not processes_of(tmp_path)


def test_a_pod_failing_the_same_way_at_every_restart_is_crashloopbackoff(tmp_path):
    target = tmp_path / "loop.yaml"
    target.write_text(_set("raise ValueError('model config not found in /models/base')"))
    code, out, err, events = kdt_run(target, "--quiet", "--restart-delay", "0.2", "--crash-loop-limit", "2",
                                     workdir=tmp_path / "w", timeout=60)
    assert code == 1, out + err
    assert out.strip().startswith("Failed (CrashLoopBackOff): pod loop-0 failed the same way 2 times")
    assert "ValueError: model config not found in /models/base" in out
    assert len(of(events, "start")) == 2 and not processes_of(tmp_path)


def _heals(events, pod):
    return [e for e in of(events, "heal") if e["pod"] == pod]


def test_torchft_groups_heal_and_ride_out_a_lighthouse_restart(tmp_path):
    """A replica group's worker killed: the group resumes and heals from its peer (the same weights at that
    step) while the peer trains on; the Lighthouse (the Deployment's pod) killed: every group saves its step,
    restarts, waits for the Lighthouse the kubelet restarted and resumes from that step; both end alike."""
    # 20 steps past the Lighthouse's loss (at step 50, 30 after the worker's): the groups restart, find the
    # Lighthouse again, resume and train together to the end.
    code, out, err, events = kdt_run("overlays/torchft-pytorchjob", "--nproc-per-node", "1", "--max-steps", "70",
                                     "--step-sleep", "0.05", "--kill", "mnist-ft-worker-1/rank=0@step=20",
                                     "--kill", "torchft-lighthouse-0@step=50", "--quiet", workdir=tmp_path)
    assert code == 0, out + err
    assert out.startswith("Succeeded"), out
    starts = {e["pod"] for e in of(events, "start")}
    assert starts == {"torchft-lighthouse-0", "mnist-ft-worker-0", "mnist-ft-worker-1"}
    killed = [e for e in of(events, "kill") if e["pod"] == "mnist-ft-worker-1"][0]
    received = [e for e in _heals(events, "mnist-ft-worker-1") if e["t"] > killed["t"]
                and e["data"]["role"] == "received"]
    sent = {e["data"]["step"]: e for e in _heals(events, "mnist-ft-worker-0") if e["data"]["role"] == "sent"}
    assert received and received[0]["data"]["weights_sha256"] == sent[received[0]["data"]["step"]]["data"][
        "weights_sha256"], events
    lh = [e for e in of(events, "kill") if e["pod"] == "torchft-lighthouse-0"][0]
    lost = [e for e in of(events, "note") if "the Lighthouse is lost" in e["text"] and e["t"] > lh["t"]]
    assert {e["pod"] for e in lost} == {"mnist-ft-worker-0", "mnist-ft-worker-1"}
    saved = {int(re.search(r"step (\d+) saved", e["text"]).group(1)) for e in lost}
    assert len(saved) == 1
    resumed = {int(e["data"]["step"]) for e in of(events, "resume") if e["t"] > lh["t"]}
    assert resumed == saved                     # nothing trained was lost
    # noticed within a second of quorum plus the 2 s grace, not torchft's 60 s quorum timeout
    assert all(e["t"] - lh["t"] < 10 for e in lost), (lh, lost)
    for pod in ("mnist-ft-worker-0", "mnist-ft-worker-1"):     # each group, from its pod's log
        (ft,) = [f for f in _log_lines(tmp_path, pod, "FT") if f.get("lighthouse") == "lost"]
        assert ft["exit"] == "75" and int(ft["step"]) in saved      # saved and restarted by its torchrun
        ckpts = [f for f in _log_lines(tmp_path, pod, "CKPT") if f.get("phase") == "complete"
                 and int(f["step"]) == int(ft["step"]) and float(f["ts"]) >= float(ft["ts"])]
        resume = [f for f in _log_lines(tmp_path, pod, "RESUME") if float(f["ts"]) > float(ft["ts"])]
        assert ckpts and resume and float(ckpts[0]["ts"]) <= float(resume[0]["ts"])
        restarts = [f["restart"] for f in _log_lines(tmp_path, pod, "DDP") if float(f["ts"]) > float(ft["ts"])]
        assert restarts and int(restarts[0]) >= 1, pod
    steps = [int(f["step"]) for f in _log_lines(tmp_path, "mnist-ft-worker-0", "TRAIN")]
    assert steps == sorted(steps), steps        # the group that was never killed never went back
    done = of(events, "done")
    assert {e["pod"] for e in done} == {"mnist-ft-worker-0", "mnist-ft-worker-1"}
    assert {e["data"]["weights_sha256"] for e in done} == {done[0]["data"]["weights_sha256"]}
    assert {int(e["data"]["step"]) for e in done} == {70}
    assert not processes_of(tmp_path)


def test_torchft_trainjob_groups_run(tmp_path):
    """The TrainJob path: the Lighthouse beside the JobSet's pods, each pod its own group; a worker killed
    heals from the other group; the JobSet never restarts."""
    code, out, err, events = kdt_run("overlays/torchft-trainjob", "--nproc-per-node", "1", "--max-steps", "24",
                                     "--step-sleep", "0.05", "--kill", "t5-ft-node-0-1/rank=0@step=10", "--quiet",
                                     workdir=tmp_path)
    assert code == 0, out + err
    assert not of(events, "jobset-restart")
    assert [e for e in _heals(events, "t5-ft-node-0-1") if e["data"]["role"] == "received"]
    done = of(events, "done")
    assert {e["pod"] for e in done} == {"t5-ft-node-0-0", "t5-ft-node-0-1"}
    assert len({e["data"]["weights_sha256"] for e in done}) == 1
    assert not processes_of(tmp_path)
