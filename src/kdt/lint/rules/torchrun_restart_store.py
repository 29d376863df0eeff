"""A torchrun that restarts its workers in place sets `TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1`.

With a c10d rendezvous, torchrun's agent hands its rendezvous TCPStore to the
workers (`use_agent_store`; the default since torch 2.5, pytorch/pytorch#128096;
older torch is not affected). After a worker dies, the restarted group can read
the previous round's addresses from that store and hang, or need several
attempts (pytorch/pytorch#135712). Measured on torch 2.13 (docs/training.md):
without the setting, 2 of 5 trials hung after a killed worker; with it, none
of 20. It matters wherever the agent restarts workers: `--max-restarts` above
0 on the command line, `PET_MAX_RESTARTS`, or a PyTorchJob `elasticPolicy.maxRestarts`.

Images that set the variable themselves are listed in the option
`images_with_setting` (the project's own image does); their containers pass.
So do images whose name says their torch predates 2.5 (the official
`pytorch/pytorch:2.4.1-...`, or a tag with `torch2.4` / `pt2.4`): their
agent shares no store. An image whose torch cannot be read is assumed current.

Source: torch 2.13 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py
(`use_agent_store` is off only when the variable is "1"); pytorch/pytorch#128096 (shared
store by default), #135712 (restarts with it).
"""
from ... import kinds as K
from ... import versions
from ...findings import WARNING
from ..pods import all_containers, runtime_for, trainer_pod
from ._torchrun import env_value, image_torch_version, restarts
from ._util import d

ID = "torchrun-restart-store"
LEVEL = WARNING
BASIS = "risk"
WHY = ("A restarted group may hang (2 of 5 trials measured); the first run is unaffected.")
OPTIONS = {"images_with_setting": [versions.IMAGE_REPOSITORY]}
VAR = "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"
SHARED_STORE_SINCE = (2, 5)   # pytorch/pytorch#128096: use_agent_store on by default from torch 2.5


def _covered(c: dict, images) -> bool:
    if str(env_value(c, VAR)) == "1":
        return True
    image = str(c.get("image") or "")
    torch = image_torch_version(image)
    if torch is not None and torch < SHARED_STORE_SINCE:
        return True
    return any(image == i or image.startswith(i + ":") or image.startswith(i + "@") for i in images)


def check(docs, ctx):
    images = ctx.opt("images_with_setting") or OPTIONS["images_with_setting"]
    for doc in docs:
        if K.TRAINJOB.matches(doc):
            trainer = d(doc.get(("spec", "trainer")))
            r = restarts(doc, trainer)
            runtime = runtime_for(doc, ctx.pool(docs))
            merged = trainer_pod(doc, runtime) if (r and runtime is not None) else None
            node = merged[1] if merged else trainer
            if r and not _covered(node, images):
                yield doc.finding(ID, f"{r[1]} without {VAR}=1 in the node container: with torch >= 2.5 a "
                                      f"restarted worker group can hang on stale store addresses (pytorch/pytorch#135712)",
                                  ("spec", "trainer"))
            continue
        for pt, path, c in all_containers(doc, init=False):
            if pt is None:
                continue
            r = restarts(doc, c)
            if r and not _covered(c, images):
                yield doc.finding(ID, f"{r[1]} without {VAR}=1 in container {c.get('name')!r}: with torch >= "
                                      f"2.5 a restarted worker group can hang on stale store addresses "
                                      f"(pytorch/pytorch#135712)",
                                  path + (("env",) if "env" in c else ()))
