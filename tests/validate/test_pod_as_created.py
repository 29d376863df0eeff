"""The API server's checks of a pod template run on the pod its operator creates (kdt.kinds `pod_additions`,
kdt.operators.injection.PodAdditions), never on the template alone.

Issue 43, "Public MPIJobs": MPI Operator v2 launchers, as public repositories write them, mount the volumes the
operator adds (`mpi-job-config` at /etc/mpi, `ssh-auth` at /root/.ssh) in an init container that waits for the
hostfile (for example the NCCL test MPIJob of OguzPastirmaci/oke-rdma's README); the template declares neither
volume. The operator appends both to the pod (kubeflow/mpi-operator v0.8.0 pkg/controller/mpi_job_controller.go
newLauncherPodTemplate, setupSSHOnPod), so the API server accepts the pod: no `api-volume` error. What the
operator's additions collide with (a volume of the same name, a mount at the same path in the first container)
and a mount of a volume nobody adds stay errors. The fixtures are written here.
"""
from __future__ import annotations

import pytest

from kdt.documents import load_stream
from kdt.validate import validate_documents

# A CustomResourceDefinition of the MPI Operator's MPIJob written for these tests (the project has no schema of
# kubeflow.org/v2beta1: it is served by the MPI Operator): any spec, so that only the API server's pod checks speak.
MPI_CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: mpijobs.kubeflow.org}
spec:
  group: kubeflow.org
  scope: Namespaced
  names: {kind: MPIJob, plural: mpijobs, singular: mpijob, listKind: MPIJobList}
  versions:
    - name: v2beta1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
"""

LAUNCHER_WAITS = """\
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: nccl-allreduce}
spec:
  slotsPerWorker: 8
  runPolicy: {cleanPodPolicy: Running}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          initContainers:
            - name: wait-for-workers
              image: ghcr.io/example/mpi-tools:1.0
              command: [sh, -c, "until [ -s /etc/mpi/hostfile ]; do sleep 5; done"]
              volumeMounts:
                - {name: mpi-job-config, mountPath: /etc/mpi}
                - {name: ssh-auth, mountPath: /root/.ssh}
          containers:
            - name: launcher
              image: ghcr.io/example/nccl-tests:1.0
              command: [mpirun, --allow-run-as-root, /opt/nccl-tests/all_reduce_perf]
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: worker
              image: ghcr.io/example/nccl-tests:1.0
              resources: {limits: {nvidia.com/gpu: 8}}
"""


@pytest.fixture
def mpi_crd(tmp_path):
    path = tmp_path / "mpijobs.yaml"
    path.write_text(MPI_CRD)
    return str(path)


def api(text: str, **kw):
    docs, problems = load_stream(text, "t.yaml")
    assert not problems, problems
    return [(f.rule, f.path, f.message) for f in validate_documents(docs, **kw) if f.rule.startswith("api-")]


L = "spec.mpiReplicaSpecs.Launcher.template.spec"
W = "spec.mpiReplicaSpecs.Worker.template.spec"


def test_a_launcher_that_mounts_what_the_mpi_operator_adds_is_no_error(mpi_crd):
    assert api(LAUNCHER_WAITS, crds=(mpi_crd,)) == []


def test_the_mount_path_of_the_ssh_secret_follows_ssh_auth_mount_path(mpi_crd):
    # spec.sshAuthMountPath moves the operator's mount of `ssh-auth` (setupSSHOnPod): a template mount of the
    # same volume elsewhere in an init container is still fine.
    text = LAUNCHER_WAITS.replace("  slotsPerWorker: 8", "  slotsPerWorker: 8\n  sshAuthMountPath: /home/mpiuser/.ssh")
    assert api(text, crds=(mpi_crd,)) == []


def test_a_mount_of_a_volume_nobody_adds_is_still_an_error(mpi_crd):
    text = LAUNCHER_WAITS.replace("{name: ssh-auth, mountPath: /root/.ssh}", "{name: ssh-keys, mountPath: /root/.ssh}")
    assert api(text, crds=(mpi_crd,)) == [
        ("api-volume", f"{L}.initContainers[0].volumeMounts[1].name",
         'Not found: "ssh-keys": no volume of the pod has this name')]


def test_what_collides_with_the_operators_additions_is_the_api_servers_refusal(mpi_crd):
    # The template declares its own `mpi-job-config` and mounts it at /etc/mpi in the first container: the
    # operator appends a second volume of that name and a second mount at /etc/mpi (ValidateVolumes,
    # ValidateVolumeMounts refuse both); the Worker's first container mounts the SSH Secret where the operator does.
    text = (LAUNCHER_WAITS
            .replace("          containers:\n            - name: launcher\n",
                     "          volumes: [{name: mpi-job-config, emptyDir: {}}]\n"
                     "          containers:\n            - name: launcher\n"
                     "              volumeMounts: [{name: mpi-job-config, mountPath: /etc/mpi}]\n")
            .replace("              resources: {limits: {nvidia.com/gpu: 8}}\n",
                     "              resources: {limits: {nvidia.com/gpu: 8}}\n"
                     "              volumeMounts: [{name: ssh-auth, mountPath: /root/.ssh}]\n"))
    got = api(text, crds=(mpi_crd,))
    by = "the MPI Operator (kubeflow/mpi-operator v0.8.0 pkg/controller/mpi_job_controller.go) adds to the pod it creates"
    assert got == [
        ("api-volume", f"{L}.volumes", f'Duplicate value: "mpi-job-config", in the volume "mpi-job-config" that {by}'),
        ("api-volume", f"{L}.containers[0].volumeMounts",
         f'Invalid value: "/etc/mpi": must be unique, in the mount of "mpi-job-config" at "/etc/mpi" that {by}'),
        ("api-volume", f"{W}.containers[0].volumeMounts",
         f'Invalid value: "/root/.ssh": must be unique, in the mount of "ssh-auth" at "/root/.ssh" that {by}'),
    ]


def test_the_training_operators_mpijob_gets_its_own_additions():
    # kubeflow.org/v1 MPIJob (Training Operator v1.8.1, v1.9.4 pkg/controller.v1/mpi/mpijob_controller.go): the
    # hostfile ConfigMap as `mpi-job-config` and the emptyDir `mpi-job-kubectl`, no SSH Secret.
    text = (LAUNCHER_WAITS.replace("kubeflow.org/v2beta1", "kubeflow.org/v1")
            .replace("{name: ssh-auth, mountPath: /root/.ssh}", "{name: mpi-job-kubectl, mountPath: /opt/kube}"))
    assert api(text) == []
    v2_style = LAUNCHER_WAITS.replace("kubeflow.org/v2beta1", "kubeflow.org/v1")
    assert api(v2_style) == [("api-volume", f"{L}.initContainers[0].volumeMounts[1].name",
                              'Not found: "ssh-auth": no volume of the pod has this name')]


def test_the_template_alone_would_have_been_refused(mpi_crd):
    # The same launcher as a plain Job (nothing adds the volumes) is the API server's refusal: the additions,
    # not a blanket leniency, clear the MPIJob.
    job = ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec:\n"
           "      restartPolicy: Never\n      initContainers:\n        - name: w\n          image: i\n"
           "          volumeMounts: [{name: mpi-job-config, mountPath: /etc/mpi}]\n"
           "      containers: [{name: c, image: i}]\n")
    assert [p for _, p, _ in api(job)] == ["spec.template.spec.initContainers[0].volumeMounts[0].name"]


def test_a_pytorchjob_worker_gets_the_operators_init_container():
    # pytorch/initcontainer.go: with a Master, every Worker pod gets `init-pytorch` appended; an init container
    # of the template with that name is a duplicate the API server refuses (validateInitContainers).
    text = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pj}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          initContainers: [{name: init-pytorch, image: busybox:1.36}]
          containers: [{name: pytorch, image: i}]
    Worker:
      replicas: 1
      template:
        spec:
          initContainers: [{name: init-pytorch, image: busybox:1.36}]
          containers: [{name: pytorch, image: i}]
"""
    got = api(text)
    assert got == [("api-container", "spec.pytorchReplicaSpecs.Worker.template.spec.initContainers",
                    'Duplicate value: "init-pytorch", in the init container "init-pytorch" that the Training Operator '
                    "(kubeflow/training-operator v1.8.1, v1.9.4 pkg/controller.v1/pytorch/initcontainer.go, its "
                    "built-in template) adds to the pod it creates")]


def test_trainer_runtimes_leave_mounts_to_what_trainer_and_the_trainjob_add():
    # Trainer's MPI plugin adds `mpi-ssh-auth` and the hostfile volume to the runtime's pods (Trainer v2.3.0
    # pkg/runtime/framework/plugins/mpi/mpi.go), a TrainJob's patches add more: a runtime's mounts are never
    # resolved against its own volumes alone (kdt.apivalidation.workloads _RUNTIME_POD), so no false error.
    runtime = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: mpi-rt}
spec:
  mlPolicy: {numNodes: 2, mpi: {mpiImplementation: OpenMPI, sshAuthMountPath: /root/.ssh}}
  template:
    spec:
      replicatedJobs:
        - name: launcher
          template:
            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec:
              template:
                spec:
                  initContainers:
                    - name: wait
                      image: i
                      volumeMounts: [{name: mpi-ssh-auth, mountPath: /root/.ssh}]
                  containers: [{name: node, image: i}]
"""
    assert api(runtime, trainer_version="2.3") == []
