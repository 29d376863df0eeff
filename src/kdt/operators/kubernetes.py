"""Kubernetes' own behaviour the tooling relies on: what the kubelet reads for a container's env.

Paths refer to kubernetes/kubernetes (k8s.io/api core/v1 types.go; pkg/kubelet/kubelet_pods.go
makeEnvironmentVariables).
"""
from __future__ import annotations

# core/v1 EnvFromSource.configMapRef / secretRef and EnvVarSource.configMapKeyRef / secretKeyRef: the kind
# of the object each reference names (the kubelet reads its data; a Secret's data is base64).
SECRET, CONFIGMAP = "Secret", "ConfigMap"
ENV_FROM = ((CONFIGMAP, "configMapRef"), (SECRET, "secretRef"))
VALUE_FROM = ((SECRET, "secretKeyRef"), (CONFIGMAP, "configMapKeyRef"))

# kubernetes v1.36.3 pkg/controller/job/indexed_job_utils.go addCompletionIndexEnvVariable: the env an Indexed Job's
# pods carry their completion index in
ENV_COMPLETION_INDEX = "JOB_COMPLETION_INDEX"
