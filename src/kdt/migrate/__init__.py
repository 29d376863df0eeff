"""The machinery of `kdt migrate`: a PyTorchJob becomes a TrainJob on a runtime, a TrainJob changes shape.

- `patch`: the JSON patches (RFC 6902) a migration is made of, applied to round-trip YAML or written as a
  kustomize patch;
- `launcher`: torchrun's command line read as torchrun reads it (kdt.operators.torchrun);
- `pytorchjob`: a PyTorchJob's plan (the patch, the runtime it needs, findings, what the proof may find);
- `trainjob`: a TrainJob's and a runtime's plan between Trainer 2.1 and 2.2+;
- `chart`: a values file of this project's chart, from mode pytorchjob/elastic to trainjob;
- `compare`: the pods of the merge preview before and after, compared pod by pod, every difference
  explained by a row of the table of equivalences (kdt.operators.migration) or left unexplained.

The kinds (kdt.kinds) call this through their `migrate` and `migration_pods` hooks; the stage that runs a
migration is kdt.migration.
"""
