"""Kubeflow Trainer v2 (`trainer.kubeflow.org/v1alpha1` TrainJob, TrainingRuntime, ClusterTrainingRuntime).

- `shapes`: the table of what differs between the TrainJob's shapes (2.1; 2.2 and later), which every stage
  reads instead of comparing releases;
- `facts`: names, reserved env, the runtime's fields, the runtime's rejections;
- `webhook`: what the TrainJob validating webhook refuses (`webhook_rejections`), shared by lint and preview;
- `torchtune`: the torch plugin's torchtune command rewrite and checks;
- `expand`: the JobSet (and PodGroup) Trainer builds from a TrainJob and its runtime, continued by
  kdt.operators.jobset.expand.
The package imports none of its modules: each is loaded where it is read.
"""
