"""The StatefulSet controller's and the kubelet's rules for a StatefulSet's pods, as `kdt run` applies them."""
from __future__ import annotations

from ..framework.controller import Controller, Verdict
from ..framework.pods import LocalPod


class StatefulSetController(Controller):
    """StatefulSet: restartPolicy Always (the only one it allows); a lost pod is created again with
    the same name. A container that exits 0 would be started again on a cluster: a local run counts
    the training as finished there instead, and the set as done when every pod finished.
    A pod that keeps failing is in CrashLoopBackOff forever on a cluster: a local run gives up
    after `max_restarts` restarts of one pod."""
    kind = "StatefulSet"

    def __init__(self, pods: list[LocalPod], max_restarts: int):
        super().__init__(pods)
        self.max_restarts = max_restarts
        self.name = pods[0].owner_name if pods else ""
        self.notes.append("restartPolicy Always: a container that finishes (exit 0) would start again on a "
                          "cluster; the local run stops it there and counts the pod as done")

    def keep_running_after_zero_exit(self, name: str) -> bool:
        return True

    def on_restart(self, name: str) -> list:
        super().on_restart(name)
        if self.pods[name].restarts > self.max_restarts and not self.verdict:
            self.verdict = Verdict(False, "CrashLoopBackOff",
                                   f"pod {name} of StatefulSet {self.name} failed {self.pods[name].restarts} times "
                                   f"(a cluster would go on restarting it; --max-pod-restarts={self.max_restarts})")
        return []

    def on_finished(self, name: str) -> None:
        self.pods[name].finished_ok = True
        if all(s.finished_ok for s in self.pods.values()) and not self.verdict:
            self.verdict = Verdict(True, "Finished", f"every pod of StatefulSet {self.name} finished its "
                                                     "training (exit 0)")
