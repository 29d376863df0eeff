"""What every area module writes to: the findings of one document, and the options of the version checked.

A check calls `Report.err(rule, path, message)`; nothing is located until the
document is done (locating composes the document's node tree, which valid
documents never pay for). `Options` holds what depends on the Kubernetes
version validated against (feature gates whose default changed within the
versions kdt bundles, 1.25 to 1.37), each with the release and source file
that says so.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

from ..documents import Document
from ..findings import ERROR, WARNING, Finding
from .. import formats as F


@dataclass(frozen=True)
class Options:
    """What the Kubernetes version changes (pkg/features/kube_features.go of kubernetes/kubernetes)."""

    minor: int
    # RelaxedEnvironmentVariableValidation: alpha 1.30, beta and on by default 1.32, GA 1.34: env names
    # (and envFrom prefixes) are any printable ASCII but '='; before, the C-identifier-like form.
    relaxed_env_names: bool
    # PodLifecycleSleepActionAllowZero: alpha 1.32, on by default 1.33: `sleep: {seconds: 0}`.
    sleep_zero: bool
    # ContainerRestartRules: alpha 1.34, beta and on by default 1.35: a regular container's restartPolicy is
    # allowed; off, pkg/api/pod/util.go dropContainerRestartRules removes it before validation (1.34 on), so
    # from 1.34 it is never refused; before, "may not be set for non-init containers".
    container_restart_rules: bool
    # StrictIPCIDRValidation: alpha (off) 1.33, beta and on by default 1.36 (kubernetes v1.36.3
    # pkg/features/kube_features.go): the IPs and CIDRs of the legacy fields (a Node's podCIDRs, a Service's
    # loadBalancerSourceRanges and externalIPs, a NetworkPolicy's ipBlock, a pod's nameservers and hostAliases)
    # may not have leading zeros nor be IPv4-mapped IPv6, and a CIDR may not have bits set beyond its prefix
    # (k8s.io/apimachinery v0.36.3 pkg/util/validation/ip.go; kdt.formats.is_valid_cidr_for_legacy_field).
    strict_ip_cidr: bool = False

    @classmethod
    def for_version(cls, kubernetes_version: str) -> "Options":
        minor = int(str(kubernetes_version).split(".")[1])
        return cls(minor, relaxed_env_names=minor >= 32, sleep_zero=minor >= 33, container_restart_rules=minor >= 34,
                   strict_ip_cidr=minor >= 36)


class Report:
    """The findings of one document: (rule, path, message[, level]) until `findings()` locates them."""

    __slots__ = ("doc", "opts", "_found")

    def __init__(self, doc: Document, opts: Options):
        self.doc = doc
        self.opts = opts
        self._found: list[tuple[str, tuple, str]] = []

    def err(self, rule: str, path: tuple, message: str) -> None:
        self._found.append((rule, path, message))

    def warn(self, rule: str, path: tuple, message: str) -> None:
        """What the API server accepts with a warning (its `Warning:` lines, e.g. pkg/api/pod/warnings.go)."""
        self._found.append((rule, path, message, WARNING))

    def each(self, rule: str, path: tuple, value: Any, messages: list[str]) -> None:
        """One finding per message of a format check, naming the value as the API server does."""
        for m in messages:
            self._found.append((rule, path, f"Invalid value: {quote(value)}: {m}"))

    def __bool__(self) -> bool:
        return bool(self._found)

    def found(self) -> list[tuple[str, tuple, str]]:
        """(rule, path, message) of each finding so far, not located."""
        return list(self._found)

    def findings(self) -> list[Finding]:
        seen = set()
        out = []
        for rule, path, message, *level in self._found:
            if (rule, path, message) in seen:
                continue
            seen.add((rule, path, message))
            out.append(self.doc.finding(rule, message, list(path), level=level[0] if level else ERROR))
        return out


# Memoized format checks: names, keys and env names repeat across the documents of a stream.
_CACHE_MAX = 16384


def memo(fn: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    cache: dict[str, list[str]] = {}

    def check(value: str) -> list[str]:
        got = cache.get(value)
        if got is None:
            if len(cache) >= _CACHE_MAX:
                cache.clear()
            got = cache[value] = fn(value)
        return got
    check.__doc__ = fn.__doc__
    return check


dns1123_label = memo(F.is_dns1123_label)
dns1123_subdomain = memo(F.is_dns1123_subdomain)
dns1035_label = memo(F.is_dns1035_label)
label_key = memo(F.is_label_key)
label_value = memo(F.is_label_value)
port_name = memo(F.is_valid_port_name)
env_name = memo(F.is_env_var_name)
relaxed_env_name = memo(F.is_relaxed_env_var_name)
config_key = memo(F.is_config_map_key)


def quote(value: Any) -> str:
    """A value as the API server's messages show it: strings in double quotes."""
    return json.dumps(value) if isinstance(value, str) else str(value)


def d(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def lst(v: Any) -> list:
    return v if isinstance(v, list) else []


def as_int(v: Any) -> int | None:
    """An integer field's value (schema errors are the schema's: anything else is None)."""
    return v if isinstance(v, int) and not isinstance(v, bool) else None
