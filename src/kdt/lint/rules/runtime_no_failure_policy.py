"""A runtime sets a JobSet `failurePolicy`.

Without one, the first failed Job fails the whole TrainJob: a single node lost
to preemption or a flaky NIC ends a multi-day run. Set
`template.spec.failurePolicy.maxRestarts` (and rules for non-retriable
failures).

Source: jobset v0.8 api/jobset/v1alpha2/jobset_types.go FailurePolicy (absent: fail on first Job failure).
"""
from ...findings import WARNING
from ._util import runtimes

ID = "runtime-no-failure-policy"
LEVEL = WARNING
BASIS = "policy"
WHY = ("The job runs; retrying failed Jobs is a fault-tolerance choice.")


def check(docs, ctx):
    for rt in runtimes(docs):
        if rt.get(("spec", "template", "spec", "failurePolicy")) is None:
            yield rt.finding(ID, "no failurePolicy: the first failed Job fails the TrainJob (set maxRestarts)",
                             ("spec", "template", "spec"))
