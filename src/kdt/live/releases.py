"""What the live control plane runs, per release set: one fact, one place.

The control plane (kube-apiserver, kube-controller-manager, kube-scheduler, etcd) is pinned by the Go
module `go/controlplane` beside this file: `k8s.io/kubernetes` with its staging modules replaced by the
matching `v0.x` releases, etcd's server as Kubernetes requires it. Its versions are read from that go.mod,
never restated. The
JobSet each Trainer release runs is the one it ships (`kdt.versions.JOBSET`).

Each operator manager is pinned by a module of its own, `go/<name>-<version>` (scripts/gen_live_modules.py):
the release required with everything its own go.mod requires at the same versions, so the build list is
upstream's; go.sum committed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .. import versions
from ..errors import UsageError

GO_DIR = Path(__file__).resolve().parent / "go"
CONTROL_PLANE_MODULE = GO_DIR / "controlplane"


@dataclass(frozen=True)
class Component:
    """One binary: a name, the Go package of its main, the module version (None: the project's module)."""
    name: str
    package: str
    version: str | None = None
    module: str | None = None      # the Go module the package belongs to (for `go mod download`)


def _required(module: str) -> str:
    text = (CONTROL_PLANE_MODULE / "go.mod").read_text()
    m = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", text, re.M)
    if not m:
        raise RuntimeError(f"{CONTROL_PLANE_MODULE / 'go.mod'} does not require {module}")
    return m.group(1)


KUBERNETES = _required("k8s.io/kubernetes")
ETCD = _required("go.etcd.io/etcd/server/v3")

CONTROL_PLANE = (
    Component("etcd", "go.etcd.io/etcd/server/v3"),
    Component("kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver"),
    Component("kube-controller-manager", "k8s.io/kubernetes/cmd/kube-controller-manager"),
    Component("kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler"),
)

# The node (kdt cluster up --real-nodes): the kubelet and kube-proxy from the control plane's module (the same
# k8s.io/kubernetes pin), the rest each from a module of its own, `go/<name>-<version>`
# (scripts/gen_live_modules.py), its release's build list as for the operators.
NODE_KUBERNETES = (
    Component("kubelet", "k8s.io/kubernetes/cmd/kubelet"),
    Component("kube-proxy", "k8s.io/kubernetes/cmd/kube-proxy"),
)


@dataclass(frozen=True)
class NodeSet:
    """Binaries built together from one upstream release: their main packages, the build tags."""
    name: str
    module: str
    version: str
    packages: tuple[str, ...]
    tags: str = ""
    cgo: bool = True
    ldflags: str = ""                 # -X version stamps, as the release's Makefile sets them ({version})

    @property
    def binaries(self) -> tuple[str, ...]:
        return tuple(p.rstrip("/").split("/")[-1] for p in self.packages)


_CTRD = "github.com/containerd/containerd/v2"
_CNI = "github.com/containernetworking/plugins"
NODE_SETS = (
    # cmd/containerd, its runc shim and ctr (the image import); tags as containerd's Makefile builds its
    # release, btrfs left out (a cgo snapshotter needing btrfs headers; the node uses overlayfs).
    NodeSet("containerd", _CTRD, "v2.4.2", (f"{_CTRD}/cmd/containerd", f"{_CTRD}/cmd/containerd-shim-runc-v2",
                                            f"{_CTRD}/cmd/ctr"), "urfave_cli_no_docs no_btrfs", cgo=False,
            ldflags="-X " + _CTRD + "/version.Version={version}"),
    NodeSet("cni-plugins", _CNI, "v1.10.0", (f"{_CNI}/plugins/main/bridge", f"{_CNI}/plugins/ipam/host-local",
                                             f"{_CNI}/plugins/main/loopback", f"{_CNI}/plugins/meta/portmap"),
            cgo=False),
    # CoreDNS from the project's own main (go/coredns-v1.15.0/coredns/main.go): the release's server with the
    # plugins a node's DNS uses, not every plugin of plugin.cfg (half the packages, none of the cloud SDKs)
    NodeSet("coredns", "github.com/coredns/coredns", "v1.15.0", ("kdt.live/coredns-v1.15.0/coredns",), cgo=False),
    NodeSet("cri-tools", "sigs.k8s.io/cri-tools", "v1.37.0", ("sigs.k8s.io/cri-tools/cmd/crictl",), cgo=False),
)


def node_module(s: NodeSet) -> Path:
    """The project's Go module that pins node set `s` (scripts/gen_live_modules.py writes it)."""
    return GO_DIR / f"{s.name}-{s.version}"


TRAINER_MODULE = "github.com/kubeflow/trainer/v2"
JOBSET_MODULE = "sigs.k8s.io/jobset"
TRAINING_OPERATOR_MODULE = "github.com/kubeflow/training-operator"
KUEUE_MODULE = "sigs.k8s.io/kueue"
SCHEDULER_PLUGINS_MODULE = "sigs.k8s.io/scheduler-plugins"
KWOK_MODULE = "sigs.k8s.io/kwok"


def schedulers() -> tuple[Component, ...]:
    """What a scale run adds to the control plane: Kueue's manager, scheduler-plugins' scheduler (its
    coscheduling plugin) and the KWOK controller that simulates nodes, each at its pinned release."""
    return (Component("kueue", f"{KUEUE_MODULE}/cmd/kueue", versions.KUEUE, KUEUE_MODULE),
            Component("scheduler-plugins", f"{SCHEDULER_PLUGINS_MODULE}/cmd/scheduler", versions.SCHEDULER_PLUGINS,
                      SCHEDULER_PLUGINS_MODULE),
            Component("kwok", f"{KWOK_MODULE}/cmd/kwok", versions.KWOK, KWOK_MODULE))


def trainer(release: str) -> tuple[Component, Component]:
    """The Trainer manager of `release` ("2.1", "2.3") and the JobSet manager that release ships."""
    if release not in versions.TRAINER:
        raise UsageError(f"no Trainer release {release!r}: the live control plane knows {', '.join(versions.TRAINER)}")
    if release not in versions.JOBSET:
        raise UsageError(f"Trainer {release}: the JobSet it ships is not in kdt.versions.JOBSET")
    return (Component("trainer", f"{TRAINER_MODULE}/cmd/trainer-controller-manager", "v" + versions.TRAINER[release],
                      TRAINER_MODULE),
            Component("jobset", JOBSET_MODULE, versions.JOBSET[release], JOBSET_MODULE))


def training_operator(release: str = versions.TRAINING_OPERATOR_DEFAULT) -> Component:
    tag = versions.TRAINING_OPERATOR_RELEASES.get(release)
    if tag is None:
        raise UsageError(f"no Training Operator release {release!r}: the live control plane knows "
                         f"{', '.join(versions.TRAINING_OPERATOR_RELEASES)}")
    return Component("training-operator", f"{TRAINING_OPERATOR_MODULE}/cmd/training-operator.v1", tag,
                     TRAINING_OPERATOR_MODULE)


def operator_components() -> list[Component]:
    """Every operator manager of every supported release, once each."""
    out: list[Component] = []
    for release in versions.TRAINER:
        for c in trainer(release):
            if c not in out:
                out.append(c)
    for release in versions.TRAINING_OPERATOR_RELEASES:
        c = training_operator(release)
        if c not in out:
            out.append(c)
    out.extend(schedulers())
    return out


def operator_module(c: Component) -> Path:
    """The project's Go module that pins `c`'s build (scripts/gen_live_modules.py writes it)."""
    return GO_DIR / f"{c.name}-{c.version}"


@dataclass(frozen=True)
class ReleaseSet:
    """What one `kdt cluster up` starts: the control plane and the managers of one Trainer release
    (with its JobSet) and one Training Operator release."""
    trainer: str = versions.TRAINER_DEFAULT
    training_operator: str = versions.TRAINING_OPERATOR_DEFAULT

    @property
    def name(self) -> str:
        return f"trainer-{self.trainer}+training-operator-{self.training_operator}"

    def operators(self) -> tuple[Component, ...]:
        return (*trainer(self.trainer), training_operator(self.training_operator))
