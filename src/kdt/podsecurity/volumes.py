"""The restricted profile's volume types.

Source: kubernetes/pod-security-admission policy/check_restrictedVolumes.go (restrictedVolumes_1_0:
the allowed sources, and the order its detail names a forbidden one in), read at v0.37.0-alpha.2;
kubernetes pkg/apis/core/v1/defaults.go SetDefaults_Volume (a volume that names no source is
defaulted to an emptyDir before admission sees it).
"""
from __future__ import annotations

from .model import RESTRICTED, Breach, Check, Versioned, d, lst, quoted

ALLOWED = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim",
           "projected", "secret")
# Every other source of a core/v1 Volume, in the order restrictedVolumes_1_0 names them (its "unknown"
# stands for a source added to the API after the check: with these 30, there is none).
FORBIDDEN = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs",
             "rbd", "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume", "quobyte",
             "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos")


def _restricted_volumes(meta: dict, spec: dict) -> list[Breach]:
    out = []
    for i, v in enumerate(lst(spec.get("volumes"))):
        v = d(v)
        sources = [k for k in ALLOWED + FORBIDDEN if v.get(k) is not None]
        if not sources or sources[0] in ALLOWED:
            continue        # no source (other keys are not fields of a volume): defaulted to emptyDir
        kind = sources[0]
        out.append(Breach(("spec", "volumes", i, kind), "restricted volume types",
                          f"volume {quoted(str(v.get('name', '')))} uses restricted volume type {quoted(kind)}"))
    return out


CHECKS = (
    # Replaces the baseline hostPathVolumes check in restricted (a hostPath is one of its forbidden types).
    Check("restrictedVolumes", RESTRICTED, (Versioned(0, _restricted_volumes, ("hostPathVolumes",)),)),
)
