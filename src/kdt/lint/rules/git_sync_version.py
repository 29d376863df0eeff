"""git-sync's flag and env names match its image's release (v3's with a v3 image, v4's with v4).

git-sync v4 renamed its settings (v3-to-v4.md; v4.3.0 main.go against v3.6.9 cmd/git-sync/main.go): env
`GIT_SYNC_*` became `GITSYNC_*`, `--branch`/`--rev` became `--ref`, `--dest` became `--link`, `--wait`
became `--period`. The rename broke many setups, both ways:

- a v3 image ignores every `GITSYNC_*` name (it reads `GIT_SYNC_*` only) and exits on `--ref`, `--link`,
  `--period` (flag provided but not defined): with GITSYNC_REPO alone it stops at "--repo must be
  specified", and a pinned GITSYNC_REF is silently not used. Error.
- a v4 image still reads most v3 names, but the deprecated `GIT_SYNC_BRANCH`/`--branch`,
  `GIT_SYNC_REV`/`--rev` and `GIT_SYNC_DEST`/`--dest` *override* `--ref`/GITSYNC_REF and
  `--link`/GITSYNC_LINK ("setting --ref from deprecated --branch"): a manifest that pins GITSYNC_REF
  and keeps seed 004's `GIT_SYNC_BRANCH: main` clones the branch. `--change-permissions`
  (GIT_SYNC_PERMISSIONS) and single-dash long flags (`-repo`) make it exit. Errors.
- other v3 names with a v4 image are read only when the v4 name is unset: a warning to rename them.

Fix: the names of the image's release (v4: GITSYNC_REPO, GITSYNC_REF, GITSYNC_ROOT, GITSYNC_LINK,
GITSYNC_DEPTH, GITSYNC_ONE_TIME; components/git-code).
"""
import re

from ...findings import ERROR, WARNING
from ...operators import gitsync as G
from ._gitsync import git_syncs
from ._util import d, lst

ID = "git-sync-version"
LEVEL = ERROR
BASIS = "breaks"
WHY = "git-sync exits on the other release's flags, a v3 image ignores GITSYNC_* and a v4 one lets the deprecated branch, rev and dest names override the pinned ref: the clone is not what the manifest says."


def _flags(gs):
    for key in ("command", "args"):
        for i, a in enumerate(lst(gs.c.get(key))):
            m = re.match(r"^(--?)([A-Za-z][\w-]*)(?:=.*)?$", str(a))
            if m:
                yield m.group(1), m.group(2), gs.path + (key, i)


def _v4(doc, gs):
    for i, e in enumerate(lst(gs.c.get("env"))):
        name = str(d(e).get("name", ""))
        path = gs.path + ("env", i, "name")
        if name in G.V4_REFUSED_ENV:
            yield doc.finding(ID, f"{name} with git-sync v4 ({gs.c.get('image')}): v4 exits, {G.V4_REFUSED_ENV[name]}", path)
        elif name in {env for env, _ in G.V4_OVERRIDING.values()}:
            setting = next(w for env, w in G.V4_OVERRIDING.values() if env == name)
            yield doc.finding(ID, f"{name} is git-sync v3's name; v4 ({gs.c.get('image')}) reads it as a deprecated setting "
                                  f"that overrides --{setting} (GITSYNC_{setting.upper()}): use GITSYNC_{setting.upper()} "
                                  "alone", path)
        elif name.startswith(G.V3_ENV_PREFIXES):
            v4 = "GITSYNC_" + name.removeprefix("GIT_SYNC_").removeprefix("GIT_")
            if name in G.V4_READS_V3:
                yield doc.finding(ID, f"{name} is git-sync v3's name: v4 reads it only when {v4} is unset; rename it "
                                      f"to {v4}", path, level=WARNING)
            else:
                yield doc.finding(ID, f"{name} is git-sync v3's name, which v4 ({gs.c.get('image')}) does not read: "
                                      "the setting is lost (v3-to-v4.md)", path)
    for dash, name, path in _flags(gs):
        if dash == "-" and len(name) > 1:
            yield doc.finding(ID, f"-{name}: git-sync v4 takes long flags with two dashes only (--{name}); v3's Go "
                                  "flags took one", path)
        elif name in G.V4_REMOVED_FLAGS:
            yield doc.finding(ID, f"--{name} with git-sync v4: v4 exits, the flag is no longer supported", path)
        elif name in G.V4_OVERRIDING:
            setting = G.V4_OVERRIDING[name][1]
            yield doc.finding(ID, f"--{name} is git-sync v3's flag; v4 reads it as deprecated and lets it override "
                                  f"--{setting}: use --{setting}", path)
        elif name in G.V3_DEPRECATED_FLAGS:
            yield doc.finding(ID, f"--{name} is git-sync v3's flag, deprecated in v4 (v3-to-v4.md)", path, level=WARNING)


def _v3(doc, gs):
    for i, e in enumerate(lst(gs.c.get("env"))):
        name = str(d(e).get("name", ""))
        if name.startswith(G.V4_ENV_PREFIX):
            v3 = "GIT_SYNC_" + name.removeprefix(G.V4_ENV_PREFIX)
            extra = " (it exits: --repo must be specified)" if name == "GITSYNC_REPO" and "GIT_SYNC_REPO" not in gs.env else ""
            yield doc.finding(ID, f"{name} is git-sync v4's name; the v3 image {gs.c.get('image')} reads only GIT_SYNC_* "
                                  f"and ignores it{extra}: use a v4 image, or v3's names ({v3})",
                              gs.path + ("env", i, "name"))
    for dash, name, path in _flags(gs):
        if name in G.V4_ONLY_FLAGS:
            yield doc.finding(ID, f"--{name} is a git-sync v4 flag; the v3 image {gs.c.get('image')} exits on it (flag "
                                  "provided but not defined): use a v4 image", path)


def check(docs, ctx):
    for doc in docs:
        for gs in git_syncs(doc):
            if gs.major == 3:
                yield from _v3(doc, gs)
            elif gs.major is not None and gs.major >= 4:
                yield from _v4(doc, gs)
