"""Facts about what the operators inject, reserve, name and reject.

One module per operator; every fact carries a comment naming the release and
the source file it was read from, so a new operator release is a reviewable
change. Lint rules and the merge preview import these constants; nothing here
is written twice.

- `training_operator_v1`: Kubeflow Training Operator v1 (`kubeflow.org/v1` PyTorchJob)
- `trainer_v2`: Kubeflow Trainer v2 (`trainer.kubeflow.org/v1alpha1` TrainJob, runtimes)
- `jobset`: JobSet (`jobset.x-k8s.io/v1alpha2`), which Trainer v2 renders runtimes into
- `tensorflow`: TF_CONFIG as TensorFlow reads it, and this project's TensorFlow runtime convention
- `mpi/`: the MPI Operator v2 (`kubeflow.org/v2beta1` MPIJob): what it adds to the pods it creates
"""
