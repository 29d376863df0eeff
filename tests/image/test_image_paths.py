"""Every path the rendered manifests hand to the training container exists in the image.

For every target `kdt.targets.discover()` finds (overlays and chart ci values),
the absolute paths in the trainer containers' command and args (sample
scripts, --checkpoint-dir, --data-dir, ... also inside `bash -c` scripts) and
their volume mount points, and the modules run with `python3 -m` (looked up
on the image's PYTHONPATH), are checked against training/Dockerfile, read as
text: a path is in the image when a COPY puts it there (and the file exists in
the repo's training/ folder and .dockerignore admits it), or when it lies in a
directory the image creates that the pods' user can write to. The pods' user
and groups must be the image's user.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from image_support import ROOT
from image_layout import Layout, writable
from kdt import versions
from kdt.documents import Document, load_stream
from kdt.findings import format_path
from kdt.render import render
from kdt.targets import discover

# Paths the container runtime or every base image provides, not the Dockerfile.
RUNTIME = ("/dev", "/proc", "/sys", "/tmp", "/var/run/secrets", "/etc/hostname", "/etc/hosts")
BASE_EXECUTABLES = ("/bin/bash", "/bin/sh", "/usr/bin/env")
PLACEHOLDER = "trainer"   # the image name the sources use before components/image rewrites it

# An absolute path at the start of a word, after `=`, `:` or a quote; stops at $ (a variable).
_PATH = re.compile(r"(?:^|(?<=[\s=:'\"]))(/[\w.@+-]+(?:/[\w.@+-]*)*)")


@dataclass
class Use:
    doc: Document
    path: tuple          # JSON path in the document
    value: str           # the absolute path found there (kind "module": the module name)
    kind: str            # "arg", "mount" or "module"
    read_only: bool = False

    def where(self) -> str:
        line, col, _ = self.doc.locate(self.path)
        return (f"{self.doc.file}:{line}:{col}: doc {self.doc.index} {self.doc.kind}/{self.doc.name} "
                f"{format_path(self.path)}")


def is_trainer(obj: dict) -> bool:
    """A container (or TrainJob trainer, or an override of one) that runs the training image."""
    image = obj.get("image")
    if image is None:
        return True   # an override merged into a container whose image is set elsewhere
    return isinstance(image, str) and (image == PLACEHOLDER or image.startswith(versions.IMAGE_REPOSITORY + ":")
                                       or image.startswith(versions.IMAGE_REPOSITORY + "@"))


def uses(doc: Document) -> list[Use]:
    out: list[Use] = []

    def walk(node, path: tuple) -> None:
        if isinstance(node, dict):
            if any(k in node for k in ("command", "args", "volumeMounts")) and is_trainer(node):
                words = []   # (word, where) over command then args, also inside `bash -c` scripts
                # a path under one of the container's own mounts comes from that volume (the git-sync clone
                # of components/git-code), not from the image
                mounted = [m["mountPath"] for m in node.get("volumeMounts") or []
                           if isinstance(m, dict) and isinstance(m.get("mountPath"), str)]
                for key in ("command", "args"):
                    items = node.get(key)
                    if isinstance(items, list):
                        for i, item in enumerate(items):
                            if isinstance(item, str):
                                for m in _PATH.finditer(item):
                                    kind = "volume" if any(under(m.group(1), v) for v in mounted) else "arg"
                                    out.append(Use(doc, path + (key, i), m.group(1), kind))
                                words += [(w, path + (key, i)) for w in item.split()]
                for (w, _), (nxt, where) in zip(words, words[1:]):
                    if w == "-m" and re.fullmatch(r"[A-Za-z_][\w.]*", nxt):
                        out.append(Use(doc, where, nxt, "module"))
                for i, mount in enumerate(node.get("volumeMounts") or []):
                    if isinstance(mount, dict) and isinstance(mount.get("mountPath"), str):
                        out.append(Use(doc, path + ("volumeMounts", i, "mountPath"), mount["mountPath"], "mount",
                                       bool(mount.get("readOnly"))))
            for k, v in node.items():
                walk(v, path + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, path + (i,))

    walk(doc.data, ())
    return out


def run_ids(layout: Layout) -> tuple[str, str]:
    user, _, group = layout.user.partition(":")
    uid = layout.users.get(user, (user, ""))[0]
    return uid, group or layout.users.get(user, ("", uid))[1]


def under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def problem(value: str, use_kind: str, layout: Layout, dockerignore, read_only: bool = False) -> str | None:
    """Why `value` would not be there in the image of this layout (None: it is)."""
    p = posixpath.normpath(value)
    if any(under(p, r) for r in RUNTIME) or p in BASE_EXECUTABLES:
        return None
    if use_kind == "mount" and read_only:
        return None   # a read-only volume (a secret, a dataset) may go anywhere
    for dest, src in reversed(layout.copies):   # a later COPY wins
        if dest.endswith("/") and under(p, dest) or p == dest:
            rel = p[len(dest.rstrip("/")):].lstrip("/")
            repo = posixpath.normpath(posixpath.join(src, rel)) if rel else src.rstrip("/")
            if not (ROOT / repo).exists():
                return f"{value}: the image has it from COPY {src} {dest}, but {repo} does not exist in the repository"
            if dockerignore.excluded(repo):
                return f"{value}: {repo} is left out of the build context by .dockerignore"
            return None
    uid, gid = run_ids(layout)
    owning = [d for d in layout.dirs.values() if under(p, d.path)]
    if not owning:
        return (f"{value}: not in the image ({layout.variant}): no COPY, WORKDIR or RUN install -d/mkdir in "
                f"training/Dockerfile makes it or a folder above it")
    d = max(owning, key=lambda d: len(d.path))
    if use_kind == "mount" and p != d.path and not read_only:
        return f"{value}: a writable volume is mounted below {d.path}, not at a mount point the image makes"
    if p != d.path and not writable(d, uid, gid, layout.users):
        return (f"{value}: below {d.path} ({d.how}), which user {uid}:{gid} cannot write, and nothing "
                f"in the image puts it there")
    if use_kind == "mount" and not read_only and not writable(d, uid, gid, layout.users):
        return f"{value}: writable volume mounted at {d.path}, which the image's user {uid}:{gid} cannot write"
    return None


def module_problem(module: str, layout: Layout, dockerignore) -> str | None:
    """Why `python3 -m module` would find no module of ours in the image (None: it would)."""
    top = module.split(".")[0]
    if top in ("torch", "pip", "venv", "json") or top in __import__("sys").stdlib_module_names:
        return None   # the base image's Python and torch provide it
    roots = [r for r in layout.env.get("PYTHONPATH", "").split(":") if r]
    if not roots:
        return f"-m {module}: the image ({layout.variant}) sets no PYTHONPATH, so no module of training/ is importable"
    rel = module.replace(".", "/")
    tried = []
    for root in roots:
        for cand in (f"{root}/{rel}.py", f"{root}/{rel}/__main__.py"):
            if problem(cand, "arg", layout, dockerignore) is None:
                return None
            tried.append(cand)
    return f"-m {module}: none of {', '.join(tried)} is in the image ({layout.variant}, PYTHONPATH={':'.join(roots)})"


def check(docs: list[Document], layouts: dict[str, Layout], dockerignore) -> tuple[list[str], list[Use]]:
    problems, found = [], []
    for doc in docs:
        for use in uses(doc):
            found.append(use)
            for layout in layouts.values():
                if use.kind == "module":
                    why = module_problem(use.value, layout, dockerignore)
                elif use.kind == "volume":
                    why = None
                else:
                    why = problem(use.value, use.kind, layout, dockerignore, use.read_only)
                if why:
                    problems.append(f"{use.where()}: {why}")
    return problems, found


TARGETS = discover()


def test_targets_discovered():
    assert any(t.kind == "kustomize" for t in TARGETS), "no overlays found: nothing to check the image against"


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_container_paths_exist_in_image(target, layouts, tf_layouts, dockerignore):
    rendered = render(target)
    assert rendered.ok, [f.message for f in rendered.findings]
    tensorflow = any(f":{versions.IMAGE_TAG_TENSORFLOW}" in d.text for d in rendered.documents)
    problems, found = check(rendered.documents, tf_layouts if tensorflow else layouts, dockerignore)
    assert not problems, "\n".join(problems)
    # every target runs a sample script from the image
    scripts = [u.value for u in found if u.kind == "arg" and re.fullmatch(r"/app/training/\w+\.py", u.value)
               or u.kind == "volume" and re.fullmatch(r"/\S+/training/\w+\.py", u.value)
               and (ROOT / "training" / u.value.rsplit("/", 1)[1]).is_file()]
    assert scripts, f"{target.name}: no /app/training/<sample>.py (or this repository's sample in a clone of it) in any trainer command or args"
    modules = {u.value for u in found if u.kind == "module"}
    if tensorflow:   # TensorFlow runs its script directly: no torchrun, and its image has no torch
        assert "trainkit.torchrun" not in modules, f"{target.name}: torchrun in a TensorFlow recipe"
    else:
        assert "trainkit.torchrun" in modules, f"{target.name}: launcher not seen"


def user_problems(docs: list[Document], layouts: dict[str, Layout]) -> tuple[list[str], int]:
    """runAsUser / runAsGroup / fsGroup set in documents that run the image, against the image's USER."""
    bad, seen = [], 0
    for layout in layouts.values():
        uid, gid = run_ids(layout)
        want = {"runAsUser": uid, "runAsGroup": gid, "fsGroup": gid}
        for doc in docs:
            if versions.IMAGE_REPOSITORY not in doc.text:
                continue
            stack = [(doc.data, ())]
            while stack:
                node, path = stack.pop()
                if isinstance(node, dict) and isinstance(node.get("image"), str) \
                        and versions.IMAGE_REPOSITORY not in node["image"]:
                    continue     # a container of another image (the git-sync clone step) runs as that image's user
                if isinstance(node, dict):
                    ctx = node.get("securityContext")
                    if isinstance(ctx, dict):
                        for key, value in want.items():
                            if key in ctx:
                                seen += 1
                                if str(ctx[key]) != value:
                                    p = path + ("securityContext", key)
                                    line, col, _ = doc.locate(p)
                                    bad.append(f"{doc.file}:{line}:{col}: doc {doc.index} {doc.kind}/{doc.name} "
                                               f"{format_path(p)} is {ctx[key]}; the image ({layout.variant}) "
                                               f"runs as {uid}:{gid}")
                    stack.extend((v, path + (k,)) for k, v in node.items())
                elif isinstance(node, list):
                    stack.extend((v, path + (i,)) for i, v in enumerate(node))
    return bad, seen


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_pod_user_is_image_user(target, layouts):
    bad, seen = user_problems(render(target).documents, layouts)
    assert not bad, "\n".join(bad)
    assert seen, f"{target.name}: no pod sets runAsUser, runAsGroup or fsGroup for the image's user"


def test_default_command_paths_exist(layouts, dockerignore):
    for layout in layouts.values():
        assert layout.cmd, "training/Dockerfile has no CMD"
        for word in layout.cmd:
            for m in _PATH.finditer(word):
                assert problem(m.group(1), "arg", layout, dockerignore) is None, (word, layout.variant)
        for flag, module in zip(layout.cmd, layout.cmd[1:]):
            if flag == "-m":
                assert module_problem(module, layout, dockerignore) is None, (module, layout.variant)


# --- the checker itself, on manifests written to break the contract ---------------

BROKEN = f"""\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: broken
spec:
  template:
    spec:
      securityContext:
        fsGroup: 2000
      initContainers:
        - name: fetch
          image: busybox:1.36
          command: [sh, -c, "wget -O /nowhere/x http://example.com"]
      containers:
        - name: trainer
          image: {versions.IMAGE_REPOSITORY}:0.1.0
          command: [/bin/bash, -c]
          args:
            - |
              exec python3 -m trainkit.no_such_launcher /app/training/no_such_sample.py \\
                --checkpoint-dir=/ckpt/run --data-dir=/data/mnist --log=/app/logs/x
          volumeMounts:
            - {{name: scratch, mountPath: /scratch}}
            - {{name: secret, mountPath: /etc/creds, readOnly: true}}
            - {{name: out, mountPath: /out}}
"""


def test_checker_reports_each_broken_path(layouts, dockerignore):
    docs, findings = load_stream(BROKEN, "broken.yaml")
    assert not findings
    problems, found = check(docs, layouts, dockerignore)
    text = "\n".join(problems)
    values = {u.value for u in found}
    assert "/nowhere/x" not in values                      # another image's container is not ours to check
    assert "training/no_such_sample.py does not exist" in text
    assert "-m trainkit.no_such_launcher: none of /app/training/trainkit/no_such_launcher.py" in text
    assert "/ckpt/run: not in the image" in text
    assert "/app/logs/x: below /app" in text                # /app is the root-owned code folder
    assert "/scratch: not in the image" in text             # writable mount where the image has nothing
    for fine in ("/data/mnist", "/etc/creds", "/out:", "/bin/bash"):
        assert not any(fine in p for p in problems), fine
    bad, seen = user_problems(docs, layouts)
    assert seen == len(layouts) and len(bad) == len(layouts)
    assert "spec.template.spec.securityContext.fsGroup is 2000" in bad[0]
    # every problem names file, line, column, document and JSON path
    assert all(re.match(r"broken\.yaml:\d+:\d+: doc 0 StatefulSet/broken spec\.template", p) for p in problems), text
