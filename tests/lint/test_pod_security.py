"""Pod Security (#26): every control of baseline and restricted by policy version, the Windows and
user-namespace exemptions, and the lint rule pod-security (levels, namespaces, aliases, what the
operators inject). Fixtures are written here; the admission library's own test data is bench/pod_security.py's."""
from __future__ import annotations

import copy

import pytest

from kdt import podsecurity as PS
from kdt.documents import load_stream
from kdt.errors import UsageError
from kdt.findings import ERROR, WARNING, format_path
from kdt.lint import IGNORE_ANNOTATION_PREFIX, lint_documents
from kdt.lint import config as C

# A pod spec that meets "restricted" at every policy version.
OK = {"securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
      "containers": [{"name": "c", "image": "img:1",
                      "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}]}
C0 = ("containers", 0)
SC0 = C0 + ("securityContext",)


def spec_with(*changes) -> dict:
    """OK with (path, value) changes; value None deletes the key."""
    spec = copy.deepcopy(OK)
    for path, value in changes:
        cur = spec
        for p in path[:-1]:
            cur = cur.setdefault(p, {}) if isinstance(p, str) else cur[p]
        if value is None:
            cur.pop(path[-1], None)
        else:
            cur[path[-1]] = value
    return spec


def found(spec, level, minor, meta=None):
    return [(b.check, format_path(b.path)) for b in PS.evaluate(meta or {}, spec, level, minor)]


# (control, changes, metadata, level, version, expected (control, path) list)
CASES = [
    ("privileged", [(SC0 + ("privileged",), True)], None, "baseline", 35,
     [("privileged", "spec.containers[0].securityContext.privileged")]),
    ("allowPrivilegeEscalation", [(SC0 + ("allowPrivilegeEscalation",), None)], None, "restricted", 35,
     [("allowPrivilegeEscalation", "spec.containers[0].securityContext.allowPrivilegeEscalation")]),
    ("allowPrivilegeEscalation before the field (1.8)", [(SC0 + ("allowPrivilegeEscalation",), None)], None,
     "restricted", 7, []),
    ("capabilities_baseline", [(SC0 + ("capabilities", "add"), ["CHOWN", "SYS_ADMIN"])], None, "baseline", 35,
     [("capabilities_baseline", "spec.containers[0].securityContext.capabilities.add[1]")]),
    ("capabilities_baseline in restricted before 1.22", [(SC0 + ("capabilities", "add"), ["SYS_ADMIN"])], None,
     "restricted", 21, [("capabilities_baseline", "spec.containers[0].securityContext.capabilities.add[0]")]),
    ("capabilities_restricted replaces it from 1.22", [(SC0 + ("capabilities", "add"), ["CHOWN"])], None,
     "restricted", 22, [("capabilities_restricted", "spec.containers[0].securityContext.capabilities.add[0]")]),
    ("capabilities_restricted: drop ALL", [(SC0 + ("capabilities",), None)], None, "restricted", 35,
     [("capabilities_restricted", "spec.containers[0].securityContext.capabilities.drop")]),
    ("hostNamespaces", [(("hostPID",), True), (("hostIPC",), False)], None, "baseline", 35,
     [("hostNamespaces", "spec.hostPID")]),
    ("hostPathVolumes", [(("volumes",), [{"name": "v", "hostPath": {"path": "/x"}}])], None, "baseline", 35,
     [("hostPathVolumes", "spec.volumes[0].hostPath")]),
    ("restrictedVolumes replaces hostPathVolumes", [(("volumes",), [{"name": "v", "hostPath": {"path": "/x"}}])],
     None, "restricted", 35, [("restrictedVolumes", "spec.volumes[0].hostPath")]),
    ("restrictedVolumes", [(("volumes",), [{"name": "a", "nfs": {"server": "s", "path": "/"}},
                                           {"name": "b", "projected": {"sources": []}}, {"name": "c"}])],
     None, "restricted", 35, [("restrictedVolumes", "spec.volumes[0].nfs")]),   # no source: an emptyDir
    ("hostPorts", [(C0 + ("ports",), [{"containerPort": 80}, {"containerPort": 81, "hostPort": 8081}])], None,
     "baseline", 35, [("hostPorts", "spec.containers[0].ports[1].hostPort")]),
    ("hostProbesAndHostLifecycle", [(C0 + ("livenessProbe",), {"httpGet": {"port": 80, "host": "10.0.0.1"}}),
                                    (C0 + ("lifecycle",), {"preStop": {"tcpSocket": {"port": 1, "host": "h"}}})],
     None, "baseline", 34, [("hostProbesAndHostLifecycle", "spec.containers[0].livenessProbe.httpGet.host"),
                            ("hostProbesAndHostLifecycle", "spec.containers[0].lifecycle.preStop.tcpSocket.host")]),
    ("hostProbesAndHostLifecycle from 1.34", [(C0 + ("readinessProbe",), {"httpGet": {"port": 80, "host": "h"}})],
     None, "baseline", 33, []),
    ("windowsHostProcess", [(("securityContext", "windowsOptions"), {"hostProcess": True})], None, "baseline", 35,
     [("windowsHostProcess", "spec.securityContext.windowsOptions.hostProcess")]),
    ("procMount", [(SC0 + ("procMount",), "Unmasked")], None, "baseline", 35,
     [("procMount", "spec.containers[0].securityContext.procMount")]),
    ("procMount in a user namespace, baseline 1.35", [(SC0 + ("procMount",), "Unmasked"), (("hostUsers",), False)],
     None, "baseline", 35, []),
    ("procMount in a user namespace, baseline 1.34", [(SC0 + ("procMount",), "Unmasked"), (("hostUsers",), False)],
     None, "baseline", 34, [("procMount", "spec.containers[0].securityContext.procMount")]),
    ("procMount_restricted", [(SC0 + ("procMount",), "Unmasked"), (("hostUsers",), False)], None, "restricted", 35,
     [("procMount_restricted", "spec.containers[0].securityContext.procMount")]),
    ("runAsNonRoot explicit", [(("securityContext", "runAsNonRoot"), False)], None, "restricted", 35,
     [("runAsNonRoot", "spec.securityContext.runAsNonRoot"),
      ("runAsNonRoot", "spec.containers[0].securityContext.runAsNonRoot")]),
    ("runAsNonRoot unset", [(("securityContext", "runAsNonRoot"), None)], None, "restricted", 35,
     [("runAsNonRoot", "spec.containers[0].securityContext.runAsNonRoot")]),
    ("runAsNonRoot in a user namespace from 1.35", [(("securityContext", "runAsNonRoot"), None),
                                                    (("hostUsers",), False)], None, "restricted", 35, []),
    ("runAsUser", [(SC0 + ("runAsUser",), 0), (("securityContext", "runAsUser"), 1000)], None, "restricted", 23,
     [("runAsUser", "spec.containers[0].securityContext.runAsUser")]),
    ("runAsUser from 1.23", [(SC0 + ("runAsUser",), 0)], None, "restricted", 22, []),
    ("runAsUser in a user namespace from 1.35", [(SC0 + ("runAsUser",), 0), (("hostUsers",), False)], None,
     "restricted", 35, []),
    ("seccompProfile_baseline (fields)", [(SC0 + ("seccompProfile",), {"type": "Unconfined"})], None, "baseline", 35,
     [("seccompProfile_baseline", "spec.containers[0].securityContext.seccompProfile.type")]),
    ("seccompProfile_baseline (annotations before 1.19)", [],
     {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined",
                      "container.seccomp.security.alpha.kubernetes.io/c": "runtime/default"}}, "baseline", 18,
     [("seccompProfile_baseline", 'metadata.annotations["seccomp.security.alpha.kubernetes.io/pod"]')]),
    ("seccompProfile_restricted", [(("securityContext", "seccompProfile"), None)], None, "restricted", 35,
     [("seccompProfile_restricted", "spec.containers[0].securityContext.seccompProfile.type")]),
    ("appArmorProfile", [(SC0 + ("appArmorProfile",), {"type": "Unconfined"})],
     {"annotations": {"container.apparmor.security.beta.kubernetes.io/c": "unconfined"}}, "baseline", 35,
     [("appArmorProfile", "spec.containers[0].securityContext.appArmorProfile.type"),
      ("appArmorProfile", 'metadata.annotations["container.apparmor.security.beta.kubernetes.io/c"]')]),
    ("seLinuxOptions", [(("securityContext", "seLinuxOptions"), {"type": "container_engine_t", "user": "u"})],
     None, "baseline", 30, [("seLinuxOptions", "spec.securityContext.seLinuxOptions.type")]),
    ("seLinuxOptions: container_engine_t from 1.31", [(("securityContext", "seLinuxOptions"),
                                                      {"type": "container_engine_t"})], None, "baseline", 31, []),
    ("sysctls", [(("securityContext", "sysctls"), [{"name": "net.ipv4.tcp_rmem", "value": "1"},
                                                   {"name": "net.ipv4.tcp_notsent_lowat", "value": "1"},
                                                   {"name": "kernel.msgmax", "value": "1"}])], None, "baseline", 32,
     [("sysctls", "spec.securityContext.sysctls[1].name"), ("sysctls", "spec.securityContext.sysctls[2].name")]),
    ("sysctls of 1.37", [(("securityContext", "sysctls"), [{"name": "net.ipv4.tcp_notsent_lowat", "value": "1"}])],
     None, "baseline", 37, []),
]


@pytest.mark.parametrize("name,changes,meta,level,minor,want", CASES, ids=[c[0] for c in CASES])
def test_each_control_by_policy_version(name, changes, meta, level, minor, want):
    assert found(spec_with(*changes), level, minor, meta) == want


def test_the_cases_cover_every_control():
    assert {c for case in CASES for c, _ in case[5]} == set(PS.BY_ID)


def test_windows_pods_are_exempt_where_kubernetes_exempts_them():
    bare = {"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": True},
            "containers": [{"name": "c", "image": "img:1"}]}
    assert found(bare, "restricted", 25) == []
    assert [c for c, _ in found(bare, "restricted", 24)] == ["allowPrivilegeEscalation", "capabilities_restricted",
                                                              "seccompProfile_restricted"]
    linux = dict(bare, os={"name": "linux"})
    assert len(found(linux, "restricted", 37)) == 3
    # The exemption covers those three only: runAsNonRoot and the baseline controls still apply.
    assert [c for c, _ in found(dict(bare, securityContext={}, hostNetwork=True), "restricted", 37)] == [
        "hostNamespaces", "runAsNonRoot"]


def test_every_container_list_is_visited_and_worded_as_the_admission_plugin_does():
    spec = spec_with((("initContainers",), [{"name": "init", "image": "i"}]),
                     (("ephemeralContainers",), [{"name": "debug", "image": "i", "securityContext": {
                         "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"], "add": ["SYS_PTRACE"]}}}]))
    got = [(b.check, b.reason, b.detail) for b in PS.evaluate({}, spec, "restricted", 35)]
    assert got == [
        ("allowPrivilegeEscalation", "allowPrivilegeEscalation != false",
         'container "init" must set securityContext.allowPrivilegeEscalation=false'),
        ("capabilities_restricted", "unrestricted capabilities",
         'container "init" must set securityContext.capabilities.drop=["ALL"]'),
        ("capabilities_restricted", "unrestricted capabilities",
         'container "debug" must not include "SYS_PTRACE" in securityContext.capabilities.add'),
    ]


def test_levels_versions_and_namespace_labels():
    assert PS.enforced({}) == (PS.LevelVersion("privileged", None), [])
    lv, problems = PS.enforced({"pod-security.kubernetes.io/enforce": "baseline",
                                "pod-security.kubernetes.io/enforce-version": "v1.22"})
    assert (str(lv), problems) == ("baseline:v1.22", [])
    lv, problems = PS.enforced({"pod-security.kubernetes.io/enforce": "strict",
                                "pod-security.kubernetes.io/enforce-version": "1.22"})
    assert str(lv) == "restricted:latest" and len(problems) == 2    # fails closed, as the plugin does
    assert PS.effective(None, 35) == 35 and PS.effective(99, 35) == PS.NEWEST == 37
    ids = [c.id for c, _ in PS.controls("restricted", 35)]
    assert ids[:2] == ["appArmorProfile", "hostNamespaces"] and ids[-1] == "seccompProfile_restricted"
    assert "procMount" not in ids and "procMount_restricted" in ids and "hostPathVolumes" not in ids
    assert PS.controls("privileged", 35) == []


# ------------------------------------------------------------------------------------ the lint rule

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: NS, annotations: ANN}
spec:
  hostNetwork: true
  volumes: [{name: v, hostPath: {path: /x}}]
  containers: [{name: c, image: 'img:1'}]
"""


def lint(text, **kw):
    docs, problems = load_stream(text, "t.yaml")
    assert not problems
    return [f for f in lint_documents(docs, **kw) if f.rule == "pod-security"]


def pod(ns="team-a", ann="{}"):
    return POD.replace("NS", ns).replace("ANN", ann)


def namespace(name="team-a", **labels):
    body = "".join(f"\n    pod-security.kubernetes.io/{k.replace('_', '-')}: '{v}'" for k, v in labels.items())
    return f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n  labels:{body or ' {}'}\n---\n"


def test_a_pod_is_a_warning_per_field_naming_the_control_and_the_policy():
    fs = lint(pod())
    assert {f.level for f in fs} == {WARNING}
    assert sorted((f.extra["control"], f.path) for f in fs) == [
        ("allowPrivilegeEscalation", "spec.containers[0].securityContext.allowPrivilegeEscalation"),
        ("capabilities_restricted", "spec.containers[0].securityContext.capabilities.drop"),
        ("hostNamespaces", "spec.hostNetwork"),
        ("restrictedVolumes", "spec.volumes[0].hostPath"),
        ("runAsNonRoot", "spec.containers[0].securityContext.runAsNonRoot"),
        ("seccompProfile_restricted", "spec.containers[0].securityContext.seccompProfile.type"),
    ]
    f = next(f for f in fs if f.extra["control"] == "restrictedVolumes")
    assert f.message == ('the pod would violate PodSecurity "restricted:v1.35": restricted volume types (volume "v" uses '
                         'restricted volume type "hostPath") [control restrictedVolumes]')
    assert f.line == 6 and f.col == 33         # the hostPath mapping of the volume
    assert "v1.25" in lint(pod(), kubernetes_version="1.25")[0].message


def test_an_enforcing_namespace_of_the_stream_makes_its_pods_errors():
    fs = lint(namespace(enforce="baseline") + pod())
    errors = {f.extra["control"]: f for f in fs if f.level == ERROR}
    assert set(errors) == {"hostNamespaces", "hostPathVolumes"}       # baseline:latest, at 1.35
    assert errors["hostNamespaces"].message.startswith(
        'the pod would be rejected in namespace "team-a" (baseline enforced): violates PodSecurity "baseline:latest": host namespaces')
    assert len([f for f in fs if f.path == "spec.volumes[0].hostPath"]) == 1     # one finding per field
    assert {f.level for f in lint(namespace(enforce="restricted") + pod(ns="other"))} == {WARNING}
    versioned = lint(namespace(enforce="restricted", enforce_version="v1.20") + pod())
    by_level = {lvl: {f.extra["control"] for f in versioned if f.level == lvl} for lvl in (ERROR, WARNING)}
    assert by_level[WARNING] == {"capabilities_restricted"}       # a control of 1.22: not enforced at v1.20
    assert all('PodSecurity "restricted:v1.20"' in f.message for f in versioned if f.level == ERROR)
    bad = lint(namespace(enforce="strict") + pod())
    assert [f.path for f in bad if f.kind == "Namespace"] == ['metadata.labels["pod-security.kubernetes.io/enforce"]']
    assert {f.level for f in bad if f.kind == "Pod"} == {ERROR}                  # an unknown level enforces restricted


def test_profile_and_version_options():
    base = C.parse({"rules": {"pod-security": {"options": {"profile": "baseline"}}}})
    assert {f.extra["control"] for f in lint(pod(), config=base)} == {"hostNamespaces", "hostPathVolumes"}
    old = C.parse({"rules": {"pod-security": {"options": {"version": "v1.18"}}}})
    assert "seccompProfile_restricted" not in {f.extra["control"] for f in lint(pod(), config=old)}
    with pytest.raises(UsageError, match="profile"):
        lint(pod(), config=C.parse({"rules": {"pod-security": {"options": {"profile": "strict"}}}}))


@pytest.mark.parametrize("alias,gone", [
    ("host-namespace", {"hostNamespaces"}), ("host-path", {"restrictedVolumes"}),
    ("pod-security.runAsNonRoot", {"runAsNonRoot"}), ("privilege-escalation", {"allowPrivilegeEscalation"}),
    ("pod-security-restricted", None), ("pod-security", None),
])
def test_former_rule_ids_and_control_names_still_ignore_their_findings(alias, gone):
    everything = {f.extra["control"] for f in lint(pod())}
    left = {f.extra["control"] for f in lint(pod(ann="{%s: 'lab cluster'}" % (IGNORE_ANNOTATION_PREFIX + alias)))}
    assert left == (set() if gone is None else everything - gone)
    cfg = C.parse({"ignore": [{"rules": [alias], "paths": ["t.yaml"], "reason": "lab cluster"}]})
    assert {f.extra["control"] for f in lint(pod(), config=cfg)} == left


def test_levels_and_disable_by_alias():
    cfg = C.parse({"rules": {"host-path": "error", "host-namespace": "disable"}})
    got = {f.extra["control"]: f.level for f in lint(pod(), config=cfg)}
    assert got["restrictedVolumes"] == ERROR and "hostNamespaces" not in got and got["runAsNonRoot"] == WARNING
    with pytest.raises(UsageError, match="alias of pod-security"):
        C.parse({"rules": {"privileged": {"options": {"profile": "baseline"}}}})


PYTORCHJOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: job, namespace: team-a}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template: &pod
        spec:
          securityContext: {runAsNonRoot: true, runAsUser: 1000, seccompProfile: {type: RuntimeDefault}}
          containers:
            - name: pytorch
              image: trainer:1
              securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
    Worker:
      replicas: 2
      template: *pod
"""


def test_the_training_operators_init_container_is_judged_in_the_worker_pods():
    from kdt import cluster_file as cluster
    fs = lint(PYTORCHJOB)
    assert sorted((f.path, f.level) for f in fs) == [
        ("spec.pytorchReplicaSpecs.Worker.template.spec.initContainers[0].securityContext.allowPrivilegeEscalation", WARNING),
        ("spec.pytorchReplicaSpecs.Worker.template.spec.initContainers[0].securityContext.capabilities.drop", WARNING)]
    assert all(f.message.startswith("Worker pods would violate") and
               "injected by the Training Operator init container (pytorch/initcontainer.go), from the operator's "
               "built-in template" in f.message and 'container "init-pytorch"' in f.message for f in fs)
    assert {f.level for f in lint(namespace(enforce="restricted") + PYTORCHJOB)} == {ERROR}
    assert lint(namespace(enforce="restricted") + PYTORCHJOB, cluster=cluster.load()) == []   # this repository's template


RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: rt}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
            spec:
              template:
                spec:
                  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
                  containers:
                    - name: node
                      image: trainer:1
                      securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
---
"""
TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: j, namespace: team-a}
spec:
  runtimeRef: {name: rt}
  runtimePatches:
    - manager: example.com/me
      trainingRuntimeSpec:
        template:
          spec:
            replicatedJobs:
              - name: node
                template:
                  spec:
                    template:
                      spec:
                        securityContext: {runAsNonRoot: false}
"""


def test_a_trainjobs_patch_is_reported_where_the_patch_writes_it():
    fs = lint(RUNTIME + TRAINJOB)
    patch = "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec"
    assert sorted((f.kind, f.path) for f in fs) == [
        ("TrainJob", f"{patch}.containers[0].securityContext.runAsNonRoot"),
        ("TrainJob", f"{patch}.securityContext.runAsNonRoot")]
    assert all("of ClusterTrainingRuntime 'rt' merged with this TrainJob" in f.message for f in fs)
    assert lint(RUNTIME + TRAINJOB.replace("false}", "true}")) == []


def test_a_runtimes_own_breach_is_an_error_on_the_runtime_where_its_trainjob_is_enforced():
    bare = RUNTIME.replace("                      securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}\n", "")
    job = TRAINJOB.replace("false}", "true}")
    warned = lint(bare + job)
    assert {(f.kind, f.level) for f in warned} == {("ClusterTrainingRuntime", WARNING)} and len(warned) == 2
    enforced = lint(namespace(enforce="restricted") + bare + job)
    assert {(f.kind, f.level) for f in enforced} == {("ClusterTrainingRuntime", ERROR)} and len(enforced) == 2
    assert all("for TrainJob 'j', would be rejected in namespace \"team-a\"" in f.message for f in enforced)


def test_a_chart_objects_namespace_is_the_release_namespace():
    from kdt import targets as T
    from kdt.lint.engine import run_rules
    from kdt.render import HELM_NAMESPACE
    docs, _ = load_stream(namespace(HELM_NAMESPACE, enforce="restricted") + POD.replace("namespace: NS, ", "")
                          .replace("ANN", "{}"), "t.yaml")
    helm = T.Target("charts/x/ci/a.yaml", T.HELM, T.ROOT / "charts/x/ci/a.yaml", T.ROOT / "charts/x")
    levels = {f.level for f in run_rules(docs, "2.3", target=helm) if f.rule == "pod-security"}
    assert levels == {ERROR}
    assert {f.level for f in run_rules(docs, "2.3") if f.rule == "pod-security"} == {WARNING}


def test_cli_pod_security_and_kubernetes_version(tmp_path, capsys):
    from kdt.cli import lint as cli
    f = tmp_path / "p.yaml"
    f.write_text(pod())
    assert cli.main([str(f), "--pod-security", "baseline:v1.30"]) == 0
    out = capsys.readouterr().out
    assert 'PodSecurity "baseline:v1.30"' in out and "runAsNonRoot" not in out
    assert cli.main([str(f), "--kubernetes-version", "1.28"]) == 0
    assert 'PodSecurity "restricted:v1.28"' in capsys.readouterr().out
    with pytest.raises(UsageError, match="version"):
        cli.main([str(f), "--pod-security", "restricted:one"])
