"""The MPI Operator v2 (kubeflow/mpi-operator, `kubeflow.org/v2beta1` MPIJob): what it adds to the pods it creates.

Read from kubeflow/mpi-operator v0.8.0 (its latest v0.x tag), pkg/controller/mpi_job_controller.go
(`newLauncherPodTemplate`, `newWorker`, `setupSSHOnPod`, the constants and `*EnvVars` at the top of the file)
and pkg/apis/kubeflow/v2beta1/default.go (`setDefaultsMPIJob`). The same volume names and mount paths hold
from v0.4.0 (the first release of v2beta1) to v0.8.0. The project does not run this operator: the facts are
here so that a check that needs the pod as created (kdt.apivalidation) sees what the operator adds, never
the template alone.
"""
from __future__ import annotations

from ...fields import as_dict, as_int
from ..injection import PodAdditions

KIND = "MPIJob"
API_VERSION = "kubeflow.org/v2beta1"
REF = "kubeflow/mpi-operator v0.8.0 pkg/controller/mpi_job_controller.go"
BY = f"the MPI Operator ({REF})"

# pkg/apis/kubeflow/v2beta1/types.go: MPIReplicaTypeLauncher / MPIReplicaTypeWorker.
LAUNCHER, WORKER = "Launcher", "Worker"

# mpi_job_controller.go constants.
CONFIG_SUFFIX = "-config"                 # configSuffix: the ConfigMap `<job>-config`
CONFIG_VOLUME = "mpi-job-config"          # configVolumeName
CONFIG_MOUNT_PATH = "/etc/mpi"            # configMountPath
HOSTFILE = "hostfile"                     # hostfileName
DISCOVER_HOSTS = "discover_hosts.sh"      # discoverHostsScriptName
SSH_SECRET_SUFFIX = "-ssh"                # sshAuthSecretSuffix: the Secret `<job>-ssh`
SSH_VOLUME = "ssh-auth"                   # sshAuthVolume
ROOT_SSH_PATH = "/root/.ssh"              # rootSSHPath: the default of spec.sshAuthMountPath (default.go)
# sshVolumeItems: the Secret's keys as files (corev1.SSHAuthPrivateKey is "ssh-privatekey").
SSH_ITEMS = ({"key": "ssh-privatekey", "path": "id_rsa"}, {"key": "ssh-publickey", "path": "id_rsa.pub"},
             {"key": "ssh-publickey", "path": "authorized_keys"})
# configVolumeItems: hostfile 0444, discover_hosts.sh 0555.
CONFIG_ITEMS = ({"key": HOSTFILE, "path": HOSTFILE, "mode": 0o444},
                {"key": DISCOVER_HOSTS, "path": DISCOVER_HOSTS, "mode": 0o555})

# default.go setDefaultsMPIJob: slotsPerWorker 1, mpiImplementation OpenMPI.
DEFAULT_SLOTS = 1
OPENMPI, INTEL, MPICH = "OpenMPI", "Intel", "MPICH"
DEFAULT_IMPLEMENTATION = OPENMPI

# launcherEnvVars / workerEnvVars, then (launcher) the implementation's env and its slots variable, then
# nvidiaDisableEnvVars unless spec.runLauncherAsWorker.
ROLE_ENV = "K_MPI_JOB_ROLE"
_HOSTFILE_PATH = f"{CONFIG_MOUNT_PATH}/{HOSTFILE}"
_IMPLEMENTATION_ENV = {
    OPENMPI: (("OMPI_MCA_orte_keep_fqdn_hostnames", "true"), ("OMPI_MCA_orte_default_hostfile", _HOSTFILE_PATH),
              ("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10")),
    INTEL: (("I_MPI_HYDRA_HOST_FILE", _HOSTFILE_PATH), ("I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "-o ConnectionAttempts=10")),
    MPICH: (("HYDRA_HOST_FILE", _HOSTFILE_PATH), ("HYDRA_LAUNCH_EXTRA_ARGS", "-o ConnectionAttempts=10")),
}
_SLOTS_ENV = {OPENMPI: "OMPI_MCA_orte_set_default_slots", INTEL: "I_MPI_PERHOST"}   # openMPISlotsEnv, intelMPISlotsEnv
NVIDIA_DISABLE_ENV = ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")        # written with no value


def _ssh(job: str, spec: dict) -> tuple[dict, dict]:
    """setupSSHOnPod: the Secret volume (mode 0600 when mounted at /root/.ssh) and its mount on the first container."""
    path = spec.get("sshAuthMountPath") or ROOT_SSH_PATH
    secret = {"secretName": job + SSH_SECRET_SUFFIX, "items": [dict(i) for i in SSH_ITEMS]}
    if path == ROOT_SSH_PATH:
        secret = {"defaultMode": 0o600, **secret}
    return {"name": SSH_VOLUME, "secret": secret}, {"name": SSH_VOLUME, "mountPath": path}


def pod_additions(job: dict, role: str) -> PodAdditions | None:
    """What the operator appends to the pod it creates from the replica template of `role` of the MPIJob
    `job` (the object mapping): for the Launcher, newLauncherPodTemplate (its env, then setupSSHOnPod, then
    the hostfile ConfigMap volume mounted at /etc/mpi); for a Worker, newWorker (its env, then setupSSHOnPod).
    Each addition goes to the first container (`podTemplate.Spec.Containers[0]`). None for another role."""
    name = str(as_dict(job.get("metadata")).get("name") or "")
    spec = as_dict(job.get("spec"))
    ssh_volume, ssh_mount = _ssh(name, spec)
    if role == WORKER:
        return PodAdditions(BY, volumes=(ssh_volume,), mounts=(ssh_mount,), env=((ROLE_ENV, "worker"),))
    if role != LAUNCHER:
        return None
    impl = spec.get("mpiImplementation") or DEFAULT_IMPLEMENTATION
    slots = as_int(spec.get("slotsPerWorker"))
    env = [(ROLE_ENV, "launcher"), *_IMPLEMENTATION_ENV.get(impl, ())]
    if impl in _SLOTS_ENV:
        env.append((_SLOTS_ENV[impl], str(DEFAULT_SLOTS if slots is None else slots)))
    if spec.get("runLauncherAsWorker") is not True:
        env.extend((n, None) for n in NVIDIA_DISABLE_ENV)
    config = {"name": CONFIG_VOLUME, "configMap": {"name": name + CONFIG_SUFFIX, "items": [dict(i) for i in CONFIG_ITEMS]}}
    return PodAdditions(BY, volumes=(ssh_volume, config),
                        mounts=(ssh_mount, {"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT_PATH}), env=tuple(env))
