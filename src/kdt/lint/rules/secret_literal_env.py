"""Secrets come from `secretKeyRef`, not literal env values.

An env var whose name says token, secret, password or key (HF_TOKEN,
WANDB_API_KEY, AWS_SECRET_ACCESS_KEY, ...) with a literal `value` puts the
secret in the manifest, in git and in `kubectl get -o yaml` for anyone who can
read the job. Use `valueFrom.secretKeyRef` (or envFrom a Secret).
"""
import re

from ...findings import WARNING
from ..pods import all_containers
from ._util import d, lst

ID = "secret-literal-env"
LEVEL = WARNING
BASIS = "policy"
WHY = ("The job runs as written; keeping a secret out of the manifest is a security choice (make it an error "
       "in .kdt-lint.yaml).")
OPTIONS = {"name_pattern": r"(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)$",
           "allow_values": ["", "true", "false"]}


def check(docs, ctx):
    pat = re.compile(ctx.opt("name_pattern") or OPTIONS["name_pattern"], re.I)
    allow = set(ctx.opt("allow_values") or OPTIONS["allow_values"])
    for doc in docs:
        for pt, path, c in all_containers(doc):
            for i, e in enumerate(lst(c.get("env"))):
                e = d(e)
                v = e.get("value")
                if pat.search(str(e.get("name", ""))) and v is not None and str(v) not in allow and not str(v).startswith("$("):
                    yield doc.finding(ID, f"{e['name']} has a literal value: use valueFrom.secretKeyRef",
                                      path + ("env", i, "value"))
