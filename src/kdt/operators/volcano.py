"""Volcano and the scheduler-plugins coscheduling: how a pod joins a gang, and how big a gang is.

Read from volcano-sh/volcano v1.15.1 and kubernetes-sigs/scheduler-plugins v0.34.7 (the releases of the
CRDs in ../shared/corpus/scheduling), file named beside each fact. The Training Operator's and Trainer's
own PodGroups are kdt.operators.scheduling's.
"""
from __future__ import annotations

# Volcano (staging/src/volcano.sh/apis/pkg/apis/scheduling/v1beta1/labels.go)
SCHEDULER_NAME = "volcano"                               # the Training Operator's VolcanoControl.GetSchedulerName
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"   # KubeGroupNameAnnotationKey: the pod's PodGroup
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"    # QueueNameAnnotationKey: the PodGroup's Queue
# VolcanoGroupMinMemberAnnotationKey, on a StatefulSet (or ReplicaSet, Job): the minMember of the PodGroup
# Volcano's pod-group controller makes for its pods (pkg/controllers/podgroup/pg_controller_handler.go
# getMinMemberFromUpperRes; 1 when unset).
GROUP_MIN_MEMBER_ANNOTATION = "scheduling.volcano.sh/group-min-member"
DEFAULT_QUEUE = "default"     # a PodGroup with no queue (the Training Operator's default too: common/job.go)
# A Volcano Job (batch.volcano.sh/v1alpha1): spec.minAvailable defaults to the sum of the tasks'
# minAvailable, else replicas (pkg/webhooks/admission/jobs/mutate/mutate_job.go patchDefaultMinAvailable);
# its webhook refuses a job whose minAvailable is above the tasks' replicas, or a task's above its own
# (pkg/webhooks/admission/jobs/validate/admit_job.go validateJobCreate).
JOB_TASKS = "tasks"

# scheduler-plugins coscheduling (apis/scheduling/v1alpha1/types.go PodGroupLabel): the pod's PodGroup.
# A PodGroup's pods wait in PreFilter until minMember of them exist ("cannot find enough sibling pods",
# pkg/coscheduling/core/core.go PreFilter): a group larger than its pods never schedules.
COSCHEDULING_POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
