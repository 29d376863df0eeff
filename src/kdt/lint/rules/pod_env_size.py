"""A container's environment and command line fit what Linux lets a program start with.

The container runtime starts a container's process with `execve`, which gets
the command line and the environment together. Linux refuses it ("argument
list too long", E2BIG: the container never starts, CrashLoopBackOff or
CreateContainerError) when

- any one string, an `NAME=value` of the environment or one word of
  command/args, is longer than 131,072 bytes (MAX_ARG_STRLEN, 32 pages), or
- all of them together (each with its terminating NUL, plus one 8-byte pointer
  each) pass a quarter of the process's stack limit: 2 MiB under the 8 MiB
  default the container runtimes pass on (option `stack_limit_bytes`).

Environment that grows with the number of nodes (a host list, a TF_CONFIG or
JSON of every address pasted into a value) fits at 2 nodes and fails at 64.
Counted: literal `env` values, `envFrom` and `valueFrom` references to a
ConfigMap or Secret in the same stream (a Secret's `data` decoded), the
operator's own env for a TrainJob (the merge preview's pod), command and args.
Not counted, so the check never over-reports: values only the cluster knows
(references to objects not in the stream, fieldRef, resourceFieldRef), the
image's ENV and the few service variables the kubelet adds. Put large
settings in a mounted file instead.

Source: Linux include/uapi/linux/binfmts.h (MAX_ARG_STRLEN = PAGE_SIZE * 32),
fs/exec.c bprm_stack_limits (limit = min(6 MiB, RLIMIT_STACK / 4), less one
pointer per string) and copy_strings (E2BIG for a longer string).
"""
from __future__ import annotations

import base64
import binascii

from ... import kinds as K
from ...operators import kubernetes as KUBE
from ...findings import ERROR
from ..pods import all_containers, command_line, runtime_for, trainer_pod
from ._util import d, lst

ID = "pod-env-size"
LEVEL = ERROR
BASIS = "breaks"
WHY = ("execve refuses the process (E2BIG): the container never starts.")
OPTIONS = {"stack_limit_bytes": 8 * 1024 * 1024}

MAX_ARG_STRLEN = 32 * 4096          # include/uapi/linux/binfmts.h
STK_LIM_CAP = 8 * 1024 * 1024 // 4 * 3  # fs/exec.c: _STK_LIM / 4 * 3
POINTER = 8


def _size(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass")) + 1   # with its NUL


def _sources(docs) -> dict[tuple[str, str, str], dict[str, str]]:
    """(kind, namespace, name) -> its key/values, for the ConfigMaps and Secrets in the stream."""
    out = {}
    for doc in docs:
        if K.CONFIGMAP.matches(doc):
            values = {str(k): str(v) for k, v in d(doc.get(("data",))).items()}
            values.update({str(k): "x" * (len(str(v)) * 3 // 4) for k, v in d(doc.get(("binaryData",))).items()})
        elif K.SECRET.matches(doc):
            values = {}
            for k, v in d(doc.get(("data",))).items():
                try:
                    values[str(k)] = base64.b64decode(str(v), validate=True).decode("utf-8", "replace")
                except (binascii.Error, ValueError):
                    continue
            values.update({str(k): str(v) for k, v in d(doc.get(("stringData",))).items()})
        else:
            continue
        out[(doc.kind, doc.namespace or "", doc.name)] = values
    return out


def _environment(c: dict, ns: str, sources) -> list[tuple[str, str, tuple]]:
    """(name, value, path) of every variable of the container whose value the stream tells."""
    env: dict[str, tuple[str, tuple]] = {}
    for i, ref in enumerate(lst(c.get("envFrom"))):
        ref = d(ref)
        prefix = str(ref.get("prefix") or "")
        for kind, key in KUBE.ENV_FROM:
            name = d(ref.get(key)).get("name")
            values = sources.get((kind, ns, str(name))) if name is not None else None
            for k, v in (values or {}).items():
                env[prefix + k] = (v, ("envFrom", i))
    for i, e in enumerate(lst(c.get("env"))):
        e = d(e)
        name = str(e.get("name", ""))
        if "value" in e and e["value"] is not None:
            env[name] = (str(e["value"]), ("env", i, "value"))
            continue
        vf = d(e.get("valueFrom"))
        for kind, key in KUBE.VALUE_FROM:
            ref = d(vf.get(key))
            values = sources.get((kind, ns, str(ref.get("name")))) if ref else None
            if values is not None and str(ref.get("key")) in values:
                env[name] = (values[str(ref.get("key"))], ("env", i, "valueFrom"))
                break
        else:
            env.pop(name, None)      # a later entry of the same name replaces an earlier one
    return [(k, v, p) for k, (v, p) in env.items()]


def _check_container(doc, path: tuple, c: dict, sources, limit: int, extra_env=()):
    ns = doc.namespace or ""
    env = _environment(c, ns, sources)
    known = {k for k, _, _ in env}
    env += [(k, v, ()) for k, v in extra_env if k not in known]
    argv = command_line(c)
    name = c.get("name", "")
    for k, v, p in env:
        if _size(f"{k}={v}") > MAX_ARG_STRLEN:
            yield doc.finding(ID, f"container {name!r}: env {k} is {_size(f'{k}={v}') - 1:,} bytes: Linux starts no "
                                  f"process with an environment string over {MAX_ARG_STRLEN:,} bytes "
                                  f"(argument list too long); mount it as a file", path + p)
    for i, word in enumerate(argv):
        if _size(word) > MAX_ARG_STRLEN:
            yield doc.finding(ID, f"container {name!r}: command word {i} is {_size(word) - 1:,} bytes: Linux starts "
                                  f"no process with an argument over {MAX_ARG_STRLEN:,} bytes; mount it as a file",
                              path + (("args",) if "args" in c else ("command",)))
    total = sum(_size(f"{k}={v}") + POINTER for k, v, _ in env) + sum(_size(w) + POINTER for w in argv)
    if total > limit:
        where = max(env, key=lambda e: len(e[1]), default=None)
        yield doc.finding(ID, f"container {name!r}: environment and command line take {total:,} bytes; execve "
                              f"refuses more than {limit:,} (a quarter of the stack limit): the container cannot "
                              f"start; move large values into mounted files",
                          path + (where[2] if where and where[2] else ()))


def check(docs, ctx):
    stack = int(ctx.opt("stack_limit_bytes") or OPTIONS["stack_limit_bytes"])
    limit = max(min(STK_LIM_CAP, stack // 4), MAX_ARG_STRLEN)
    pool = ctx.pool(docs)
    sources = _sources(ctx.pool_of(docs, K.CONFIGMAP, K.SECRET))
    for doc in docs:
        for pt, path, c in all_containers(doc):
            if pt is None:          # a TrainJob's trainer: checked in the pod the operator makes of it
                runtime = runtime_for(doc, pool)
                pod = trainer_pod(doc, runtime) if runtime is not None else None
                node = pod[1] if pod else c
                injected = [(str(d(e).get("name")), str(d(e).get("value"))) for e in lst(d(node).get("env"))
                            if "value" in d(e) and d(e).get("value") is not None]
                yield from _check_container(doc, path, c, sources, limit, injected)
                continue
            yield from _check_container(doc, path, c, sources, limit)
