"""kdt.schemas.crds.defaulted (the defaults of a custom resource, copied only where they change it) makes the
object apply_defaults makes on a deep copy, key order included, and leaves its input as it was; the null test
(json first, the walk where the text holds `null`) answers as the walk does."""
from __future__ import annotations

import copy
import json

import pytest

from kdt.schemas import crds

SCHEMA = {"properties": {
    "a": {"default": {"x": 1}, "properties": {"x": {}, "y": {"default": [1, 2]}}},
    "b": {"type": "array", "items": {"default": {"z": None}, "properties": {"z": {"default": 3}}}},
    "c": {"additionalProperties": {"default": "d", "properties": {"q": {"default": 0}}}},
    "n": {"default": 5, "nullable": True},
    "m": {"properties": {"deep": {"properties": {"e": {"default": "E"}}}}}}}

CASES = [{}, {"a": None}, {"a": {"x": 2}}, {"b": [None, {}, {"z": None}, 4]},
         {"c": {"k": None, "j": {"q": None}, "i": 3}}, {"n": None}, {"m": {"deep": {}}},
         {"m": {"deep": {"e": "x"}}, "other": [1, None]}, {"m": 3, "a": [1]},
         {"a": {"x": 1, "y": [3]}, "b": [], "c": {}, "n": 1, "m": {"deep": {"e": "e"}}}]


@pytest.mark.parametrize("obj", CASES, ids=[json.dumps(c) for c in CASES])
def test_defaulted_is_apply_defaults_on_a_copy(obj):
    before = json.dumps(obj)
    want = copy.deepcopy(obj)
    crds.apply_defaults(want, SCHEMA)
    got = crds.defaulted(obj, SCHEMA)
    assert json.dumps(got) == json.dumps(want)
    assert json.dumps(obj) == before


def test_untouched_object_is_returned_itself():
    obj = {"a": {"x": 1, "y": [3]}, "b": [{"z": 1}], "c": {"k": {"q": 1}}, "n": 2, "m": {"deep": {"e": "e"}}}
    assert crds.defaulted(obj, SCHEMA) is obj


@pytest.mark.parametrize("obj,has", [({"a": 1}, False), ({"a": [1, {"b": None}]}, True), ({"a": "null"}, False),
                                     ({"null": 1}, False), ({1: None}, True), ({(1, 2): "x"}, False),
                                     ({"a": float("nan")}, False), (None, True)])
def test_null_found_as_the_walk_finds_it(obj, has):
    assert crds._has_null(obj) is has
