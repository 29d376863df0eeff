"""Helpers of the git-sync rules (git-ref-pinned, git-code-path, git-credentials, git-sync-version): the
git-sync containers of a document's pod templates and what each resolves its settings to
(kdt.operators.gitsync)."""
from __future__ import annotations

import posixpath
from dataclasses import dataclass

from ...operators import gitsync as G
from ..pods import command_line, containers, pod_templates
from ._util import d, lst


@dataclass
class GitSync:
    pt: object            # the PodTemplate
    path: tuple           # the container's path in the document
    c: dict
    settings: G.Settings
    env: dict             # literal env values (name -> value; valueFrom entries as "")
    major: int | None

    def where(self, key: str) -> tuple:
        """The path of what set `key`: its env entry's value, its flag in command/args, else the container."""
        src = self.settings.source.get(key, "default")
        if src.startswith("--"):
            return self.flag_path(src[2:]) or self.path
        return self.env_path(src) or self.path

    def env_path(self, name: str) -> tuple | None:
        for i, e in enumerate(lst(self.c.get("env"))):
            if d(e).get("name") == name:
                return self.path + ("env", i, "value" if "value" in d(e) else "valueFrom")
        return None

    def flag_path(self, flag: str) -> tuple | None:
        for key in ("command", "args"):
            for i, a in enumerate(lst(self.c.get(key))):
                s = str(a)
                if s in (f"--{flag}", f"-{flag}") or s.startswith((f"--{flag}=", f"-{flag}=")):
                    return self.path + (key, i)
        return None


def literal_env(c: dict) -> dict[str, str]:
    out = {}
    for e in lst(c.get("env")):
        e = d(e)
        if e.get("name"):
            out[str(e["name"])] = str(e["value"]) if "value" in e and e["value"] is not None else ""
    return out


def git_syncs(doc):
    for pt in pod_templates(doc):
        for path, c in containers(pt):
            if G.is_git_sync(c.get("image")):
                env = literal_env(c)
                yield GitSync(pt, path, c, G.settings(command_line(c), env), env, G.major(str(c.get("image"))))


def mounts_of(c: dict) -> list[tuple[str, str, int]]:
    """(mountPath, volume name, index) of a container's volumeMounts."""
    return [(str(m.get("mountPath")).rstrip("/") or "/", str(m.get("name")), i)
            for i, m in enumerate(lst(c.get("volumeMounts"))) if d(m).get("mountPath") and d(m).get("name")]


def checkout(gs: GitSync) -> tuple[str, str] | None:
    """(volume name, the checkout's folder relative to that volume) of where git-sync publishes its link;
    None when its root is on no volume of the container."""
    root = posixpath.normpath(gs.settings.get("root") or G.V4_DEFAULT_ROOT)
    link = gs.settings.get("link") or ""
    target = posixpath.normpath(link if link.startswith("/") else posixpath.join(root, link))
    best = None
    for mp, vol, _ in mounts_of(gs.c):
        if root == mp or root.startswith(mp.rstrip("/") + "/"):
            if best is None or len(mp) > len(best[0]):
                best = (mp, vol)
    if best is None or not (target == best[0] or target.startswith(best[0].rstrip("/") + "/")):
        return None
    return best[1], posixpath.relpath(target, best[0])
