"""`runPolicy.backoffLimit` does nothing when every replica has `restartPolicy: Never`.

The operator counts restarts of pods it restarts itself (OnFailure, ExitCode);
with Never everywhere the first failure fails the job, whatever the limit says.

Source: training-operator v1.8/v1.9 pkg/controller.v1/common/job.go (backoff counted from
container restarts and ExitCode recreations).
"""
from ...findings import WARNING
from ._util import d, pytorchjobs, replica_specs

ID = "pytorchjob-backoff-never"
LEVEL = WARNING
BASIS = "risk"
WHY = ("The job runs; the backoffLimit written has no effect, so the first failure ends it.")


def check(docs, ctx):
    for doc in pytorchjobs(docs):
        limit = doc.get(("spec", "runPolicy", "backoffLimit"))
        rs = replica_specs(doc)
        if limit is not None and rs and all(d(r).get("restartPolicy") == "Never" for r in rs.values()):
            yield doc.finding(ID, f"backoffLimit {limit} is ignored: every replica has restartPolicy Never "
                                  "(use OnFailure or ExitCode for retries)", ("spec", "runPolicy", "backoffLimit"))
