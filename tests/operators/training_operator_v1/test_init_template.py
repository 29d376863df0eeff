"""The Training Operator's init container template (#26): read as the operator reads it, given by
.kdt-cluster.yaml or --pytorch-init-container-template, and named wherever the merge preview shows it."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from kdt import cluster_file as cluster
from kdt import podsecurity as PS
from kdt.documents import load_stream
from kdt.errors import UsageError
from kdt.merge_preview import Loader, expand_documents, explain_lines, pod_notes, summary_line
from kdt.operators.training_operator_v1 import expand as expand_to
from kdt.operators import injection as INJ
from kdt.operators.training_operator_v1 import pytorch_init as PI
from kdt.operators.training_operator_v1 import facts as TO1
from kdt.paths import ROOT

TEMPLATE = ROOT / "deploy" / "cluster" / "training-operator" / "initContainer.yaml"


def test_fields_trim_markers_comments_and_html_escaping():
    text = "a: {{ .MasterAddr }}\nb: '{{.InitContainerImage}}'  {{- /* gone */ -}}  \nc: {{.MaxTries}}\n"
    assert PI.execute(text, {"MasterAddr": "j-master-0", "InitContainerImage": "r/i:1+x<y>", "MaxTries": 3}) == \
        "a: j-master-0\nb: 'r/i:1&#43;x&lt;y&gt;'c: 3\n"      # html/template escapes the values, never the text
    with pytest.raises(PI.TemplateError, match=r"line 2: \{\{if .MaxTries\}\}: kdt reads the actions"):
        PI.execute("a: 1\n{{if .MaxTries}}x{{end}}", {"MaxTries": 1})
    with pytest.raises(PI.TemplateError, match="can't evaluate field Image"):
        PI.execute("image: {{.Image}}", {"MaxTries": 1})
    with pytest.raises(PI.TemplateError, match="unterminated"):
        PI.execute("image: {{.MaxTries", {"MaxTries": 1})


def test_the_output_must_be_a_list_of_containers(tmp_path):
    assert PI.InitTemplate("# nothing but a comment\n", "t").containers("j") == []   # null: no init container
    for text, why in (("name: x\n", "not a list of containers"), ("- [a\n", "not YAML")):
        with pytest.raises(PI.TemplateError, match=why):
            PI.InitTemplate(text, "t").containers("j")
        (tmp_path / "t.yaml").write_text(text)
        with pytest.raises(UsageError, match="would create no Worker pod"):
            PI.load(tmp_path / "t.yaml")
    with pytest.raises(UsageError, match="cannot read"):
        PI.load(tmp_path / "none.yaml")


def test_the_built_in_template_is_the_operators_default():
    assert PI.InitTemplate().containers("job") == [INJ.v1_init_container("job")]


def test_this_repositorys_cluster_file_names_the_shipped_template_and_it_is_restricted():
    c = cluster.load()
    assert c.file == cluster.DEFAULT_FILE and c.pytorch_init.text == TEMPLATE.read_text()
    assert c.pytorch_init.source == "template deploy/cluster/training-operator/initContainer.yaml"
    (init,) = c.pytorch_init.containers("mnist-ddp")
    assert init["name"] == INJ.V1_INIT_CONTAINER_NAME and init["image"] == INJ.V1_INIT_CONTAINER_IMAGE
    assert "nslookup mnist-ddp-master-0 " in init["command"][2] and "seq 100" in init["command"][2]
    # Restricted on its own, in a pod that sets nothing at pod level.
    assert PS.evaluate({}, {"initContainers": [init]}, "restricted", PS.NEWEST) == []


def test_cluster_file_and_command_line(tmp_path):
    (tmp_path / "t.yaml").write_text("- name: wait\n  image: {{.InitContainerImage}}\n  command: [sleep, '{{.MaxTries}}']\n")
    f = tmp_path / "c.yaml"
    f.write_text("trainingOperator:\n  pytorchInitContainerTemplateFile: t.yaml\n  pytorchInitContainerImage: busybox:1\n"
                 "  pytorchInitContainerMaxTries: 7\n")
    (c,) = cluster.load(str(f)).pytorch_init.containers("j")
    assert c == {"name": "wait", "image": "busybox:1", "command": ["sleep", "7"]}
    assert cluster.load(str(f), init_template=str(TEMPLATE)).pytorch_init.text == TEMPLATE.read_text()
    f.write_text("trainingOperator: {gangSchedulerName: volcano}\n")
    assert cluster.load(str(f)).options[TO1.GANG_OPTION] == "volcano"
    for bad in ("trainingOperator: {templateFile: t.yaml}\n", "[1]\n", "trainingOperator: {pytorchInitContainerMaxTries: x}\n",
                "trainingOperator: {gangSchedulerName: ''}\n"):
        f.write_text(bad)
        with pytest.raises(UsageError):
            cluster.load(str(f))


def test_the_merge_preview_injects_and_names_the_template():
    ddp = Path(__file__).resolve().parents[2] / "expand" / "fixtures" / "ddp.yaml"   # the merge preview's fixture
    docs, problems = load_stream(ddp.read_text(), "fixtures/ddp.yaml")
    assert not problems
    tmpl = PI.InitTemplate("- name: a\n  image: x\n- name: b\n  image: '{{.MasterAddr}}'\n", "template mine.yaml")
    pods, findings = expand_documents(docs, options=cluster.Cluster("c", tmpl).options)
    assert findings == []
    (worker,) = [e for e in pods if e.kind == "Pod" and e.name == "mnist-ddp-worker-0"]
    assert [(c["name"], c["image"]) for c in worker.obj["spec"]["initContainers"]] == [
        ("a", "x"), ("b", "mnist-ddp-master-0")]
    assert any("initContainers[1] = " in line and "from template mine.yaml" in line for line in explain_lines(worker))
    assert "Worker init containers from template mine.yaml" in summary_line("t", pods)
    assert pod_notes(worker)[0].startswith("init containers injected by the Training Operator from template mine.yaml")
    assert "Worker init containers from the operator's built-in template" in summary_line("t", expand_documents(docs)[0])
    broken = PI.InitTemplate("- name: {{.Nope}}\n", "template broken.yaml")
    out, (f,) = expand_to.expand(docs[0], Loader(), {PI.OPTION: broken})
    assert out == [] and f.rule == "expand" and f.path == "spec.pytorchReplicaSpecs.Worker"
    assert "creates no Worker pod: its init container template broken.yaml fails: line 1" in f.message


def test_merge_preview_cli_says_which_template(tmp_path, capsys):
    from kdt.cli import merge_preview
    assert merge_preview.main(["--summary", str(ROOT / "overlays" / "ddp")]) == 0
    assert "from template deploy/cluster/training-operator/initContainer.yaml" in capsys.readouterr().out
    (tmp_path / "t.yaml").write_text("[]\n")
    assert merge_preview.main(["--pytorch-init-container-template", str(tmp_path / "t.yaml"),
                               str(ROOT / "overlays" / "ddp")]) == 0
    out = capsys.readouterr().out
    assert f"injected by the Training Operator from template {tmp_path / 't.yaml'}" in out
    assert "initContainers" not in out


def test_the_component_gives_the_operator_the_template_and_the_flag(tmp_path):
    """deploy/cluster/training-operator on a stand-in for the operator's Deployment (bench/pod_security.py
    applies it to upstream's manifests of v1.8.1 and v1.9.4)."""
    shutil.copytree(TEMPLATE.parent, tmp_path / "component")
    (tmp_path / "deployment.yaml").write_text(yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "training-operator", "namespace": "kubeflow"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {
            "containers": [{"name": "training-operator", "image": "op:1", "command": ["/manager"]}]}}}}))
    (tmp_path / "kustomization.yaml").write_text("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                                                 "resources: [deployment.yaml]\ncomponents: [component]\n")
    out = subprocess.run([str(ROOT / ".venv" / "bin" / "kubectl"), "kustomize", str(tmp_path)],
                         capture_output=True, text=True, check=True).stdout
    objs = {o["kind"]: o for o in yaml.safe_load_all(out)}
    spec = objs["Deployment"]["spec"]["template"]["spec"]
    (c,) = spec["containers"]
    assert c["args"] == [f"{PI.FLAG}={PI.DEFAULT_FILE}"]
    assert c["volumeMounts"] == [{"name": "pytorch-init-container", "mountPath": "/etc/config", "readOnly": True}]
    cm = objs["ConfigMap"]
    assert spec["volumes"] == [{"name": "pytorch-init-container", "configMap": {"name": cm["metadata"]["name"]}}]
    assert cm["metadata"]["namespace"] == "kubeflow" and cm["data"] == {"initContainer.yaml": TEMPLATE.read_text()}
