"""A PyTorchJob's name is a DNS-1035 label.

The Training Operator's webhook rejects a name that is not a DNS-1035 label (lower-case letters, digits
and `-`, starting with a letter, at most 63 characters): its Services are named `<job>-<type>-<index>`.
`0-test` passes the API server's own check (a DNS-1123 subdomain) and is refused here; the merge
preview reports the same refusal.

Source: training-operator v1.9.4 pkg/webhooks/pytorch/pytorchjob_webhook.go validatePyTorchJob
(apimachinery NameIsDNS1035Label), its test "pytorchJob name does not meet DNS1035".
"""
from ...findings import ERROR
from ._util import pytorchjob_rejections

ID = "pytorchjob-name"
LEVEL = ERROR
BASIS = "rejected"
WHY = ("The Training Operator's webhook refuses the PyTorchJob.")


def check(docs, ctx):
    yield from pytorchjob_rejections(docs, ID)
