"""The operators' lifecycle rules, as a local run applies them.

The kubelet part is shared (`Kubelet.after_exit`): a container that exits is
restarted in place by `restartPolicy` Always (any exit) or OnFailure (exit != 0);
otherwise the pod ends, Succeeded when every container exited 0. Each controller
then decides what a pod's restart, end or loss means for its job, and the job's
verdict (Succeeded or Failed, and why).

Facts: kdt.operators.training_operator_v1.facts and kdt.operators.jobset.facts, and the
sources cited beside each rule below.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .pods import LocalPod

# Actions a controller asks of the supervisor.
RECREATE = "recreate"          # (RECREATE, pod name): delete the pod and create it again
RESTART_PODS = "restart-pods"  # (RESTART_PODS, RestartSpec): delete these pods and create them all again
STOP_POD = "stop-pod"          # (STOP_POD, pod name): delete a pod without creating it again


@dataclass
class RestartSpec:
    """Pods a controller deletes and creates again at once (a JobSet or one of its Jobs restarted)."""
    pods: list[str]
    why: str
    event: str                  # the timeline's name for it: jobset-restart | job-restart
    bump: tuple = ()            # labels whose counter the recreated pods carry one higher


@dataclass
class Verdict:
    succeeded: bool
    reason: str
    message: str

    def line(self) -> str:
        return f"{'Succeeded' if self.succeeded else 'Failed'} ({self.reason}): {self.message}"


def restarts_in_place(restart_policy: str, code: int, init: bool = False) -> bool:
    """The kubelet: does a container that exited with `code` start again in the same pod? An init container
    (`init`) only on failure, unless the pod's policy is Never (kubernetes v1.36.3
    pkg/kubelet/kuberuntime/kuberuntime_container.go computeInitContainerActions: an init container restarts as
    under OnFailure when the pod's policy is Always)."""
    if init:
        restart_policy = "OnFailure" if restart_policy == "Always" else restart_policy
    return restart_policy == "Always" or (restart_policy == "OnFailure" and code != 0)


@dataclass
class PodState:
    pod: LocalPod
    restarts: int = 0              # container restarts in place (the pod's restartCount)
    phase: str = "Pending"         # Pending | Running | Succeeded | Failed
    finished_ok: bool = False      # StatefulSet: the container exited 0 once (a cluster would restart it)


class Controller:
    kind = ""
    serves = False      # a server beside the job (a Deployment): never the run's verdict, stopped with the job
    notes: list[str]

    def __init__(self, pods: list[LocalPod]):
        self.pods = {p.name: PodState(p) for p in pods}
        self.verdict: Verdict | None = None
        self.notes = []

    # The supervisor tells: a container restarted in place; a pod ended (Succeeded/Failed); a pod was lost.
    def on_restart(self, name: str) -> list:
        self.pods[name].restarts += 1
        return []

    def on_pod_end(self, name: str, succeeded: bool, code: int) -> list:
        self.pods[name].phase = "Succeeded" if succeeded else "Failed"
        return []

    def on_lost(self, name: str) -> list:
        return [(RECREATE, name)]

    def on_recreated(self, name: str) -> None:
        st = self.pods[name]
        st.restarts, st.phase, st.finished_ok = 0, "Running", False

    def keep_running_after_zero_exit(self, name: str) -> bool:
        """Whether the kubelet's restart of a container that exited 0 is left out locally (StatefulSet)."""
        return False

    def on_finished(self, name: str) -> None:
        """A container that exited 0 and is kept from restarting (`keep_running_after_zero_exit`) finished."""

    def problems(self) -> list[str]:
        """What the controller's webhook refuses in this object: the run does not start."""
        return []


@dataclass
class JobState:
    name: str
    replicated_job: str
    index: int
    backoff_limit: int
    completions: int
    failures: int = 0
    succeeded: set = field(default_factory=set)
    failed: bool = False
    restarts: int = 0               # this Job's own restarts (RestartJob actions)
    restarts_toward_max: int = 0


# kubernetes pkg/controller/job/job_controller.go: the message of the Failed condition a Job gets when its
# pods failed past backoffLimit (reason BackoffLimitExceeded), which onJobFailureMessagePatterns match.
JOB_BACKOFF_MESSAGE = "Job has reached the specified backoff limit"


class DeploymentController(Controller):
    """Deployment: a server the job needs beside it (a torchft Lighthouse). Its pods run for as long as the
    job does: restartPolicy Always (the only one a Deployment allows; kubernetes pkg/apis/apps/validation),
    so a container that exits starts again in place, and a lost pod is created again (the ReplicaSet keeps
    `replicas` pods). It gives no verdict: the run ends with the job's, and its pods are stopped then."""
    kind = "Deployment"
    serves = True

    def __init__(self, pods: list[LocalPod]):
        super().__init__(pods)
        self.name = pods[0].owner_name if pods else ""
        self.notes.append(f"Deployment {self.name}: its pods serve the job and stop when the job ends")
