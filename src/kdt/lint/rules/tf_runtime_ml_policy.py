"""A TensorFlow runtime has no ML policy (Trainer's PlainML plugin).

Trainer v2 has no TensorFlow policy. A runtime that runs TensorFlow (its
`trainer.kubeflow.org/framework: tensorflow` label, a TensorFlow image, or
TF_CONFIG env) but sets `mlPolicy.torch` gets torchrun's PET_* env, port 29500
and a process count derived from the GPUs for processes TensorFlow never
starts; `mpi` adds a launcher job and SSH setup the workers do not expect. The
job may start, but the TrainJob's settings mean something else than they say.
Leave the policy out (mlPolicy with numNodes only): PlainML sets the pod count
and applies trainer.env, and the pods build TF_CONFIG.

Source: kubeflow/trainer pkg/runtime/framework/plugins/plainml/plainml.go,
plugins/torch/torch.go, plugins/mpi/mpi.go.
"""
from ...findings import WARNING
from ...operators.trainer_v2 import facts as TV2
from ._tf import runs_tensorflow
from ._util import d, runtimes

ID = "tf-runtime-ml-policy"
LEVEL = WARNING
BASIS = "risk"
WHY = ("The job may start; the torch or MPI settings then mean something else than they say.")


def check(docs, ctx):
    for rt in runtimes(docs):
        ml = d(rt.get(("spec", "mlPolicy")))
        sources = [k for k in ml if k in TV2.ML_POLICY_SOURCES]
        if not sources:
            continue
        why = runs_tensorflow(rt)
        if why:
            yield rt.finding(ID, f"runs TensorFlow ({why}) but sets mlPolicy.{sources[0]}: Trainer then configures "
                                 f"{sources[0]} launchers the job does not run; a TensorFlow runtime has no policy "
                                 "(PlainML: pod count and trainer.env only)", ("spec", "mlPolicy", sources[0]))
