"""The Training Operator's init container template: what `--pytorch-init-container-template-file` reads.

kubeflow/training-operator pkg/controller.v1/pytorch/initcontainer.go (v1.8.1 and v1.9.4 alike):
getInitContainerGenerator reads the file once, when the first Worker pod is built (sync.Once: a
changed file takes effect when the operator restarts); a file it cannot read means the built-in
template (getInitContainerTemplateOrDefault), which kdt.operators.injection.v1_init_container spells.
GetInitContainer executes the text as a Go html/template with three fields, `.MasterAddr`
(`<job>-master-0`), `.InitContainerImage` (--pytorch-init-container-image) and `.MaxTries`
(--pytorch-init-container-max-tries), parses the result with sigs.k8s.io/yaml into a list of
core/v1 Containers, and setInitContainer appends every one of them to the init containers of each
Worker pod of a job that has a Master. Any error there (a template that does not parse or execute,
YAML that is not a list of containers) is returned to the reconcile: the Worker pods are never
created. pkg/config/config.go: the flag's default, `/etc/config/initContainer.yaml`.

kdt reads the template the way the operator does, for the actions a container template needs:
`{{.Field}}` (spaces and the `{{- -}}` trim markers allowed) and comments; the values are
HTML-escaped as html/template escapes text. Any other action is refused with a one-line message
rather than guessed at.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ...documents import load_all
from ...errors import UsageError
from ...kubeyaml import APPLY
from .. import injection as INJ
from . import facts as TO1

FLAG = "--pytorch-init-container-template-file"
IMAGE_FLAG = "--pytorch-init-container-image"
MAX_TRIES_FLAG = "--pytorch-init-container-max-tries"
DEFAULT_FILE = "/etc/config/initContainer.yaml"       # config.go PyTorchInitContainerTemplateFileDefault
FIELDS = ("MasterAddr", "InitContainerImage", "MaxTries")
OPTION = "pytorch_init_container_template"   # its key in the merge preview's options (ExpandContext.options)
BUILT_IN = "the operator's built-in template"

# html/template's escaper for text (htmlReplacementTable): what a value becomes in the output.
_HTML = {"\0": "\ufffd", '"': "&#34;", "&": "&amp;", "'": "&#39;", "+": "&#43;", "<": "&lt;", ">": "&gt;"}
_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.DOTALL)
_FIELD = re.compile(r"^\.([A-Za-z_][A-Za-z0-9_]*)$")


class TemplateError(Exception):
    """The operator would fail on this template: its Worker pods are not created."""


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def execute(text: str, values: dict) -> str:
    """The template's output for `values` (field name -> value), as text/template + html escaping make it."""
    out = []
    pos = 0
    for m in _ACTION.finditer(text):
        before = text[pos:m.start()]
        if m.group(1):
            before = before.rstrip(" \t\r\n")
        out.append(before)
        pos = m.end()
        if m.group(3):
            rest = text[pos:]
            pos += len(rest) - len(rest.lstrip(" \t\r\n"))
        body = m.group(2).strip()
        if body.startswith("/*") and body.endswith("*/"):
            continue
        f = _FIELD.match(body)
        if f is None:
            raise TemplateError(f"line {_line(text, m.start())}: {{{{{m.group(2).strip()}}}}}: kdt reads the actions "
                                f"{{{{.{'}}, {{.'.join(FIELDS)}}}}} only")
        if f.group(1) not in values:
            raise TemplateError(f"line {_line(text, m.start())}: can't evaluate field {f.group(1)}: the operator "
                                f"gives the template {', '.join('.' + x for x in FIELDS)} only")
        out.append("".join(_HTML.get(ch, ch) for ch in str(values[f.group(1)])))
    if "{{" in text[pos:]:
        raise TemplateError(f"line {_line(text, pos)}: an unterminated action")
    out.append(text[pos:])
    return "".join(out)


@dataclass(frozen=True)
class InitTemplate:
    """The template a cluster's Training Operator uses (text None: its built-in one)."""

    text: str | None = field(default=None, repr=False)
    source: str = BUILT_IN          # how previews and findings name it: BUILT_IN or "template <file>"
    image: str = INJ.V1_INIT_CONTAINER_IMAGE
    max_tries: int = INJ.V1_INIT_CONTAINER_MAX_TRIES

    def containers(self, job_name: str) -> list[dict]:
        """The init containers a Worker pod of PyTorchJob `job_name` gets (TemplateError: none, ever)."""
        if self.text is None:
            return [INJ.v1_init_container(job_name)]
        out = execute(self.text, {"MasterAddr": TO1.master_address(job_name), "InitContainerImage": self.image,
                                  "MaxTries": self.max_tries})
        errors: list[str] = []
        # The operator unmarshals the output with sigs.k8s.io/yaml, as `kubectl apply -f` reads YAML.
        docs = load_all(out, (APPLY,), errors)
        if errors:
            raise TemplateError(f"its output is not YAML kubectl reads: {errors[0]}")
        data = docs[0] if docs else None
        if data is None:
            return []           # json null into a slice: no init containers at all
        if not isinstance(data, list) or not all(isinstance(c, dict) for c in data):
            raise TemplateError("its output is not a list of containers (the operator unmarshals []corev1.Container)")
        return data


def load(path: str | Path, image: str | None = None, max_tries: int | None = None, shown: str | None = None) -> InitTemplate:
    """The template in file `path`, checked once with a sample job; a bad one is a UsageError (one line)."""
    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the init container template: {exc.strerror or exc}") from None
    tmpl = InitTemplate(text, f"template {shown or path}", image or INJ.V1_INIT_CONTAINER_IMAGE,
                        INJ.V1_INIT_CONTAINER_MAX_TRIES if max_tries is None else max_tries)
    try:
        tmpl.containers("job")
    except TemplateError as exc:
        raise UsageError(f"{path}: the Training Operator would create no Worker pod with this init container "
                         f"template: {exc}") from None
    return tmpl
