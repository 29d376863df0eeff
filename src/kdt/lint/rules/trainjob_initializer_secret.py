"""The Secret an initializer's `secretRef` names exists, with the keys the initializer reads.

`spec.initializer.dataset.secretRef` / `.model.secretRef` become `envFrom` of the initializer's container
(Trainer v2.3.0 plugins/jobset/builder.go Initializer): a Secret that is not there keeps the pod from
starting (CreateContainerConfigError), and the training never starts. The initializer reads its
credentials from env named as its config's fields (pkg/initializers/types/types.py): ACCESS_TOKEN for
`hf://`, ACCESS_KEY_ID and SECRET_ACCESS_KEY (ENDPOINT, REGION, ROLE_ARN) for `s3://`.

Where the Secrets are known (the input has Secrets, or the cluster file lists the Secrets its
administrator creates: `secrets` in .kdt-cluster.yaml), a name among none of them is an error, and a
Secret of the input without any of the keys its scheme reads a warning. Where nothing says which
Secrets exist, a warning says what to create.
"""
from ... import kinds as K
from ...findings import ERROR, WARNING
from ...operators.trainer_v2 import facts as TV2
from ...operators.trainer_v2 import initializers as INIT
from ._util import d, trainjobs

ID = "trainjob-initializer-secret"
LEVEL = ERROR
BASIS = "breaks"
WHY = "An initializer whose Secret is missing never starts, and neither does the training after it."


def _known(docs, ctx):
    """{(namespace, name): Secret document or None} the run and the cluster file know; None: nothing known."""
    found = {}
    for s in ctx.pool_of(docs, K.SECRET):
        found[(s.namespace, s.name)] = s
    listed = tuple(getattr(ctx.cluster, "secrets", ()) or ())
    for entry in listed:
        ns, _, name = entry.rpartition("/")
        found.setdefault((ns or "*", name), None)
    return found if found or listed else None


def check(docs, ctx):
    jobs = trainjobs(docs)
    known = _known(docs, ctx) if jobs else None
    for job in jobs:
        init = d(job.get(("spec", "initializer")))
        for name in (TV2.DATASET_INITIALIZER, TV2.MODEL_INITIALIZER):
            field = INIT.FIELD[name]
            src = d(init.get(field))
            secret = d(src.get("secretRef")).get("name")
            if not isinstance(secret, str) or not secret:
                continue
            path = ("spec", "initializer", field, "secretRef", "name")
            keys = INIT.SECRET_KEYS.get(INIT.scheme_of(str(src.get("storageUri") or "")), ())
            wants = f" with {' and '.join(keys)}" if keys else ""
            ns = job.namespace
            if known is None:
                yield job.finding(ID, f"Secret {secret!r} (the {name}'s credentials) is in none of the files checked "
                                      f"and the cluster file lists no Secrets: create it in namespace "
                                      f"{ns or 'default'}{wants} before the TrainJob (kubectl create secret generic "
                                      f"{secret}{''.join(f' --from-literal={k}=...' for k in keys)}), and list it "
                                      "under `secrets` in .kdt-cluster.yaml", path, WARNING)
                continue
            if (ns, secret) not in known and ("*", secret) not in known:
                yield job.finding(ID, f"Secret {secret!r} is neither in the files checked nor among the cluster "
                                      f"file's secrets: the {name} pod cannot start (CreateContainerConfigError) and "
                                      "the training never does", path)
                continue
            doc = known.get((ns, secret))
            data = {**d(doc.get(("data",))), **d(doc.get(("stringData",)))} if doc is not None else None
            if data is not None and keys and not set(keys) & set(data):
                yield job.finding(ID, f"Secret {secret!r} has none of the keys the {name} reads for "
                                      f"{INIT.scheme_of(str(src.get('storageUri')))}:// ({', '.join(keys)}): it "
                                      "downloads without credentials", path, WARNING)
