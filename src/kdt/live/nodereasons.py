"""Where in a pod's manifest a real kubelet's waiting reason comes from.

A pod that cannot start on a real node says why in its container status: `state.waiting.reason` and
`message`, the kubelet's own words (k8s.io/kubernetes v1.36.3 pkg/kubelet/images/types.go ErrImageNeverPull,
pkg/kubelet/kuberuntime/kuberuntime_container.go ErrCreateContainerConfig; the message of a root image under
runAsNonRoot from pkg/kubelet/kuberuntime/security_context_others.go verifyRunAsNonRoot). `locate` names the
field of the pod spec that caused it, so the finding points at the manifest, not at the node.
"""
from __future__ import annotations


def _containers(spec: dict):
    for kind in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(kind) or []):
            yield f"spec.{kind}[{i}]", c


def _container(spec: dict, name: str) -> tuple[str, dict]:
    for path, c in _containers(spec):
        if c.get("name") == name:
            return path, c
    return "spec", {}


def locate(spec: dict, container: str, reason: str, message: str = "") -> str:
    """The field path (from the pod: `spec.containers[0].securityContext.runAsNonRoot`) of what made
    `container` wait with `reason`; the container itself when no one field is known to cause it."""
    path, c = _container(spec, container)
    sc = c.get("securityContext") or {}
    psc = spec.get("securityContext") or {}
    if reason in ("ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff", "InvalidImageName"):
        if reason == "ErrImageNeverPull" and c.get("imagePullPolicy") == "Never":
            return f"{path}.imagePullPolicy"
        return f"{path}.image"
    if reason == "CreateContainerConfigError":
        if "runAsNonRoot" in message:
            if "runAsNonRoot" in sc:
                return f"{path}.securityContext.runAsNonRoot"
            if "runAsNonRoot" in psc:
                return "spec.securityContext.runAsNonRoot"
        if "secret" in message or "configmap" in message.lower():
            for key in ("env", "envFrom"):
                if c.get(key):
                    return f"{path}.{key}"
    return path
