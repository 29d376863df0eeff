"""YAML written for people and for every YAML reader: strings a YAML 1.1 reader would retype are quoted.

PyYAML, Ansible and older Go tooling read YAML 1.1, where `1:2` is the
sexagesimal integer 62, `yes`/`on` are booleans and `0o7`-style or `010`
values are octal. A YAML 1.2 writer leaves such strings plain. Every string the
project writes as YAML goes through `quote_ambiguous`, so `PET_NNODES: "1:2"`
reads back as the string it is, whichever YAML version reads it.
"""
from __future__ import annotations

from typing import Any

from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

_STR_TAG = "tag:yaml.org,2002:str"
_resolver = Resolver()


def retyped_by_yaml11(text: str) -> bool:
    """Whether a plain scalar `text` would not be a string to a YAML 1.1 reader (PyYAML's resolver)."""
    return _resolver.resolve(ScalarNode, text, (True, False)) != _STR_TAG


def quote_ambiguous(obj: Any) -> Any:
    """Quote (in place, ruamel round-trip data or plain data) every string a YAML 1.1 reader would retype."""
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, ScalarString

    def fix(v: Any) -> Any:
        if isinstance(v, str) and not isinstance(v, ScalarString) and retyped_by_yaml11(v):
            return DoubleQuotedScalarString(v)
        if isinstance(v, ScalarString) and type(v).__name__ == "PlainScalarString" and retyped_by_yaml11(str(v)):
            return DoubleQuotedScalarString(str(v))
        quote_ambiguous(v)
        return v

    if isinstance(obj, dict):
        for k in list(obj.keys()):
            obj[k] = fix(obj[k])
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            obj[i] = fix(v)
    return obj
