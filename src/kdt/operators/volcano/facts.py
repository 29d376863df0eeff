"""Volcano: how a pod joins a gang, and how big a gang is.

Read from volcano-sh/volcano v1.15.1 (the release of the CRDs in ../shared/corpus/scheduling), file named
beside each fact; the scheduler-plugins coscheduling is kdt.operators.scheduler_plugins.facts. The Training
Operator's and Trainer's own PodGroups are kdt.operators.scheduling's.
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
