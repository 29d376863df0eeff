"""The API server's own validation (kdt.apivalidation): each rule on fixtures written here, located.

The references are the Kubernetes functions named in each module's docstring; the valid and invalid
cases below are the project's own, one or more per rule.
"""
from __future__ import annotations

import pytest

from kdt.documents import load_stream
from kdt.validate import validate_documents


def check(text: str, **kw):
    docs, problems = load_stream(text, "t.yaml")
    assert not problems, problems
    return validate_documents(docs, **kw)


def api(text: str, **kw):
    """(rule, path, message) of every API-server finding (the schema's left out)."""
    return [(f.rule, f.path, f.message) for f in check(text, **kw) if f.rule.startswith("api-")]


ISSUE_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: BadName_x
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: Main_Container
          image: ghcr.io/example/train:1.0
          ports:
            - containerPort: 70000
              name: a-port-name-of-thirty-chars-xx
          resources:
            requests:
              memory: 16GB
              cpu: "two"
"""


def test_the_job_of_the_issue_gets_one_located_error_per_bad_field():
    found = check(ISSUE_JOB)
    got = sorted((f.line, f.col, f.rule, f.path) for f in found)
    c = "spec.template.spec.containers[0]"
    assert got == [
        (4, 9, "api-name", "metadata.name"),
        (10, 17, "api-container", f"{c}.name"),
        (13, 30, "api-port", f"{c}.ports[0].containerPort"),
        (14, 21, "api-port", f"{c}.ports[0].name"),
        (17, 23, "api-quantity", f"{c}.resources.requests.memory"),
        (18, 20, "api-quantity", f"{c}.resources.requests.cpu"),
    ]
    assert all(f.level == "error" and (f.kind, f.name, f.doc) == ("Job", "BadName_x", 0) for f in found)
    by_path = {f.path: f.message for f in found}
    assert "must be between 1 and 65535" in by_path[f"{c}.ports[0].containerPort"]
    assert "must be no more than 15 characters" in by_path[f"{c}.ports[0].name"]
    assert by_path[f"{c}.resources.requests.memory"].startswith('Invalid value: "16GB": quantities must match')


def test_the_same_job_written_right_is_accepted():
    good = (ISSUE_JOB.replace("BadName_x", "good-name").replace("Main_Container", "main")
            .replace("70000", "7000").replace("a-port-name-of-thirty-chars-xx", "metrics")
            .replace("16GB", "16G").replace('"two"', '"2"'))
    assert check(good) == []


POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: p}}
spec:
  containers:
    - name: c
      image: i
{container}
"""


def pod(container: str = "", spec: str = "") -> str:
    return POD.format(container="\n".join("      " + ln for ln in container.splitlines())) + \
        "\n".join("  " + ln for ln in spec.splitlines())


@pytest.mark.parametrize("amount", ["16G", "16Gi", "1e3", "100m", "'0.5'", "2", "1.5", ".5", "1.", "'  4Gi '"])
def test_quantities_the_api_server_reads(amount):
    assert api(pod(f"resources: {{limits: {{memory: {amount}}}}}")) == []


@pytest.mark.parametrize("amount,fragment", [
    ("16GB", "quantities must match"), ("two", "quantities must match"), ("'1 Gi'", "quantities must match"),
    ("0.1mi", "unable to parse quantity's suffix"), ("1i", "unable to parse quantity's suffix"),
])
def test_quantities_the_api_server_refuses(amount, fragment):
    (rule, path, message), = api(pod(f"resources: {{limits: {{memory: {amount}}}}}"))
    assert (rule, path) == ("api-quantity", "spec.containers[0].resources.limits.memory") and fragment in message


@pytest.mark.parametrize("resources,path,fragment", [
    ("{requests: {nvidia.com/gpu: 1}}", "spec.containers[0].resources.limits", "Limit must be set"),
    ("{requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 2}}", 'spec.containers[0].resources.requests["nvidia.com/gpu"]',
     "must be equal to nvidia.com/gpu limit of 2"),
    ("{requests: {cpu: 2}, limits: {cpu: 1}}", "spec.containers[0].resources.requests.cpu", "must be less than or equal"),
    ("{limits: {nvidia.com/gpu: 0.5}}", 'spec.containers[0].resources.limits["nvidia.com/gpu"]', "must be an integer"),
    ("{limits: {gpu: 1}}", "spec.containers[0].resources.limits.gpu", "must be a standard resource for containers"),
    ("{limits: {memory: -1Gi}}", "spec.containers[0].resources.limits.memory", "must be greater than or equal to 0"),
    ("{limits: {hugepages-2Mi: 3Mi, memory: 1Gi}}", "spec.containers[0].resources.limits.hugepages-2Mi",
     "is not positive integer multiple"),
    ("{limits: {hugepages-2Mi: 4Mi}}", "spec.containers[0].resources", "HugePages require cpu or memory"),
])
def test_resources(resources, path, fragment):
    (rule, got, message), = api(pod(f"resources: {resources}"))
    assert (rule, got) == ("api-resources", path) and fragment in message, message


def test_resources_the_api_server_takes():
    for res in ("{limits: {nvidia.com/gpu: 2}}", "{requests: {nvidia.com/gpu: 2}, limits: {nvidia.com/gpu: 2}}",
                "{requests: {cpu: 500m}, limits: {cpu: 1}}", "{limits: {hugepages-2Mi: 4Mi, memory: 1Gi}}",
                "{requests: {example.com/foo: 3}, limits: {example.com/foo: 3}}"):
        assert api(pod(f"resources: {res}")) == [], res


@pytest.mark.parametrize("text,rule,path,fragment", [
    # names per kind: Service DNS-1035, StatefulSet DNS-1123 label, the rest subdomains; namespaces labels
    ("apiVersion: v1\nkind: Service\nmetadata: {name: 1svc}\nspec: {ports: [{port: 80}]}\n",
     "api-name", "metadata.name", "DNS-1035 label"),
    ("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: a.b}\nspec: {selector: {matchLabels: {a: b}}, "
     "template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}}}\n",
     "api-name", "metadata.name", "must not contain dots"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok, namespace: Team_A}\n",
     "api-name", "metadata.namespace", "RFC 1123 label"),
    ("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: " + "c" * 53 + "}\nspec: {schedule: '* * * * *', "
     "jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}}}}\n",
     "api-name", "metadata.name", "must be no more than 52 characters"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: Cfg-}\n",
     "api-name", "metadata.generateName", "RFC 1123 subdomain"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {a: b}}\n",
     "api-name", "metadata", "name or generateName is required"),
    ("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: Job_1}\nspec: {pytorchReplicaSpecs: {}}\n",
     "api-name", "metadata.name", "RFC 1123 subdomain"),
    # labels and annotations
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, labels: {a/b/c: x}}\n",
     "api-labels", 'metadata.labels["a/b/c"]', "a valid label key"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, labels: {a: " + "v" * 64 + "}}\n",
     "api-labels", "metadata.labels.a", "must be no more than 63 characters"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, annotations: {'bad key': x}}\n",
     "api-annotations", 'metadata.annotations["bad key"]', "name part"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, annotations: {big: " + "x" * (256 * 1024) + "}}\n",
     "api-annotations", "metadata.annotations", "may not be more than 262144 bytes"),
])
def test_metadata(text, rule, path, fragment):
    found = api(text)
    assert any(r == rule and p == path and fragment in m for r, p, m in found), found


def test_generate_name_is_judged_as_the_name_the_api_server_makes_of_it():
    ok = "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: train-}\n"
    assert api(ok) == []
    # a prefix the mask lets through, whose generated name is no subdomain: `a.-` + 5 random characters
    (rule, path, message), = api(ok.replace("train-", "a.-"))
    assert (rule, path) == ("api-name", "metadata.generateName") and '"a.-bcdfg" (the name generated from it)' in message


def test_cel_rules_on_metadata_name_see_the_generated_name():
    # The TrainJob CRD's CEL rules read self.metadata.name: the API server has generated it before they run.
    tj = ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {generateName: fsdp-}\n"
          "spec: {runtimeRef: {name: torch-distributed}}\n")
    assert check(tj, trainer_version="2.3") == []
    bad = [f for f in check(tj.replace("fsdp-", "Fsdp-"), trainer_version="2.3")]
    assert {f.rule for f in bad} == {"schema", "api-name"}      # the CRD's CEL rule and the name check


@pytest.mark.parametrize("container,path,rule,fragment", [
    ("ports: [{containerPort: 80, name: a}, {containerPort: 81, name: a}]", "spec.containers[0].ports[1].name",
     "api-port", "Duplicate value"),
    ("ports: [{containerPort: 0}]", "spec.containers[0].ports[0].containerPort", "api-port", "Required value"),
    ("ports: [{containerPort: 80, name: HTTP}]", "spec.containers[0].ports[0].name", "api-port", "alpha-numeric"),
    ("ports: [{containerPort: 80, protocol: HTTP}]", "spec.containers[0].ports[0].protocol", "api-port",
     "Unsupported value"),
    ("env: [{name: A=B, value: x}]", "spec.containers[0].env[0].name", "api-env", "other than '='"),
    ("env: [{name: A, valueFrom: {}}]", "spec.containers[0].env[0].valueFrom", "api-env", "must specify one of"),
    ("env: [{name: A, value: x, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]",
     "spec.containers[0].env[0].valueFrom", "api-env", "may not be specified when `value` is not empty"),
    ("env: [{name: A, valueFrom: {fieldRef: {fieldPath: spec.hostname}}}]",
     "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath", "api-env", "Unsupported value"),
    ("env: [{name: A, valueFrom: {secretKeyRef: {name: s}}}]", "spec.containers[0].env[0].valueFrom.secretKeyRef.key",
     "api-env", "Required value"),
    ("envFrom: [{prefix: P_, configMapRef: {name: a}, secretRef: {name: b}}]", "spec.containers[0].envFrom",
     "api-env", "more than one"),
    ("volumeMounts: [{name: nowhere, mountPath: /x}]", "spec.containers[0].volumeMounts[0].name", "api-volume",
     "Not found"),
    ("imagePullPolicy: Sometimes", "spec.containers[0].imagePullPolicy", "api-container", "Unsupported value"),
    ("livenessProbe: {periodSeconds: 5}", "spec.containers[0].livenessProbe", "api-probe", "must specify a handler type"),
    ("livenessProbe: {exec: {command: [x]}, tcpSocket: {port: 80}}", "spec.containers[0].livenessProbe.tcpSocket",
     "api-probe", "more than 1 handler type"),
    ("livenessProbe: {exec: {command: [x]}, successThreshold: 2}", "spec.containers[0].livenessProbe.successThreshold",
     "api-probe", "must be 1"),
    ("readinessProbe: {httpGet: {port: 70000}}", "spec.containers[0].readinessProbe.httpGet.port", "api-probe",
     "between 1 and 65535"),
    ("lifecycle: {preStop: {sleep: {seconds: 40}}}", "spec.containers[0].lifecycle.preStop.sleep", "api-probe",
     "less than terminationGracePeriodSeconds (30)"),
])
def test_containers(container, path, rule, fragment):
    found = api(pod(container))
    assert any(r == rule and p == path and fragment in m for r, p, m in found), found


def test_a_regular_containers_restart_policy_is_refused_before_1_34_only():
    """ContainerRestartRules (pkg/features/kube_features.go: alpha 1.34, on by default 1.35) allows it; where
    the gate is off, pkg/api/pod/util.go dropContainerRestartRules drops the field before validation."""
    found = api(pod("restartPolicy: Never"), kubernetes_version="1.33")
    assert ("api-container", "spec.containers[0].restartPolicy", "Forbidden: may not be set for non-init containers") in found
    assert api(pod("restartPolicy: Never"), kubernetes_version="1.34") == []


@pytest.mark.parametrize("spec,path,rule,fragment", [
    ("volumes: [{name: v, emptyDir: {}}, {name: v, emptyDir: {}}]", "spec.volumes[1].name", "api-volume", "Duplicate"),
    ("volumes: [{name: v, emptyDir: {}, configMap: {name: c}}]", "spec.volumes[0].configMap", "api-volume",
     "more than 1 volume type"),
    ("volumes: [{name: V, emptyDir: {}}]", "spec.volumes[0].name", "api-volume", "RFC 1123 label"),
    ("volumes: [{name: v, configMap: {}}]", "spec.volumes[0].configMap.name", "api-volume", "Required value"),
    ("volumes: [{name: v, emptyDir: {sizeLimit: 8GB}}]", "spec.volumes[0].emptyDir.sizeLimit", "api-quantity", ""),
    ("restartPolicy: Sometimes", "spec.restartPolicy", "api-restart-policy", "Unsupported value"),
    ("dnsPolicy: Cluster", "spec.dnsPolicy", "api-pod", "Unsupported value"),
    ("hostname: Host_1", "spec.hostname", "api-pod", "RFC 1123 label"),
    ("nodeSelector: {'gpu type': a100}", 'spec.nodeSelector["gpu type"]', "api-labels", "name part"),
    ("tolerations: [{key: k, operator: Exists, value: v}]", "spec.tolerations[0].operator", "api-pod",
     "value must be empty"),
    ("initContainers: [{name: c, image: i}]", "spec.initContainers[0].name", "api-container", "Duplicate"),
])
def test_pod_specs(spec, path, rule, fragment):
    found = api(pod(spec=spec))
    assert any(r == rule and p == path and fragment in m for r, p, m in found), found


def test_environment_variable_names_follow_the_cluster_version():
    # RelaxedEnvironmentVariableValidation is on by default from Kubernetes 1.32: `1BAD` is a name there.
    text = pod("env: [{name: 1BAD, value: x}]")
    assert api(text, kubernetes_version="1.35") == []
    (rule, path, message), = api(text, kubernetes_version="1.31")
    assert (rule, path) == ("api-env", "spec.containers[0].env[0].name") and "must not start with a digit" in message


JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {{name: {name}}}
spec:
{spec}
  template:
    metadata: {{labels: {{app: a}}}}
    spec:
      {restart}
      containers: [{{name: c, image: i}}]
"""


@pytest.mark.parametrize("spec,restart,path,rule,fragment", [
    ("", "", "spec.template.spec.restartPolicy", "api-restart-policy", '"Always" (the default)'),
    ("", "restartPolicy: Always", "spec.template.spec.restartPolicy", "api-restart-policy", "OnFailure"),
    ("  completionMode: Indexed\n  parallelism: 4", "restartPolicy: Never", "spec.completions", "api-job",
     "when completion mode is Indexed"),
    ("  podFailurePolicy: {rules: [{action: FailJob, onExitCodes: {operator: In, values: [0]}}]}",
     "restartPolicy: Never", "spec.podFailurePolicy.rules[0].onExitCodes.values[0]", "api-job", "must not be 0"),
    ("  podFailurePolicy: {rules: [{action: FailJob, onExitCodes: {operator: In, values: [1]}}]}",
     "restartPolicy: OnFailure", "spec.template.spec.restartPolicy", "api-job", 'only "Never" is supported'),
    ("  backoffLimitPerIndex: 1", "restartPolicy: Never", "spec.backoffLimitPerIndex", "api-job",
     "requires indexed completion mode"),
    ("  manualSelector: true\n  selector: {matchLabels: {app: b}}", "restartPolicy: Never",
     "spec.template.metadata.labels", "api-job", "does not match template"),
    ("  parallelism: -1", "restartPolicy: Never", "spec.parallelism", "api-job", "greater than or equal to 0"),
])
def test_jobs(spec, restart, path, rule, fragment):
    found = api(JOB.format(name="j", spec=spec or "  backoffLimit: 1", restart=restart))
    assert any(r == rule and p == path and fragment in m for r, p, m in found), found


def test_an_indexed_job_names_pods_that_are_dns_labels():
    long = "j" * 61                      # pod 99's hostname: 61 + len("-99") = 64 characters
    spec = "  completionMode: Indexed\n  completions: 100\n  parallelism: 1"
    (rule, path, message), = api(JOB.format(name=long, spec=spec, restart="restartPolicy: Never"))
    assert (rule, path) == ("api-job", "metadata.name") and f"{long}-99" in message
    assert api(JOB.format(name="j" * 60, spec=spec, restart="restartPolicy: Never")) == []


STS = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: s}}
spec:
  serviceName: {service}
  selector: {{matchLabels: {selector}}}
  template:
    metadata: {{labels: {{app: s}}}}
    spec:
      {restart}
      containers: [{{name: c, image: i, volumeMounts: [{{name: data, mountPath: /data}}]}}]
  volumeClaimTemplates:
    - metadata: {{name: data}}
      spec: {{accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}}}
"""


def test_statefulsets():
    ok = STS.format(service="s", selector="{app: s}", restart="")
    assert api(ok) == []         # the mount names a volumeClaimTemplate: no volume of the pod needed
    assert [(r, p) for r, p, _ in api(STS.format(service="S_1", selector="{app: s}", restart=""))] == \
        [("api-workload", "spec.serviceName")]
    assert [(r, p) for r, p, _ in api(STS.format(service="s", selector="{app: t}", restart=""))] == \
        [("api-workload", "spec.template.metadata.labels")]
    assert [(r, p) for r, p, _ in api(STS.format(service="s", selector="{}", restart=""))] == \
        [("api-workload", "spec.selector")]
    assert [(r, p) for r, p, _ in api(STS.format(service="s", selector="{app: s}", restart="restartPolicy: Never"))] == \
        [("api-restart-policy", "spec.template.spec.restartPolicy")]


@pytest.mark.parametrize("text,path,rule,fragment", [
    ("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80}, {port: 81, name: b}]}\n",
     "spec.ports[0].name", "api-service", "Required value"),
    ("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80, targetPort: Metrics_Port}]}\n",
     "spec.ports[0].targetPort", "api-service", "must contain only"),
    ("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80, nodePort: 30080}]}\n",
     "spec.ports[0].nodePort", "api-service", "ClusterIP"),
    ("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80, name: a}, {port: 80, name: b}]}\n",
     "spec.ports[1]", "api-service", "listed twice"),
    ("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nspec: {resources: {requests: {storage: 1Gi}}}\n",
     "spec.accessModes", "api-pvc", "at least 1 access mode"),
    ("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nspec: {accessModes: [ReadWriteMany]}\n",
     "spec.resources.requests", "api-pvc", "storage"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {'a b': x}\n", 'data["a b"]', "api-config",
     "valid config key"),
    ("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ntype: kubernetes.io/tls\nstringData: {tls.crt: x}\n",
     "data", "api-config", "tls.key"),
])
def test_services_claims_and_configuration(text, path, rule, fragment):
    found = api(text)
    assert any(r == rule and p == path and fragment in m for r, p, m in found), found


def test_a_headless_service_needs_no_port():
    assert api("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {clusterIP: None, selector: {a: b}}\n") == []


PYTORCHJOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          restartPolicy: Always
          containers:
            - name: pytorch
              image: i
              env: [{name: MASTER_PORT, valueFrom: {}}]
"""


def test_the_pod_templates_of_a_pytorchjob_are_the_pods_it_makes():
    base = "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0]"
    # The template's restartPolicy is the operator's to overwrite (the lint rule says so): no API finding here.
    assert [(r, p) for r, p, _ in api(PYTORCHJOB)] == [("api-env", f"{base}.env[0].valueFrom")]


JOBSET = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js}
spec:
  replicatedJobs:
    - name: workers
      template:
        spec:
          parallelism: 2
          template:
            spec:
              containers: [{name: w}]
"""


def test_jobset_replicated_jobs_are_jobs_after_the_jobset_defaults():
    got = [(r, p) for r, p, _ in api(JOBSET)]
    base = "spec.replicatedJobs[0].template.spec"
    # completionMode Indexed is the JobSet webhook's default: completions become required; the image is missing;
    # restartPolicy OnFailure is the webhook's default too (no finding).
    assert got == [("api-job", f"{base}.completions"), ("api-container", f"{base}.template.spec.containers[0].image")]
    fixed = JOBSET.replace("parallelism: 2", "parallelism: 2\n          completions: 2").replace("{name: w}",
                                                                                             "{name: w, image: i}")
    assert api(fixed) == []


RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: rt}
spec:
  mlPolicy: {numNodes: 2, torch: {}}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      volumeMounts: [{name: from-the-trainjob, mountPath: /data}]
                      resources: {limits: {memory: 16GB}}
"""


def test_runtime_templates_leave_out_what_trainer_fills_in():
    # No image (the TrainJob's trainer.image), a volume that TrainJob patches add, parallelism Trainer sets:
    # only the quantity is the runtime's own mistake.
    assert [(r, p) for r, p, _ in api(RUNTIME, trainer_version="2.3")] == \
        [("api-quantity", "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0]"
                          ".resources.limits.memory")]


def test_trainjob_trainer_is_the_node_container():
    tj = ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: t}\nspec:\n"
          "  runtimeRef: {name: r}\n  trainer:\n    env: [{name: A=B, value: x}]\n"
          "    resourcesPerNode: {requests: {nvidia.com/gpu: 1}}\n")
    assert sorted((r, p) for r, p, _ in api(tj, trainer_version="2.3")) == [
        ("api-env", "spec.trainer.env[0].name"), ("api-resources", "spec.trainer.resourcesPerNode.limits")]


@pytest.mark.parametrize("body", [
    "containers: x", "containers: [1, [2]]", "volumes: {a: b}", "containers: [{name: c, image: i, env: 5}]",
    "containers: [{name: c, image: i, resources: {limits: [1]}}]", "containers: [{name: 7, image: i, ports: [x]}]",
    "tolerations: [null, 3]", "containers: [{name: c, image: i, livenessProbe: {exec: 3, httpGet: []}}]",
])
def test_malformed_shapes_never_crash(body):
    text = f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec: {{{body}}}\n"
    check(text)           # schema findings, never an exception


# --- a built-in object without its spec (#55): the API server validates the zero spec --------------------------
NO_SPEC_REFUSED = ["v1 PersistentVolumeClaim", "v1 Pod", "v1 Service", "v1 PersistentVolume",
                   "v1 ReplicationController", "batch/v1 Job", "batch/v1 CronJob", "apps/v1 Deployment",
                   "apps/v1 ReplicaSet", "apps/v1 DaemonSet", "apps/v1 StatefulSet",
                   "autoscaling/v2 HorizontalPodAutoscaler", "networking.k8s.io/v1 Ingress",
                   "networking.k8s.io/v1 IngressClass"]
NO_SPEC_ACCEPTED = ["networking.k8s.io/v1 NetworkPolicy", "policy/v1 PodDisruptionBudget", "v1 ResourceQuota",
                    "v1 LimitRange", "coordination.k8s.io/v1 Lease"]


def no_spec(api_kind: str, spec: str = "") -> str:
    av, kind = api_kind.split()
    return f"apiVersion: {av}\nkind: {kind}\nmetadata:\n  name: x\n  namespace: default\n{spec}"


@pytest.mark.parametrize("api_kind", NO_SPEC_REFUSED)
def test_a_builtin_object_without_its_spec_is_refused_at_spec(api_kind):
    for text, line in ((no_spec(api_kind), 1), (no_spec(api_kind, "spec: null\n"), 6)):
        found = [f for f in check(text) if f.level == "error"]
        assert [(f.rule, f.path, f.line) for f in found] == [("api-spec", "spec", line)], found
        kind = api_kind.split()[1]
        assert found[0].message.startswith(f"Required value: {kind} needs a spec") and "pkg/apis/" in found[0].message


def test_the_pvc_without_spec_names_what_the_api_server_requires():
    (f,) = check(no_spec("v1 PersistentVolumeClaim"))
    assert "spec.accessModes: Required value: at least 1 access mode is required" in f.message
    assert "spec.resources.requests: Required value: resources.requests.storage" in f.message


@pytest.mark.parametrize("api_kind", NO_SPEC_ACCEPTED)
def test_a_builtin_object_whose_zero_spec_is_valid_passes_without_one(api_kind):
    assert not [f for f in check(no_spec(api_kind)) if f.level == "error"]


def test_an_empty_spec_is_judged_field_by_field_not_as_missing():
    found = api(no_spec("v1 PersistentVolumeClaim", "spec: {}\n"))
    assert [(r, p) for r, p, _ in found] == [("api-pvc", "spec.accessModes"), ("api-pvc", "spec.resources.requests")]
