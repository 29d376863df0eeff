"""A TrainJob passes the Trainer webhook's other checks against its runtime.

What the plugins' Validate refuse beyond the other trainjob-* rules, checked when the run has the
runtime (the merge preview reports the same refusals, and creates nothing for such a TrainJob):
- an initializer (`spec.initializer.dataset`/`model`) whose runtime has no `dataset-initializer` /
  `model-initializer` job, or no container of that name in it, or (2.3) no volume mount named
  `initializer` in it;
- (2.1) a `numProcPerNode` string other than auto, cpu, gpu;
- (2.3) an `envInjection` target container the runtime does not have;
- (2.3) a runtimePatches `manager` that is not a domain-prefixed path (`example.com/team`);
- `tune run` (torchtune): a model the runtime name does not name among the supported ones, several
  nodes for a model other than Llama 3.3 70B, QLoRA where it is not supported, (2.3) LoRA on several
  nodes, and immutable configs (output_dir, tokenizer.path, ...) in the args;
- an empty Volcano queue annotation on a Volcano runtime.

Source: trainer v2.1.0 / v2.3.0 pkg/runtime/framework/plugins/torch/torch.go, torchtune.go,
plugins/jobset/jobset.go, plugins/volcano/volcano.go (Validate); kdt.operators.trainer_v2.webhook.webhook_rejections.
"""
from ...findings import ERROR
from ._util import trainjob_rejections

ID = "trainjob-webhook"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The TrainJob webhook refuses the TrainJob.")


def check(docs, ctx):
    yield from trainjob_rejections(docs, ctx, ID)
