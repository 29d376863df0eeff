"""No `git clone` or `pip install` in a training command.

Installing at start-up makes every restart and every node download again,
races on shared caches, and runs whatever the branch or index holds that day:
two nodes of one job can run different code. Bake code and dependencies into
the image.
"""
import re

from ...findings import WARNING
from ..pods import all_containers, command_line

ID = "runtime-install"
LEVEL = WARNING
BASIS = "policy"
WHY = ("The job runs; installing at start-up is a reproducibility and start-time choice.")
OPTIONS = {"patterns": [r"\bgit\s+clone\b", r"\bpip3?\s+install\b", r"\buv\s+pip\s+install\b",
                        r"\bpython3?\s+-m\s+pip\s+install\b", r"\bconda\s+install\b"]}


def check(docs, ctx):
    pats = [re.compile(p) for p in ctx.opt("patterns") or OPTIONS["patterns"]]
    for doc in docs:
        for pt, path, c in all_containers(doc):
            line = " ".join(command_line(c))
            for p in pats:
                m = p.search(line)
                if m:
                    key = "command" if "command" in c else "args"
                    yield doc.finding(ID, f"{m.group(0)!r} at start-up: bake it into the image", path + (key,))
                    break
