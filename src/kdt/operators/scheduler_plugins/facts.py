"""The scheduler-plugins coscheduling: how a pod joins a gang.

Read from kubernetes-sigs/scheduler-plugins v0.34.7 (the release of the CRDs in ../shared/corpus/scheduling).
"""
from __future__ import annotations

# scheduler-plugins coscheduling (apis/scheduling/v1alpha1/types.go PodGroupLabel): the pod's PodGroup.
# A PodGroup's pods wait in PreFilter until minMember of them exist ("cannot find enough sibling pods",
# pkg/coscheduling/core/core.go PreFilter): a group larger than its pods never schedules.
COSCHEDULING_POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
