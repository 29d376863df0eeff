"""An initializer's `storageUri` is one its image reads: scheme and shape.

Trainer's initializers download a TrainJob's dataset and model before training starts
(`spec.initializer.dataset` / `.model`, or the runtime's STORAGE_URI). Nothing checks the URI when the
TrainJob is created: a scheme the image does not know, or a shape it cannot parse, is found only when
the initializer pod runs, and the training never starts. The v2.3.0 images read:

- dataset-initializer: `hf://<org>/<name>` (a Hugging Face dataset; `hf://<name>` fails with an
  IndexError, kubeflow/sdk#563, and segments past the second are dropped), `s3://<bucket>/<prefix>`,
  `cache://<schema>/<table>`;
- model-initializer: `hf://<org>/<name>` or `hf://<name>` (nothing more: the rest is no repository id),
  `s3://<bucket>/<prefix>`.

`pvc://`, `gs://`, `https://` or a bare repository name are refused by both (an error here). A dataset
URI whose extra segments are dropped is a warning.

Source: kubeflow/trainer v2.3.0 pkg/initializers (dataset/__main__.py, model/__main__.py,
dataset/huggingface.py, model/huggingface.py, dataset/s3.py, dataset/cache.py, utils/utils.py);
kdt.operators.trainer_v2.initializers holds the facts.
"""
from ...findings import ERROR, WARNING
from ...operators.trainer_v2 import facts as TV2
from ...operators.trainer_v2 import initializers as INIT
from ._util import d, lst, runtimes, trainjobs

ID = "trainjob-initializer-uri"
LEVEL = ERROR
BASIS = "breaks"
WHY = "The initializer pod fails on a URI its image cannot read, and the training never starts."


def _uris(docs):
    """(document, path, initializer job, URI) of every storageUri the run gives an initializer."""
    for job in trainjobs(docs):
        init = d(job.get(("spec", "initializer")))
        for name in (TV2.DATASET_INITIALIZER, TV2.MODEL_INITIALIZER):
            field = INIT.FIELD[name]
            src = d(init.get(field))
            if isinstance(src.get("storageUri"), str):
                yield job, ("spec", "initializer", field, "storageUri"), name, src["storageUri"]
            for i, e in enumerate(lst(src.get("env"))):
                if d(e).get("name") == INIT.STORAGE_URI_ENV and isinstance(d(e).get("value"), str):
                    yield job, ("spec", "initializer", field, "env", i, "value"), name, e["value"]
    for rt in runtimes(docs):
        for j, rj in enumerate(TV2.replicated_jobs(rt.data)):
            name = d(d(rj.get("template")).get("metadata")).get("labels", {}).get(TV2.ANCESTOR_LABEL)
            if name not in INIT.FIELD:
                continue
            pod = ("spec", "template", "spec", "replicatedJobs", j, "template", "spec", "template", "spec")
            for k, c in enumerate(lst(d(d(d(d(rj.get("template")).get("spec")).get("template")).get("spec")).get("containers"))):
                for i, e in enumerate(lst(d(c).get("env"))):
                    if d(e).get("name") == INIT.STORAGE_URI_ENV and isinstance(d(e).get("value"), str):
                        yield rt, pod + ("containers", k, "env", i, "value"), name, e["value"]


def check(docs, ctx):
    for doc, path, name, uri in _uris(docs):
        for message, error in INIT.uri_problems(name, uri):
            yield doc.finding(ID, message, path, ERROR if error else WARNING)
