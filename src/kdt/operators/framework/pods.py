"""The pods a target makes, ready to start as local processes.

From the merge preview's objects to `LocalPod`s (each kind builds its own: the
`local_pods` hook of kdt.kinds): names and addresses, containers with the env
the kubelet would give them (downward API, Secrets and ConfigMaps of the target,
`$(VAR)` expansion), and volumes mapped to folders. Anything a pod needs that a
local run cannot give is a `Finding` located in the document it comes from.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...documents import Document
from ..kubernetes import ENV_FROM, SECRET, VALUE_FROM

RULE = "run"
NAMESPACE = "default"
CLUSTER_DOMAIN = "cluster.local"
NODE_NAME = "kdt-local"


@dataclass
class Container:
    name: str
    spec: dict
    path: tuple              # where the container sits in `doc`
    doc: Document            # the document a finding about it points into
    init: bool = False


@dataclass
class LocalPod:
    name: str
    obj: dict                # the pod as its controller creates it
    owner: Any               # the Kind (kdt.kinds) whose controller runs this pod
    owner_name: str
    group: str               # Master/Worker (PyTorchJob), the Job's name (JobSet), the set (StatefulSet)
    index: int
    source: Document
    containers: list[Container] = field(default_factory=list)
    init_containers: list[Container] = field(default_factory=list)
    ip: str = ""
    job_spec: dict = field(default_factory=dict)    # JobSet pods: their Job's spec
    owner_obj: dict = field(default_factory=dict)   # JobSet pods: the JobSet object their controller reads
    claim_templates: set = field(default_factory=set)  # StatefulSet pods: volumeClaimTemplates (a claim per pod)
    facts: dict = field(default_factory=dict)       # the merge preview's facts of the object (Trainer release, ...)
    uid: str = ""            # a live run's pod (kdt.live.node): the API server's uid and the node it is bound to
    node: str = ""
    label: str = ""          # a live run's pod: the name the run shows it by (kdt.live.node.logical_name)

    @property
    def shown(self) -> str:
        return self.label or self.name

    @property
    def spec(self) -> dict:
        return self.obj.get("spec") or {}

    @property
    def namespace(self) -> str:
        return str((self.obj.get("metadata") or {}).get("namespace") or self.source.namespace or NAMESPACE)

    @property
    def hostname(self) -> str:
        return str(self.spec.get("hostname") or self.name)

    @property
    def restart_policy(self) -> str:
        return str(self.spec.get("restartPolicy") or "Always")

    def dns_names(self) -> list[str]:
        """The names that resolve to this pod: its hostname, and through its subdomain's headless Service."""
        names = [self.hostname]
        sub = self.spec.get("subdomain")
        if sub:
            base = f"{self.hostname}.{sub}"
            names += [base, f"{base}.{self.namespace}", f"{base}.{self.namespace}.svc",
                      f"{base}.{self.namespace}.svc.{CLUSTER_DOMAIN}"]
        return names


def _containers(spec: dict, path: tuple, doc: Document, key: str) -> list[Container]:
    return [Container(str(c.get("name", f"#{i}")), c, path + (key, i), doc, init=key == "initContainers")
            for i, c in enumerate(spec.get(key) or []) if isinstance(c, dict)]



def pod_containers(pod: LocalPod, template_path: tuple, doc: Document) -> LocalPod:
    """Fill a pod's containers and init containers; their findings point at `template_path` in `doc`."""
    pod.obj.setdefault("spec", {})
    pod.containers = _containers(pod.spec, template_path, doc, "containers")
    pod.init_containers = _containers(pod.spec, template_path, doc, "initContainers")
    return pod


# ------------------------------------------------------------------ env (the kubelet's)
_FIELD_LABEL = re.compile(r"^metadata\.(labels|annotations)\['([^']+)'\]$")
_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand_refs(text: str, env: dict[str, str]) -> str:
    """Kubernetes `$(VAR)` expansion: a defined VAR is replaced, `$$` is `$`, anything else stays."""
    def sub(m):
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return env[name] if name in env else m.group(0)
    return _REF.sub(sub, str(text))


def _cpu(value: str, divisor: str | None) -> str:
    import math
    v = str(value)
    cores = float(v[:-1]) / 1000 if v.endswith("m") else float(v)
    div = str(divisor or "1")
    d = float(div[:-1]) / 1000 if div.endswith("m") else float(div)
    return str(max(1, math.ceil(cores / d)))


class EnvError(Exception):
    def __init__(self, path: tuple, message: str):
        super().__init__(message)
        self.path = path
        self.message = message


def _lookup(kind: str, name: str, key: str | None, objects: dict) -> Any:
    obj = objects.get((kind, name))
    if obj is None:
        return None
    data = dict(obj.get("data") or {})
    if kind == SECRET:
        import base64
        data = {k: base64.b64decode(str(v)).decode("utf-8", "replace") for k, v in data.items()}
        data.update({k: str(v) for k, v in (obj.get("stringData") or {}).items()})
    if key is None:
        return {k: str(v) for k, v in data.items()}
    return data.get(key)


def container_env(pod: LocalPod, c: Container, objects: dict, extra: dict | None = None) -> dict[str, str]:
    """The container's env as the kubelet builds it: envFrom, then env in order, `$(VAR)` of earlier ones."""
    env: dict[str, str] = {}
    spec = c.spec
    for i, src in enumerate(spec.get("envFrom") or []):
        for kind, key in ENV_FROM:
            ref = src.get(key) if isinstance(src, dict) else None
            if not isinstance(ref, dict):
                continue
            data = _lookup(kind, str(ref.get("name")), None, objects)
            if data is None:
                if ref.get("optional"):
                    continue
                raise EnvError(("envFrom", i, key, "name"),
                               f"{kind} {ref.get('name')!r} is not in the target: a local run cannot read it "
                               f"(add it to the target, or mark the reference optional)")
            prefix = str(src.get("prefix") or "")
            env.update({prefix + k: v for k, v in data.items()})
    for i, e in enumerate(spec.get("env") or []):
        if not isinstance(e, dict) or not e.get("name"):
            continue
        name = str(e["name"])
        if "valueFrom" not in e:
            env[name] = expand_refs(e.get("value", ""), env)
            continue
        vf = e.get("valueFrom") or {}
        value = _value_from(pod, c, vf, objects, ("env", i, "valueFrom"))
        if value is not None:
            env[name] = value
    env.update(extra or {})
    return env


def _value_from(pod: LocalPod, c: Container, vf: dict, objects: dict, path: tuple) -> str | None:
    meta = pod.obj.get("metadata") or {}
    if "fieldRef" in vf:
        fp = str((vf.get("fieldRef") or {}).get("fieldPath", ""))
        m = _FIELD_LABEL.match(fp)
        if m:
            value = (meta.get(m.group(1)) or {}).get(m.group(2))
            return "" if value is None else str(value)
        simple = {"metadata.name": pod.name, "metadata.namespace": pod.namespace,
                  "metadata.uid": pod.uid or f"kdt-{pod.name}", "spec.nodeName": pod.node or NODE_NAME,
                  "spec.serviceAccountName": str(pod.spec.get("serviceAccountName") or "default"),
                  "status.podIP": pod.ip, "status.podIPs": pod.ip, "status.hostIP": "127.0.0.1",
                  "status.hostIPs": "127.0.0.1"}
        if fp in simple:
            return simple[fp]
        raise EnvError(path + ("fieldRef", "fieldPath"), f"fieldPath {fp!r} is not one the downward API offers")
    if "resourceFieldRef" in vf:
        ref = vf.get("resourceFieldRef") or {}
        res = str(ref.get("resource", ""))
        section, _, what = res.partition(".")
        value = ((c.spec.get("resources") or {}).get(section) or {}).get(what)
        if value is None:
            value = str(__import__("os").cpu_count() or 1) if what == "cpu" else "0"
        return _cpu(value, ref.get("divisor")) if what == "cpu" else str(value)
    for kind, key in VALUE_FROM:
        if key in vf:
            ref = vf.get(key) or {}
            value = _lookup(kind, str(ref.get("name")), str(ref.get("key")), objects)
            if value is None:
                if ref.get("optional"):
                    return None
                raise EnvError(path + (key,), f"{kind} {ref.get('name')!r} key {ref.get('key')!r} is not in the "
                                              "target: a local run cannot read it (add it to the target, pass it "
                                              "with --env NAME=VALUE, or mark the reference optional)")
            return str(value)
    return None


# ------------------------------------------------------------------ volumes -> folders
@dataclass
class Mounts:
    """mountPath -> a folder, longest first; rewrites the paths a command names."""
    pairs: list[tuple[str, Path]]

    def rewrite(self, text: str) -> str:
        out = str(text)
        for mount, folder in self.pairs:
            pattern = re.compile(r"(?<![\w.\-/])" + re.escape(mount.rstrip("/")) + r"(?=/|$|[^\w.\-])")
            out = pattern.sub(lambda m, f=str(folder): f, out)
        return out

    def show(self) -> str:
        return ", ".join(f"{m} -> {f}" for m, f in self.pairs)


def volume_folders(pod: LocalPod, c: Container, run_dir: Path, image_paths: dict[str, Path],
                   pod_dir: Path, claims: dict[str, Path] | None = None) -> Mounts:
    """Each volumeMount of the container as a folder of the run.

    PersistentVolumeClaims (and a StatefulSet's claim templates) are folders every pod
    of the run shares under `volumes/`; emptyDir is a folder of the pod's own (new for a
    recreated pod); Secrets, ConfigMaps and the rest are folders of the pod too. ``claims``
    (``--volume CLAIM=DIR``) names a folder of the user's for a claim: its data, written in place.
    `/dev/...` stays as it is (the local /dev/shm serves).
    """
    vols = {str(v.get("name")): v for v in pod.spec.get("volumes") or [] if isinstance(v, dict)}
    templates = pod.claim_templates
    pairs: dict[str, Path] = {}
    for mount in c.spec.get("volumeMounts") or []:
        if not isinstance(mount, dict) or not mount.get("mountPath"):
            continue
        mp = str(mount["mountPath"])
        if mp.startswith("/dev/"):
            continue
        name = str(mount.get("name"))
        v = vols.get(name) or {}
        claim = str((v.get("persistentVolumeClaim") or {}).get("claimName")) if "persistentVolumeClaim" in v else None
        if claim is not None and claims and claim in claims:
            folder = claims[claim]
        elif claim is not None:
            folder = run_dir / "volumes" / f"pvc-{claim}"
        elif name in templates:
            folder = run_dir / "volumes" / f"pvc-{name}-{pod.name}"
        else:
            folder = pod_dir / "volumes" / name
        if mount.get("subPath"):
            folder = folder / str(mount["subPath"])
        folder.mkdir(parents=True, exist_ok=True)
        pairs[mp] = folder
    for image_path, folder in image_paths.items():
        pairs.setdefault(image_path, folder)
    return Mounts(sorted(pairs.items(), key=lambda kv: -len(kv[0])))


# A flag whose value is a path the program writes (outputs, checkpoints, logs, caches): not an input.
_WRITES = re.compile(r"out|save|checkpoint|ckpt|log|cache|dump|export|work|tmp|temp", re.I)
_PATH_FLAG = re.compile(r"(--?[A-Za-z][\w-]*)(?:=|\s+)['\"]?(/[^\s'\";|&]+)")


@dataclass
class ClaimInput:
    claim: str
    mount: str            # the container's mountPath of the claim
    path: str             # the path the command reads, as written
    flag: str             # the flag it is given with


def claim_inputs(pod: LocalPod, c: Container) -> list[ClaimInput]:
    """Paths a container's command reads from a PersistentVolumeClaim: `--flag=/mount/...` or `--flag
    /mount/...` in command, args or a shell script there, under the mountPath of a claim, with a flag that
    does not name an output (out, save, checkpoint, log, cache, ...)."""
    vols = {str(v.get("name")): v for v in pod.spec.get("volumes") or [] if isinstance(v, dict)}
    mounts = []
    for m in c.spec.get("volumeMounts") or []:
        if not isinstance(m, dict) or not m.get("mountPath"):
            continue
        v = vols.get(str(m.get("name"))) or {}
        if "persistentVolumeClaim" in v:
            mounts.append((str(m["mountPath"]).rstrip("/"), str((v.get("persistentVolumeClaim") or {}).get("claimName"))))
    out = []
    text = "\n".join(str(x) for x in [*(c.spec.get("command") or []), *(c.spec.get("args") or [])])
    for m in _PATH_FLAG.finditer(text):
        flag, path = m.group(1), m.group(2)
        if _WRITES.search(flag):
            continue
        for mount, claim in sorted(mounts, key=lambda x: -len(x[0])):
            if path == mount or path.startswith(mount + "/"):
                out.append(ClaimInput(claim, mount, path, flag))
                break
    return out


def describe_argv(argv: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)



def service_names(services: list[Document], pods: list[LocalPod]) -> dict[str, list[str]]:
    """ip -> extra names: each Service of the target resolves to the first pod its selector matches."""
    out: dict[str, list[str]] = {}
    for d in services:
        if not isinstance(d.data, dict):
            continue
        sel = (d.data.get("spec") or {}).get("selector") or {}
        if not isinstance(sel, dict) or not sel:
            continue
        for p in pods:
            labels = (p.obj.get("metadata") or {}).get("labels") or {}
            if all(str(labels.get(k)) == str(v) for k, v in sel.items()):
                ns = d.namespace or NAMESPACE
                out.setdefault(p.ip, []).extend([d.name, f"{d.name}.{ns}", f"{d.name}.{ns}.svc",
                                                 f"{d.name}.{ns}.svc.{CLUSTER_DOMAIN}"])
                break
    return out

