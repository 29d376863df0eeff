"""An elastic PyTorchJob has no Master.

With a Master the operator also injects MASTER_ADDR/RANK/WORLD_SIZE for a fixed
world, which contradicts elastic membership; the Master is not counted in
`minReplicas`/`maxReplicas` and does not scale. Use Workers only.

Source: training-operator v1.8/v1.9 pkg/controller.v1/pytorch/envvar.go setPodEnv (master env
added whenever a Master exists) and elastic.go (rendezvous on `<job>-worker-0`).
"""
from ...findings import WARNING
from ...operators.training_operator_v1 import facts as TO
from ._util import pytorchjobs, replica_specs

ID = "pytorchjob-elastic-master"
LEVEL = WARNING
BASIS = "risk"
WHY = ("The job starts; a Master's fixed-world env beside elastic Workers misleads the ranks only in some "
       "launch setups.")


def check(docs, ctx):
    for doc in pytorchjobs(docs):
        if doc.get(("spec", "elasticPolicy")) is not None and TO.MASTER in replica_specs(doc):
            yield doc.finding(ID, "elasticPolicy with a Master replica: elastic jobs should use Workers only",
                              ("spec", "pytorchReplicaSpecs", TO.MASTER))
