"""git-sync clones a full commit SHA, not a branch or a tag.

A git-sync init container (or sidecar) resolves its ref when its pod starts. Every pod of a job starts at
its own time: a pod recreated after a failure, a node added to an elastic job or a JobSet restart resolves
`main` (or a tag someone moved) again, and can get newer code than its peers. The ranks of one job then
run different code and nothing says so. A full SHA names one commit forever: every pod, whenever it
starts, runs the same code. An abbreviated hash is refused by git-sync v4 (it fetches exactly the ref
it is given; v3-to-v4.md, "Abbreviated hashes"). No ref at all means `HEAD`, the remote's default branch.

Fix: `GITSYNC_REF: <the 40-hex SHA>` (`git rev-parse main` where the code was pushed); the chart's
`code.git.commit`; components/git-code.
"""
from ...findings import ERROR
from ...operators import gitsync as G
from ._gitsync import git_syncs

ID = "git-ref-pinned"
LEVEL = ERROR
BASIS = "breaks"
WHY = "A branch or tag is resolved when each pod starts: a pod recreated after a failure, or a node added, can run other code than its peers, silently."


def _v3_ref(gs):
    """v3 (v3.6.9 cmd/git-sync/main.go): --rev (GIT_SYNC_REV, default HEAD) of --branch (default master)."""
    fl = G.flags([str(x) for x in (gs.c.get("command") or []) + (gs.c.get("args") or [])])
    rev = fl["rev"][0] if "rev" in fl else gs.env.get("GIT_SYNC_REV") or "HEAD"
    if rev != "HEAD":
        return rev, ("--rev" if "rev" in fl else "GIT_SYNC_REV")
    branch = fl["branch"][0] if "branch" in fl else gs.env.get("GIT_SYNC_BRANCH") or "master"
    return branch, ("--branch" if "branch" in fl else "GIT_SYNC_BRANCH" if gs.env.get("GIT_SYNC_BRANCH") else "default")


def check(docs, ctx):
    for doc in docs:
        for gs in git_syncs(doc):
            if gs.major == 3:
                ref, src = _v3_ref(gs)
                gs.settings.source["ref"] = src
            else:
                ref, src = gs.settings.get("ref") or G.V4_DEFAULT_REF, gs.settings.source.get("ref", "default")
            if G.FULL_SHA.match(ref):
                continue
            how = "by default" if src == "default" else f"from {src}"
            if G.HEXISH.match(ref) and gs.major != 3:
                msg = (f"git-sync is given the abbreviated hash {ref!r} ({how}): git-sync v4 fetches the ref as given and "
                       "needs the full 40-hex SHA (v3-to-v4.md); pin GITSYNC_REF to `git rev-parse " + ref + "`")
            else:
                what = "HEAD, the remote's default branch" if ref == "HEAD" else f"{ref!r}, a branch or tag"
                msg = (f"git-sync clones {what} ({how}): every pod resolves it when it starts, so a pod recreated after a "
                       "failure (or a node added later) can run newer code than its peers and the ranks of the job "
                       f"disagree silently; pin the commit: GITSYNC_REF=<full SHA> (git rev-parse {ref})")
            yield doc.finding(ID, msg, gs.where("ref"))
