"""The training command runs the code git-sync cloned, not the image's.

A pod that clones its code (a git-sync init container) and then runs the script baked into the image
trains on code nobody pinned: the commit is fetched, and ignored. git-sync publishes the checkout as
`<root>/<link>` (a relative symlink to `<root>/.worktrees/<sha>`; v4.3.0 main.go `publishSymlink`) on
the volume its root is on; the training container must mount that volume and run a path under the
link there (or have its workingDir there). Also reported: a git-sync root on no volume (the clone is
lost with the init container's filesystem).

Fix: mount the volume in the training container (components/git-code mounts it read-only at /code)
and run `/code/<link>/<path of the script in the repository>`.
"""
import posixpath

from ...findings import ERROR
from .. import pods as P
from ._gitsync import checkout, git_syncs, mounts_of
from ._util import lst, trainjobs

ID = "git-code-path"
LEVEL = ERROR
BASIS = "breaks"
WHY = "The run starts the image's copy of the code, not the commit the job pins: what runs is not what was reviewed."


def _runs_from(c: dict, folder: str) -> bool:
    folder = folder.rstrip("/")
    wd = str(c.get("workingDir") or "")
    if wd == folder or wd.startswith(folder + "/"):
        return True
    return any(folder + "/" in str(a) or str(a).rstrip("/") == folder or f"={folder}" in str(a)
               for a in P.command_line(c))


def _script(c: dict) -> str:
    for a in P.command_line(c):
        s = str(a)
        if s.endswith((".py", ".sh")) or (s.startswith("/") and "." in posixpath.basename(s)):
            return s
    return " ".join(P.command_line(c))[:60]


def _problems(spec: dict, gs, main_containers):
    """(container index or None, message) for the pod spec `spec` whose git-sync is `gs`."""
    where = checkout(gs)
    if where is None:
        yield None, (f"git-sync's root {gs.settings.get('root')!r} with link {gs.settings.get('link')!r} is on no volume "
                     "of its container: the clone is lost when the init container ends; mount an emptyDir there "
                     "and in the training container")
        return
    vol, rel = where
    for i, c in main_containers:
        if not P.command_line(c):
            continue
        mounts = [mp for mp, v, _ in mounts_of(c) if v == vol]
        if not mounts:
            yield i, (f"container {c.get('name')!r} does not mount volume {vol!r}, where git-sync clones the commit: "
                      f"it runs {_script(c)!r} from the image, not the pinned code; mount {vol!r} and run the script "
                      f"under <mountPath>/{rel}")
            continue
        folders = [posixpath.normpath(posixpath.join(mp, rel)) for mp in mounts]
        if not any(_runs_from(c, f) for f in folders):
            yield i, (f"container {c.get('name')!r} runs {_script(c)!r}, not a path of the clone ({folders[0]}/...): "
                      f"git-sync's checkout is fetched and ignored; run {folders[0]}/<path in the repository>")


def check(docs, ctx):
    for doc in docs:
        for gs in git_syncs(doc):
            spec = gs.pt.spec
            mains = [(i, c) for i, c in enumerate(lst(spec.get("containers"))) if isinstance(c, dict)]
            for i, msg in _problems(spec, gs, mains):
                yield doc.finding(ID, msg, gs.path if i is None else gs.pt.path + ("containers", i))
    # A TrainJob's command meets the runtime's clone only in the pod Trainer builds (the merge preview's).
    for job in trainjobs(docs):
        runtime = P.runtime_for(job, docs)
        pod = P.trainer_pod(job, runtime) if runtime is not None else None
        if pod is None:
            continue
        ps, node = pod
        from ._gitsync import GitSync, literal_env
        from ...operators import gitsync as G
        for j, c in enumerate(lst(ps.get("initContainers"))):
            if not isinstance(c, dict) or not G.is_git_sync(c.get("image")):
                continue
            env = literal_env(c)
            gs = GitSync(None, (), c, G.settings(P.command_line(c), env), env, G.major(str(c.get("image"))))
            for i, msg in _problems(ps, gs, [(0, node)]):
                if i is not None:
                    key = "command" if job.get(("spec", "trainer", "command")) is not None else "args"
                    yield job.finding(ID, msg, ("spec", "trainer", key))
