"""The committed generated schemas are what the generator makes from the official packages."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "src" / "kdt" / "schemas" / "generated"


def test_regenerating_the_schemas_changes_nothing():
    proc = subprocess.run([sys.executable, "-m", "kdt.schemas.generate", "--check"],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr


def test_generated_schemas_are_strict_but_keep_maps_open():
    defs = json.loads((GENERATED / "trainer-2.3.json").read_text())["$defs"]
    objects = [d for d in defs.values() if "properties" in d]
    assert objects and all(d["additionalProperties"] is False for d in objects)
    meta = defs["IoK8sApimachineryPkgApisMetaV1ObjectMeta"]["properties"]
    assert meta["labels"]["additionalProperties"] == {"type": "string"}
    limits = defs["IoK8sApiCoreV1ResourceRequirements"]["properties"]["limits"]
    # a Quantity is Kubernetes' definition, which a custom resource reads as its CRD's int-or-string
    assert limits["additionalProperties"] == {"$ref": "kubernetes:io.k8s.apimachinery.pkg.api.resource.Quantity"}
    old = json.loads((GENERATED / "trainer-2.1.json").read_text())["$defs"]
    assert old["TrainerV1alpha1Trainer"]["properties"]["numProcPerNode"] == {"type": ["string", "integer", "null"]}
    assert defs["TrainerV1alpha1Trainer"]["properties"]["numProcPerNode"] == {"type": ["integer", "null"]}
