"""Real nodes (kdt.live.realnodes): the real kubelet, containerd and runc run pods in containers, two nodes on
the real control plane, the tests' tiny busybox images pre-loaded. What only a node shows, each a broken
manifest and its fixed twin judged by the kubelet itself: a root image under runAsNonRoot, an image that is
not on the node under `imagePullPolicy: Never`, an init container that must finish first; a killed container
restarted; names answered by CoreDNS, Services by kube-proxy, pods reached across nodes, no route out; and
nothing left once the nodes stop.

The host must allow a node (root, overlayfs, cgroup controllers): where it does not, the module says what is
missing, in the one line `kdt cluster up --real-nodes` prints, and its tests do not run."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kdt.live import oci, realnodes
from kdt.live.controlplane import Cluster
from kdt.live.nodereasons import locate

KDT = [sys.executable, "-m", "kdt"]

ROOT_IMG = "kdt.local/busybox:root"
USER_IMG = "kdt.local/busybox:user"
APP = {"app/train.sh": b"#!/bin/sh\necho trained\n"}

if realnodes.missing():
    pytest.skip("real nodes cannot start on this host: no " + "; no ".join(realnodes.missing()),
                allow_module_level=True)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("real")
    images = [oci.write(oci.busybox(ROOT_IMG), tmp / "root.tar"),
              oci.write(oci.busybox(USER_IMG, user="1000:1000", extra=APP), tmp / "user.tar")]
    c = Cluster.start(folder=tmp / "cp", operators=False, service_cidr=realnodes.SERVICE_CIDR)
    try:
        n = realnodes.RealNodes(c, 2, images).start()
        try:
            yield n
        finally:
            n.stop()
    finally:
        c.stop()


def _pod(name: str, spec: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _apply(n, *docs) -> None:
    n.cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(docs)}))


def _wait(n, name: str, pred, timeout: float = 60) -> dict:
    end = time.monotonic() + timeout
    while True:
        pod = n.cluster.get_json("pod", name)
        if pred(pod):
            return pod
        if time.monotonic() > end:
            raise AssertionError(f"pod {name}: {json.dumps(pod.get('status'))[:1500]}")
        time.sleep(0.3)


def _waiting(pod: dict, kind: str = "containerStatuses") -> dict:
    for cs in pod.get("status", {}).get(kind) or []:
        w = cs.get("state", {}).get("waiting")
        if w and w.get("reason") not in (None, "ContainerCreating", "PodInitializing"):
            return {"name": cs["name"], **w}
    return {}


def _phase(phase: str):
    return lambda pod: pod.get("status", {}).get("phase") == phase


def _logs(n, name: str, container: str = "main") -> str:
    return n.logs(n.cluster.get_json("pod", name), container)


def test_two_nodes_register_with_their_capacity_and_the_declared_gpus(nodes):
    items = nodes.cluster.get_json("nodes")["items"]
    assert sorted(i["metadata"]["name"] for i in items) == ["node-1", "node-2"]
    for i in items:
        st = i["status"]
        assert st["allocatable"]["nvidia.com/gpu"] == str(realnodes.GPUS)
        assert int(st["capacity"]["cpu"]) == os.cpu_count()
        assert st["nodeInfo"]["kubeletVersion"] == "v1.36.3"
        assert st["nodeInfo"]["containerRuntimeVersion"] == "containerd://2.4.2" or \
            st["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://")
        assert {a["address"] for a in st["addresses"] if a["type"] == "InternalIP"} <= {"100.64.0.1", "100.64.0.2"}


def test_a_root_image_under_run_as_non_root_is_the_kubelets_create_container_config_error(nodes):
    spec = {"restartPolicy": "Never", "securityContext": {"runAsNonRoot": True},
            "containers": [{"name": "main", "image": ROOT_IMG, "imagePullPolicy": "Never",
                            "command": ["sh", "-c", "id -u"]}]}
    fixed = json.loads(json.dumps(spec))
    fixed["containers"][0]["image"] = USER_IMG
    _apply(nodes, _pod("nonroot-broken", spec), _pod("nonroot-fixed", fixed))
    pod = _wait(nodes, "nonroot-broken", _waiting)
    w = _waiting(pod)
    assert w["reason"] == "CreateContainerConfigError"
    assert "container has runAsNonRoot and image will run as root" in w["message"]
    assert locate(pod["spec"], w["name"], w["reason"], w["message"]) == "spec.securityContext.runAsNonRoot"
    _wait(nodes, "nonroot-fixed", _phase("Succeeded"))
    assert _logs(nodes, "nonroot-fixed").strip() == "1000"


def test_an_image_not_on_the_node_under_never_is_err_image_never_pull(nodes):
    spec = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "kdt.local/busybox:absent",
                                                      "imagePullPolicy": "Never", "command": ["true"]}]}
    _apply(nodes, _pod("neverpull", spec))
    pod = _wait(nodes, "neverpull", _waiting)
    w = _waiting(pod)
    assert w["reason"] == "ErrImageNeverPull"
    assert locate(pod["spec"], w["name"], w["reason"], w["message"]) == "spec.containers[0].imagePullPolicy"


def test_an_init_container_that_must_finish_first(nodes):
    """The init container waits for a Service's name (CoreDNS answers it once the Service exists): the
    trainer never starts before; with the Service there, it reads what the init container wrote."""
    spec = {"restartPolicy": "Never", "volumes": [{"name": "work", "emptyDir": {}}],
            "initContainers": [{"name": "wait", "image": USER_IMG, "imagePullPolicy": "Never",
                                "command": ["sh", "-c", "until nslookup code-server.default.svc.cluster.local; "
                                            "do sleep 0.5; done; echo cloned > /work/code"],
                                "volumeMounts": [{"name": "work", "mountPath": "/work"}]}],
            "containers": [{"name": "main", "image": USER_IMG, "imagePullPolicy": "Never",
                            "command": ["cat", "/work/code"], "volumeMounts": [{"name": "work", "mountPath": "/work"}]}]}
    _apply(nodes, _pod("init-order", spec))
    pod = _wait(nodes, "init-order", lambda p: any(cs.get("state", {}).get("running")
                                                  for cs in p.get("status", {}).get("initContainerStatuses") or []))
    time.sleep(3)
    pod = nodes.cluster.get_json("pod", "init-order")
    assert pod["status"]["phase"] == "Pending"
    main = pod["status"]["containerStatuses"][0]
    assert main["state"]["waiting"]["reason"] == "PodInitializing" and not main.get("started")
    _apply(nodes, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "code-server", "namespace": "default"},
                   "spec": {"ports": [{"port": 80}], "selector": {"app": "none"}}})
    _wait(nodes, "init-order", _phase("Succeeded"), 90)
    assert _logs(nodes, "init-order", "main").strip() == "cloned"


def test_pods_reach_each_other_across_nodes_by_name_service_and_have_no_route_out(nodes):
    server = {"hostname": "server", "subdomain": "net", "nodeName": "node-1",
              "containers": [{"name": "srv", "image": USER_IMG, "imagePullPolicy": "Never",
                              "command": ["sh", "-c", "while true; do echo hello | nc -l -p 8080; done"]}]}
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "net", "namespace": "default"},
           "spec": {"clusterIP": "None", "selector": {"app": "server"}, "ports": [{"port": 8080}]}}
    vip = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "vip", "namespace": "default"},
           "spec": {"selector": {"app": "server"}, "ports": [{"port": 80, "targetPort": 8080}]}}
    pod = _pod("server", server)
    pod["metadata"]["labels"] = {"app": "server"}
    _apply(nodes, pod, svc, vip)
    srv = _wait(nodes, "server", _phase("Running"))
    assert srv["status"]["podIP"].startswith("100.65.1.")
    client = {"restartPolicy": "Never", "nodeName": "node-2",
              "containers": [{"name": "c", "image": USER_IMG, "imagePullPolicy": "Never", "command": ["sh", "-c",
                              "ip route; for a in server.net vip; do for i in $(seq 40); do "
                              "r=$(nc -w 2 $a.default.svc.cluster.local $([ $a = vip ] && echo 80 || echo 8080)) "
                              "&& [ -n \"$r\" ] && echo \"$a $r\" && break; sleep 0.5; done; done; "
                              "nslookup example.com >/dev/null 2>&1 && echo resolved-outside || echo refused"]}]}
    _apply(nodes, _pod("client", client))
    done = _wait(nodes, "client", _phase("Succeeded"), 90)
    assert done["status"]["podIP"].startswith("100.65.2.")
    out = _logs(nodes, "client", "c")
    routes = [ln.split()[0] for ln in out.splitlines() if " dev " in ln]
    assert "default" not in routes and "100.64.0.0/10" in routes, out
    assert "server.net hello" in out and "vip hello" in out and "refused" in out, out


def test_a_killed_container_is_restarted_by_the_kubelet(nodes):
    spec = {"containers": [{"name": "main", "image": USER_IMG, "imagePullPolicy": "Never",
                            "command": ["sleep", "3600"]}]}
    _apply(nodes, _pod("killed", spec))
    pod = _wait(nodes, "killed", _phase("Running"))
    node = next(x for x in nodes.nodes if x.name == pod["spec"]["nodeName"])
    cid = pod["status"]["containerStatuses"][0]["containerID"].split("//")[1]
    state = json.loads(subprocess.run(["runc", "--root", str(node.folder / "runc" / "k8s.io"), "state", cid],
                                      capture_output=True, text=True, check=True).stdout)
    os.kill(state["pid"], 9)
    pod = _wait(nodes, "killed", lambda p: p["status"]["containerStatuses"][0].get("restartCount", 0) >= 1
                and p["status"]["containerStatuses"][0]["state"].get("running"))
    last = pod["status"]["containerStatuses"][0]["lastState"]["terminated"]
    assert last["exitCode"] == 137 and last["reason"] == "Error"


def _c(command: str, **extra) -> dict:
    return {"name": "main", "image": USER_IMG, "imagePullPolicy": "Never", "command": ["sh", "-c", command], **extra}


_CACHE = "mkdir -p /home/user/.cache/torch && echo ok > /home/user/.cache/torch/kernels && echo cached"
_SHM = "dd if=/dev/zero of=/dev/shm/batch bs=1M count=96 2>&1 && echo shared"
_OOM = "dd if=/dev/zero of=/dev/null bs=64M count=1 && echo fits"
# (case, the broken pod's spec, its fixed twin's, what the kubelet reports of the broken one: exit code, reason,
# a line of its log)
HAZARDS = [
    ("readonly-cache",
     {"containers": [_c(_CACHE, securityContext={"readOnlyRootFilesystem": True})]},
     {"volumes": [{"name": "cache", "emptyDir": {}}],
      "containers": [_c(_CACHE, securityContext={"readOnlyRootFilesystem": True},
                        volumeMounts=[{"name": "cache", "mountPath": "/home/user/.cache"}])]},
     (1, "Error", "Read-only file system")),
    ("small-shm",          # containerd's default /dev/shm is 64 MiB (internal/cri/server defaultShmSize)
     {"containers": [_c(_SHM)]},
     {"volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}],
      "containers": [_c(_SHM, volumeMounts=[{"name": "shm", "mountPath": "/dev/shm"}])]},
     (1, "Error", "No space left on device")),
    ("hidden-code",
     {"volumes": [{"name": "data", "emptyDir": {}}],
      "containers": [_c("sh /app/train.sh", volumeMounts=[{"name": "data", "mountPath": "/app"}])]},
     {"volumes": [{"name": "data", "emptyDir": {}}],
      "containers": [_c("sh /app/train.sh", volumeMounts=[{"name": "data", "mountPath": "/app/data"}])]},
     (2, "Error", "can't open '/app/train.sh'")),
    ("oom",
     {"containers": [_c(_OOM, resources={"limits": {"memory": "32Mi"}})]},
     {"containers": [_c(_OOM, resources={"limits": {"memory": "128Mi"}})]},
     (137, "OOMKilled", None)),
]


@pytest.mark.parametrize("case,broken,fixed,expect", HAZARDS, ids=[h[0] for h in HAZARDS])
def test_a_hazard_only_a_node_shows_and_its_fixed_twin(nodes, case, broken, fixed, expect):
    _apply(nodes, _pod(f"{case}-broken", {"restartPolicy": "Never", **broken}),
           _pod(f"{case}-fixed", {"restartPolicy": "Never", **fixed}))
    pod = _wait(nodes, f"{case}-broken", lambda p: p.get("status", {}).get("phase") in ("Succeeded", "Failed"), 90)
    term = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    code, reason, line = expect
    log = _logs(nodes, f"{case}-broken")
    assert (pod["status"]["phase"], term["exitCode"], term["reason"]) == ("Failed", code, reason), (term, log)
    if line:
        assert line in log, log
    ok = _wait(nodes, f"{case}-fixed", lambda p: p.get("status", {}).get("phase") in ("Succeeded", "Failed"), 90)
    assert ok["status"]["phase"] == "Succeeded", (ok["status"], _logs(nodes, f"{case}-fixed"))


def test_sigterm_reaches_the_trainer_only_when_it_is_pid_1(nodes, tmp_path):
    """A pod deleted with a grace period: the trainer's checkpoint is written on SIGTERM only if the trainer
    gets it. Behind a shell that runs it as a child, PID 1 is the shell, which has no handler: the kernel
    drops SIGTERM to a namespace's init, the kubelet waits the grace period out and kills everything (the
    classic launcher that does not forward signals); with `exec`, the trainer is PID 1, saves and exits."""
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir(mode=0o777)
    ckpt.chmod(0o777)
    trainer = "trap 'echo saved > /ckpt/$POD; exit 0' TERM; while true; do sleep 0.2; done"
    for name, cmd in (("sigterm-broken", f"sh -c \"{trainer}\"; true"), ("sigterm-fixed", f"exec sh -c \"{trainer}\"")):
        spec = {"terminationGracePeriodSeconds": 4, "volumes": [{"name": "ckpt", "hostPath": {"path": str(ckpt)}}],
                "containers": [_c(cmd, env=[{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                                  volumeMounts=[{"name": "ckpt", "mountPath": "/ckpt"}])]}
        _apply(nodes, _pod(name, spec))
    for name in ("sigterm-broken", "sigterm-fixed"):
        _wait(nodes, name, _phase("Running"))
    time.sleep(1)
    took = {}
    for name in ("sigterm-broken", "sigterm-fixed"):
        t0 = time.monotonic()
        nodes.cluster.kubectl("delete", "pod", name, "--wait=true", "--timeout=60s")
        took[name] = time.monotonic() - t0
    assert (ckpt / "sigterm-fixed").read_text().strip() == "saved"
    assert not (ckpt / "sigterm-broken").exists()
    assert took["sigterm-broken"] >= 4 > took["sigterm-fixed"], took


def _leftovers(prefix: str, folder: str) -> list[str]:
    out = [ln for ln in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.splitlines()
           if ln.startswith(prefix)]
    out += [ln for ln in Path("/proc/self/mountinfo").read_text().splitlines() if folder in ln]
    out += [str(p) for p in Path("/sys/fs/cgroup").glob(f"*/{prefix}-*")]
    out += [f"pid {p}" for p in realnodes._pids_of(lambda pid, cmd: folder in cmd and "pytest" not in cmd)]
    out += [folder] if Path(folder).exists() else []
    return out


def test_cluster_up_with_a_real_node_and_nothing_left_when_its_owner_is_killed(tmp_path):
    """`kdt cluster up --real-nodes 1`, then its daemon SIGKILLed: the reaper removes every namespace, mount,
    cgroup and process; `down` says so and removes the folder."""
    env = {**os.environ, "KDT_LIVE_DIR": str(tmp_path / "live")}
    bins = Path(realnodes.build.cache_root()) / "bin"
    (tmp_path / "live").mkdir()
    (tmp_path / "live" / "bin").symlink_to(bins)         # the built binaries, not a new build
    up = subprocess.run([*KDT, "cluster", "up", "--name", "rn", "--control-plane-only", "--real-nodes", "1"],
                        capture_output=True, text=True, env=env, timeout=300)
    assert up.returncode == 0, up.stderr[-2000:]
    assert "1 real node(s) ready" in up.stderr
    st = subprocess.run([*KDT, "cluster", "status", "--name", "rn"], capture_output=True, text=True, env=env)
    assert "real nodes: node-1" in st.stdout and "kubelet-node-1" in st.stdout, st.stdout
    folder = tmp_path / "live" / "clusters" / "rn"
    prefix = realnodes.prefix_of(folder / "run")
    nodes_folder = str(realnodes.nodes_folder(folder / "run"))
    assert _leftovers(prefix, nodes_folder)
    os.kill(int((folder / "daemon.pid").read_text()), 9)
    end = time.monotonic() + 60
    while _leftovers(prefix, nodes_folder) and time.monotonic() < end:
        time.sleep(0.5)
    assert not _leftovers(prefix, nodes_folder)
    down = subprocess.run([*KDT, "cluster", "down", "--name", "rn"], capture_output=True, text=True, env=env)
    assert down.returncode == 0 and not folder.exists(), down.stderr
