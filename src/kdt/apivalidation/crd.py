"""A CustomResourceDefinition as the API server validates it when it is created.

k8s.io/apiextensions-apiserver v0.36.3 pkg/apis/apiextensions/validation/validation.go
(ValidateCustomResourceDefinition, validateCustomResourceDefinitionSpec,
ValidateCustomResourceDefinitionNames, validateCustomResourceDefinitionValidation,
ValidateCustomResourceDefinitionOpenAPISchema, validateMapListKeysMapSet,
specStandardValidatorV3.validate, validateAPIApproval, validatePreserveUnknownFields) and the structural
schema rules of pkg/apiserver/schema/validation.go (validateStructuralInvariants,
validateStructuralMetadataInvariants, validateValueValidation, validateNestedValueValidation, validateExtensions)
and complete.go (validateStructuralCompleteness). Only `apiextensions.k8s.io/v1` CRDs: no API server kdt
validates for serves v1beta1 (the schema findings say so).

The API server validates the internal version, after v1's defaults (pkg/apis/apiextensions/v1/defaults.go:
names.singular is the lower-case kind, names.listKind the kind + "List", conversion None) and after
converting v1 to it: when every version has the same schema, the internal object holds it once as
`spec.validation.openAPIV3Schema`, so the API server's own message then names `spec.validation...` where
these findings name the version's schema the file holds. Messages are the API server's own (field.Error
bodies: "Required value", "Invalid value: ...", "Unsupported value: ...", "Forbidden: ...").

Not ported: CEL compilation and cost estimates of `x-kubernetes-validations` (another CEL library here), the
validation of defaults against their schema (ValidateDefaults), conversion webhooks' client configs,
selectable fields, printer columns.
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any
from urllib.parse import urlparse

from .. import formats as F
from .checker import Report, d, lst

RULE_CRD = "api-crd"

OPENAPI_V3_TYPES = ("array", "boolean", "integer", "number", "object", "string")   # openapiV3Types, sorted
SCOPES = ("Cluster", "Namespaced")
# allowedFieldsAtRootSchema (Go field names) and the JSON names they are written as.
ROOT_FIELDS_WITH_STATUS = {
    "description": "Description", "type": "Type", "format": "Format", "title": "Title", "maximum": "Maximum",
    "exclusiveMaximum": "ExclusiveMaximum", "minimum": "Minimum", "exclusiveMinimum": "ExclusiveMinimum",
    "maxLength": "MaxLength", "minLength": "MinLength", "pattern": "Pattern", "maxItems": "MaxItems",
    "minItems": "MinItems", "uniqueItems": "UniqueItems", "multipleOf": "MultipleOf", "required": "Required",
    "items": "Items", "properties": "Properties", "externalDocs": "ExternalDocs", "example": "Example",
    "x-kubernetes-preserve-unknown-fields": "XPreserveUnknownFields", "x-kubernetes-validations": "XValidations"}
_ROOT_LIST = "[" + " ".join(ROOT_FIELDS_WITH_STATUS.values()) + "]"
APPROVAL = "api-approved.kubernetes.io"            # apiextensionsv1beta1.KubeAPIApprovedAnnotation
SCHEMA_KEYS = ("schema", "openAPIV3Schema")
# Keys a value validation (allOf, anyOf, oneOf, not) may not carry (NestedValueValidation's ForbiddenGenerics
# and ForbiddenExtensions), and the words of each.
_NESTED_FORBIDDEN = (
    ("type", "must be empty to be structural"), ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"), ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]


def _q(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else json.dumps(value, separators=(",", ":"), default=str)


def _supported(values) -> str:
    return ", ".join(f'"{v}"' for v in values)


def _truthy(node: dict, key: str) -> bool:
    return node.get(key) is True


def check(r: Report) -> None:
    data = r.doc.data
    if data.get("apiVersion") != "apiextensions.k8s.io/v1":
        return
    spec = d(data.get("spec"))
    meta = d(data.get("metadata"))
    names = d(spec.get("names"))
    group = spec.get("group") if isinstance(spec.get("group"), str) else ""
    kind = names.get("kind") if isinstance(names.get("kind"), str) else ""
    plural = names.get("plural") if isinstance(names.get("plural"), str) else ""
    # v1 defaults.go SetDefaults_CustomResourceDefinitionSpec
    singular = names.get("singular") if isinstance(names.get("singular"), str) and names.get("singular") else kind.lower()
    list_kind = names.get("listKind") if isinstance(names.get("listKind"), str) and names.get("listKind") else (
        kind + "List" if kind else "")

    if not isinstance(data.get("spec"), dict):
        return                          # the schema's finding (spec is required)
    name = meta.get("name")
    if isinstance(name, str) and name and group and plural and name != f"{plural}.{group}":
        r.err(RULE_CRD, ("metadata", "name"), f'Invalid value: {_q(name)}: must be spec.names.plural+"."+spec.group')

    # validateCustomResourceDefinitionSpec
    if not group:
        if spec.get("group") is not None:   # absent: the schema's finding
            r.err(RULE_CRD, ("spec", "group"), "Required value")
    else:
        wrong = F.is_dns1123_subdomain(group)
        if wrong:
            r.err(RULE_CRD, ("spec", "group"), f"Invalid value: {_q(group)}: {','.join(wrong)}")
        elif len(group.split(".")) < 2:
            r.err(RULE_CRD, ("spec", "group"), f"Invalid value: {_q(group)}: should be a domain with at least one dot")
    scope = spec.get("scope")
    if scope == "":
        r.err(RULE_CRD, ("spec", "scope"), "Required value")
    elif isinstance(scope, str) and scope not in SCOPES:
        r.err(RULE_CRD, ("spec", "scope"), f"Unsupported value: {_q(scope)}: supported values: {_supported(SCOPES)}")

    versions = [v for v in lst(spec.get("versions"))]
    storage = 0
    seen: set = set()
    unique = True
    for i, v in enumerate(versions):
        v = d(v)
        if v.get("storage") is True:
            storage += 1
        vname = v.get("name")
        if isinstance(vname, str):
            if vname in seen:
                unique = False
            seen.add(vname)
            wrong = F.is_dns1035_label(vname)
            if wrong:
                r.err(RULE_CRD, ("spec", "versions", i, "name"), f"Invalid value: {_q(vname)}: {','.join(wrong)}")
        schema = d(v.get("schema")).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            # requireOpenAPISchema: every version of a v1 CRD needs one (there is no top-level one in v1)
            r.err(RULE_CRD, ("spec", "versions", i, "schema", "openAPIV3Schema"), "Required value")
            continue
        status = "status" in d(d(v.get("subresources")))
        _schema(r, schema, ("spec", "versions", i, "schema", "openAPIV3Schema"), status)
    if not unique:
        r.err(RULE_CRD, ("spec", "versions"), "Invalid value: ...: must contain unique version names")
    if storage != 1 and versions:
        r.err(RULE_CRD, ("spec", "versions"), "Invalid value: ...: must have exactly one version marked as storage version")

    # names (required ones, then ValidateCustomResourceDefinitionNames)
    for key, value in (("plural", plural), ("singular", singular), ("kind", kind), ("listKind", list_kind)):
        if not value and (names.get(key) is not None or key in ("singular", "listKind") and "kind" in names):
            r.err(RULE_CRD, ("spec", "names", key), "Required value")   # absent plural or kind: the schema's
    for key, value in (("plural", plural), ("singular", singular)):
        wrong = F.is_dns1035_label(value) if value else []
        if wrong:
            r.err(RULE_CRD, ("spec", "names", key), f"Invalid value: {_q(value)}: {','.join(wrong)}")
    for key, value in (("kind", kind), ("listKind", list_kind)):
        wrong = F.is_dns1035_label(value.lower()) if value else []
        if wrong:
            r.err(RULE_CRD, ("spec", "names", key), f"Invalid value: {_q(value)}: may have mixed case, but should "
                                                     f"otherwise match: {','.join(wrong)}")
    for key in ("shortNames", "categories"):
        for i, value in enumerate(lst(names.get(key))):
            wrong = F.is_dns1035_label(value) if isinstance(value, str) else []
            if wrong:
                r.err(RULE_CRD, ("spec", "names", key, i), f"Invalid value: {_q(value)}: {','.join(wrong)}")
    if kind and kind == list_kind:
        r.err(RULE_CRD, ("spec", "names", "listKind"), f"Invalid value: {_q(list_kind)}: kind and listKind may not be the same")

    # validatePreserveUnknownFields
    if spec.get("preserveUnknownFields") is True:
        r.err(RULE_CRD, ("spec", "preserveUnknownFields"), "Invalid value: true: cannot set to true, set "
                                                           "x-kubernetes-preserve-unknown-fields to true in "
                                                           "spec.versions[*].schema instead")
    _approval(r, group, d(meta.get("annotations")))


def _approval(r: Report, group: str, annotations: dict) -> None:
    """validateAPIApproval with apihelpers.IsProtectedCommunityGroup and GetAPIApprovalState (helpers.go)."""
    if not (group in ("k8s.io", "kubernetes.io") or group.endswith(".k8s.io") or group.endswith(".kubernetes.io")):
        return
    value = annotations.get(APPROVAL)
    value = value if isinstance(value, str) else ""
    path = ("metadata", "annotations", APPROVAL)
    if not value:
        r.err(RULE_CRD, path, f'Required value: protected groups must have approval annotation "{APPROVAL}", see '
                              "https://github.com/kubernetes/enhancements/pull/1111")
        return
    if value.startswith("unapproved"):
        return
    url = urlparse(value)
    if not (url.scheme and url.netloc):
        r.err(RULE_CRD, path, f"Invalid value: {_q(value)}: protected groups must have approval annotation "
                              f'"{APPROVAL}" with either a URL or a reason starting with "unapproved", see '
                              "https://github.com/kubernetes/enhancements/pull/1111")


# The schema ------------------------------------------------------------------------------------------------

# What _schema_checks finds in a schema, by its JSON text's hash and the status flag: the same CRD comes back in
# every target that includes it (a repository's kustomizations), and a schema of thousands of nodes is checked once.
_SCHEMA_MEMO_MAX = 256
_schema_memo: dict = {}


def _schema(r: Report, root: dict, path: tuple, status: bool) -> None:
    """validateCustomResourceDefinitionValidation of one version's openAPIV3Schema, found once per schema: what it
    finds depends on the schema, the flag and the last part of `path` only (the API server's path of a nested
    schema starts there, _completeness), so it is found under that part and replayed under `path`."""
    try:
        text = json.dumps(root, separators=(",", ":")).encode()
        key = (hashlib.sha256(text).digest(), len(text), status, path[-1:])
    except (TypeError, ValueError, RecursionError):
        key = None
    found = _schema_memo.get(key) if key is not None else None
    if found is None:
        sub = Report(r.doc, r.opts)
        _schema_checks(sub, root, path[-1:], status)
        found = sub.found()
        if key is not None:
            if len(_schema_memo) >= _SCHEMA_MEMO_MAX:
                _schema_memo.clear()
            _schema_memo[key] = found
    head = path[:-1]
    for rule, where, message, *level in found:
        if level:
            r.warn(rule, head + where, message)
        else:
            r.err(rule, head + where, message)


def _schema_checks(r: Report, root: dict, path: tuple, status: bool) -> None:
    """validateCustomResourceDefinitionValidation of one version's openAPIV3Schema."""
    if status:
        if "type" in root and root.get("type") != "object":
            r.err(RULE_CRD, path + ("type",), f'Invalid value: {_q(root.get("type"))}: only "object" is allowed as the '
                                              "type at the root of the schema if the status subresource is enabled")
        else:
            extra = [k for k, v in root.items() if k not in ROOT_FIELDS_WITH_STATUS and v not in (None, False, "", [], {})]
            if extra:
                r.err(RULE_CRD, path + (extra[0],), f"Invalid value: ...: only {_ROOT_LIST} fields are allowed at the "
                                                    "root of the schema if the status subresource is enabled")
    if root.get("nullable") is True:
        r.err(RULE_CRD, path + ("nullable",), "Forbidden: nullable cannot be true at the root")
    _openapi(r, root, path, is_root=True, in_meta=False)
    _structural(r, root, path, "root")
    _completeness(r, root, path)


def _openapi(r: Report, node: Any, path: tuple, is_root: bool, in_meta: bool) -> None:
    """ValidateCustomResourceDefinitionOpenAPISchema and specStandardValidatorV3.validate, recursively."""
    if not isinstance(node, dict):
        return
    t = node.get("type")
    if isinstance(t, str) and t and t not in OPENAPI_V3_TYPES:
        r.err(RULE_CRD, path + ("type",), f"Unsupported value: {_q(t)}: supported values: {_supported(OPENAPI_V3_TYPES)}")
    if t == "null":
        r.err(RULE_CRD, path + ("type",), "Forbidden: type cannot be set to null, use nullable as an alternative")
    for key, what in (("id", "id is not supported"), ("additionalItems", "additionalItems is not supported"),
                      ("patternProperties", "patternProperties is not supported"),
                      ("definitions", "definitions is not supported"), ("dependencies", "dependencies is not supported"),
                      ("$ref", "$ref is not supported")):
        if node.get(key) not in (None, "", {}):
            r.err(RULE_CRD, path + (key,), f"Forbidden: {what}")
    if isinstance(node.get("items"), list):
        r.err(RULE_CRD, path + ("items",), "Forbidden: items must be a schema object and not an array")
    if in_meta and _truthy(node, "x-kubernetes-embedded-resource"):
        r.err(RULE_CRD, path + ("x-kubernetes-embedded-resource",), "Forbidden: must not be used inside of resource meta")
    if _truthy(node, "uniqueItems"):
        r.err(RULE_CRD, path + ("uniqueItems",), "Forbidden: uniqueItems cannot be set to true since the runtime "
                                                 "complexity becomes quadratic")
    props = node.get("properties") if isinstance(node.get("properties"), dict) else {}
    extra = node.get("additionalProperties")
    if extra is not None and props and (extra is False or isinstance(extra, dict)):
        r.err(RULE_CRD, path + ("additionalProperties",), "Forbidden: additionalProperties and properties are mutual exclusive")
    if isinstance(extra, dict):
        _openapi(r, extra, path + ("additionalProperties",), False, in_meta)
    for k, sub in props.items():
        meta = in_meta or ((is_root or _truthy(node, "x-kubernetes-embedded-resource")) and k in ("metadata", "kind", "apiVersion"))
        _openapi(r, sub, path + ("properties", k), False, meta)
    if isinstance(node.get("not"), dict):
        _openapi(r, node["not"], path + ("not",), False, in_meta)
    for key in ("allOf", "oneOf", "anyOf"):
        for i, sub in enumerate(lst(node.get(key))):
            _openapi(r, sub, path + (key, i), False, in_meta)
    if isinstance(node.get("items"), dict):
        _openapi(r, node["items"], path + ("items",), False, in_meta)
    if node.get("x-kubernetes-preserve-unknown-fields") is False:
        r.err(RULE_CRD, path + ("x-kubernetes-preserve-unknown-fields",), "Invalid value: false: must be true or undefined")
    _extensions(r, node, path)


def _extensions(r: Report, node: dict, path: tuple) -> None:
    """The x-kubernetes-map-type, -list-type, -list-map-keys and -validations checks of
    ValidateCustomResourceDefinitionOpenAPISchema and validateMapListKeysMapSet."""
    t = node.get("type")
    map_type = node.get("x-kubernetes-map-type")
    if map_type is not None:
        if t != "object":
            r.err(RULE_CRD, path + ("type",), "Required value: must be object if x-kubernetes-map-type is specified" if not t
                  else f"Invalid value: {_q(t)}: must be object if x-kubernetes-map-type is specified")
        if map_type not in ("atomic", "granular"):
            r.err(RULE_CRD, path + ("x-kubernetes-map-type",), f'Unsupported value: {_q(map_type)}: supported values: '
                                                              '"atomic", "granular"')
    list_type = node.get("x-kubernetes-list-type")
    items = node.get("items") if isinstance(node.get("items"), dict) else None
    if list_type is not None and t != "array":
        r.err(RULE_CRD, path + ("type",), "Required value: must be array if x-kubernetes-list-type is specified" if not t
              else f"Invalid value: {_q(t)}: must be array if x-kubernetes-list-type is specified")
    elif list_type == "set" and items is not None:
        if items.get("type") == "array" and items.get("x-kubernetes-list-type") not in (None, "atomic"):
            r.err(RULE_CRD, path + ("items", "x-kubernetes-list-type"), f"Invalid value: {_q(items['x-kubernetes-list-type'])}: "
                                                                       "must be atomic as item of a list with x-kubernetes-list-type=set")
        if items.get("type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
            r.err(RULE_CRD, path + ("items", "x-kubernetes-map-type"), "Invalid value: null: must be atomic as item of "
                                                                      "a list with x-kubernetes-list-type=set")
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        r.err(RULE_CRD, path + ("x-kubernetes-list-type",), f'Unsupported value: {_q(list_type)}: supported values: '
                                                           '"atomic", "set", "map"')
    keys = [k for k in lst(node.get("x-kubernetes-list-map-keys"))]
    if keys:
        if list_type is None:
            r.err(RULE_CRD, path + ("x-kubernetes-list-type",), "Required value: must be map if x-kubernetes-list-map-keys is non-empty")
        elif list_type != "map":
            r.err(RULE_CRD, path + ("x-kubernetes-list-type",), f"Invalid value: {_q(list_type)}: must be map if "
                                                               "x-kubernetes-list-map-keys is non-empty")
    if list_type == "map":
        if not keys:
            r.err(RULE_CRD, path + ("x-kubernetes-list-map-keys",), "Required value: must not be empty if x-kubernetes-list-type is map")
        if "items" not in node:
            r.err(RULE_CRD, path + ("items",), "Required value: must have a schema if x-kubernetes-list-type is map")
        elif items is not None and items.get("type") != "object":
            r.err(RULE_CRD, path + ("items", "type"), f"Invalid value: {_q(items.get('type'))}: must be object if parent "
                                                      "array's x-kubernetes-list-type is map")
        elif items is not None:
            props = d(items.get("properties"))
            required = set(lst(items.get("required")))
            for i, k in enumerate(keys):
                sub = props.get(k) if isinstance(k, str) else None
                if not isinstance(sub, dict):
                    r.err(RULE_CRD, path + ("x-kubernetes-list-map-keys",), f"Invalid value: {_q(keys)}: entries must all "
                                                                           "be names of item properties")
                    continue
                if sub.get("type") in ("array", "object"):
                    r.err(RULE_CRD, path + ("items", "properties", k, "type"), f"Invalid value: \"object\": must be a "
                                                                              "scalar type if parent array's x-kubernetes-list-type is map")
                if k in keys[:i]:
                    r.err(RULE_CRD, path + ("x-kubernetes-list-map-keys",), f"Invalid value: {_q(keys)}: must not contain "
                                                                           "duplicate entries")
                if k not in required and sub.get("default") is None:
                    r.err(RULE_CRD, path + ("items", "properties", k, "default"), "Required value: this property is in "
                          "x-kubernetes-list-map-keys, so it must have a default or be a required property")
                if sub.get("nullable") is True:
                    r.err(RULE_CRD, path + ("items", "properties", k, "nullable"), "Forbidden: this property is in "
                          "x-kubernetes-list-map-keys, so it cannot be nullable")
    if list_type in ("set", "map") and items is not None and items.get("nullable") is True:
        r.err(RULE_CRD, path + ("items", "nullable"), f"Forbidden: cannot be nullable when x-kubernetes-list-type is {list_type}")
    for i, rule in enumerate(lst(node.get("x-kubernetes-validations"))):
        rule = d(rule)
        here = path + ("x-kubernetes-validations", i)
        text = rule.get("rule") if isinstance(rule.get("rule"), str) else ""
        message = rule.get("message")
        if not text.strip():
            r.err(RULE_CRD, here + ("rule",), "Required value: rule is not specified")
        if isinstance(message, str):
            if not message.strip():
                r.err(RULE_CRD, here + ("message",), f"Invalid value: {_q(message)}: must be non-empty if specified")
            elif "\n" in message:
                r.err(RULE_CRD, here + ("message",), f"Invalid value: {_q(message)}: must not contain line breaks")
        elif "\n" in text:
            r.err(RULE_CRD, here + ("message",), "Required value: message must be specified if rule contains line breaks")
        reason = rule.get("reason")
        reasons = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")
        if isinstance(reason, str) and reason not in reasons:
            r.err(RULE_CRD, here + ("reason",), f"Unsupported value: {_q(reason)}: supported values: {_supported(reasons)}")


# Structural schemas: pkg/apiserver/schema/validation.go and complete.go -------------------------------------

def _structural(r: Report, node: Any, path: tuple, level: str) -> None:
    """validateStructuralInvariants: a type everywhere (or int-or-string, or preserve-unknown-fields), items for
    arrays, no additionalProperties at the root, the root an object, metadata only name and generateName."""
    if not isinstance(node, dict):
        return
    t = node.get("type")
    if t == "array" and not isinstance(node.get("items"), dict) and "items" not in node:
        r.err(RULE_CRD, path + ("items",), "Required value: must be specified")
    if isinstance(node.get("items"), dict):
        _structural(r, node["items"], path + ("items",), "item")
    for k, sub in d(node.get("properties")).items():
        _structural(r, sub, path + ("properties", k), "field")
    extra = node.get("additionalProperties")
    if extra is not None:
        if level == "root":
            r.err(RULE_CRD, path + ("additionalProperties",), "Forbidden: must not be used at the root")
        if isinstance(extra, dict):
            _structural(r, extra, path + ("additionalProperties",), "field")
    int_or_string = _truthy(node, "x-kubernetes-int-or-string")
    preserve = _truthy(node, "x-kubernetes-preserve-unknown-fields")
    embedded = _truthy(node, "x-kubernetes-embedded-resource")
    if int_or_string and preserve:
        r.err(RULE_CRD, path + ("x-kubernetes-preserve-unknown-fields",), "Invalid value: true: must be false if "
                                                                           "x-kubernetes-int-or-string is true")
    if int_or_string and embedded:
        r.err(RULE_CRD, path + ("x-kubernetes-embedded-resource",), "Invalid value: true: must be false if "
                                                                     "x-kubernetes-int-or-string is true")
    skip_any_of = node.get("anyOf") == _INT_OR_STRING_ANY_OF
    all_of = lst(node.get("allOf"))
    skip_first = bool(all_of) and d(all_of[0]).get("anyOf") == _INT_OR_STRING_ANY_OF
    _value_validation(r, node, path, skip_any_of, skip_first)
    if embedded and t != "object":
        r.err(RULE_CRD, path + ("type",), "Required value: must be object if x-kubernetes-embedded-resource is true"
              if not t else f"Invalid value: {_q(t)}: must be object if x-kubernetes-embedded-resource is true")
    elif not t and not int_or_string and not preserve:
        what = {"root": "at the root", "item": "for specified array items", "field": "for specified object fields"}[level]
        r.err(RULE_CRD, path + ("type",), f"Required value: must not be empty {what}")
    if embedded and extra is not None:
        r.err(RULE_CRD, path + ("additionalProperties",), "Forbidden: must not be used if x-kubernetes-embedded-resource is set")
    if level == "root" and t and t != "object":
        r.err(RULE_CRD, path + ("type",), f"Invalid value: {_q(t)}: must be object at the root")
    check_meta = level == "root" or embedded
    props = d(node.get("properties"))
    for key in ("kind", "apiVersion"):
        if key in props and check_meta and d(props[key]).get("type") != "string":
            r.err(RULE_CRD, path + ("properties", key, "type"), f"Invalid value: {_q(d(props[key]).get('type') or '')}: must be string")
    if "metadata" in props:
        meta = d(props["metadata"])
        here = path + ("properties", "metadata")
        if check_meta and meta.get("type") != "object":
            r.err(RULE_CRD, here + ("type",), f"Invalid value: {_q(meta.get('type') or '')}: must be object")
        if level == "root":
            rest = {k: v for k, v in meta.items() if k not in ("type", "default", "description")}
            inner = d(rest.get("properties"))
            if set(inner) <= {"name", "generateName"}:
                rest.pop("properties", None)
            if rest:
                r.err(RULE_CRD, here, "Forbidden: must not specify anything other than name and generateName, but "
                                      "metadata is implicitly specified")
    if embedded and not preserve and not props:
        r.err(RULE_CRD, path + ("properties",), "Required value: must not be empty if x-kubernetes-embedded-resource "
                                                "is true without x-kubernetes-preserve-unknown-fields")


def _value_validation(r: Report, node: dict, path: tuple, skip_any_of: bool, skip_first_all_of_any_of: bool) -> None:
    """validateValueValidation: what allOf, anyOf, oneOf and not may hold; patterns must compile."""
    if not skip_any_of:
        for i, sub in enumerate(lst(node.get("anyOf"))):
            _nested(r, sub, path + ("anyOf", i), False)
    for i, sub in enumerate(lst(node.get("allOf"))):
        _nested(r, sub, path + ("allOf", i), skip_first_all_of_any_of and i == 0)
    for i, sub in enumerate(lst(node.get("oneOf"))):
        _nested(r, sub, path + ("oneOf", i), False)
    if isinstance(node.get("not"), dict):
        _nested(r, node["not"], path + ("not",), False)
    pattern = node.get("pattern")
    if isinstance(pattern, str) and pattern:
        wrong = _re2_error(pattern)
        if wrong:
            r.err(RULE_CRD, path + ("pattern",), f"Invalid value: {_q(pattern)}: must be a valid regular expression, "
                                                 f"but isn't: {wrong}")


_RE2_ONLY = ((re.compile(r"\(\?[imsU]*(-[imsU]+)?\)"), ""),          # inline flags anywhere (Python: at the start)
             (re.compile(r"\\[pP](\{\^?[A-Za-z_]+\}|[A-Za-z])"), "a"),  # Unicode classes \pL, \p{Greek}
             (re.compile(r"\[:\^?[a-z]+:\]"), "a"),                     # POSIX classes [[:alpha:]]
             (re.compile(r"\\z"), "$"))


def _re2_error(pattern: str) -> str:
    """Why Go's regexp (RE2) cannot compile a pattern, as far as Python's re can tell: the RE2 syntax Python
    reads otherwise is rewritten first, so only a pattern neither reads is refused (never a false error; a
    pattern only RE2 refuses, such as a lookahead, is missed)."""
    try:
        re.compile(pattern)
        return ""
    except re.error:
        pass
    rewritten = pattern
    for rx, to in _RE2_ONLY:
        rewritten = rx.sub(to, rewritten)
    try:
        re.compile(rewritten)
        return ""
    except re.error as exc:
        return f"error parsing regexp: {exc}"


def _nested(r: Report, node: Any, path: tuple, skip_any_of: bool) -> None:
    """validateNestedValueValidation."""
    if not isinstance(node, dict):
        return
    _value_validation(r, node, path, skip_any_of, False)
    if isinstance(node.get("items"), dict):
        _nested(r, node["items"], path + ("items",), False)
    for k, sub in d(node.get("properties")).items():
        _nested(r, sub, path + ("properties", k), False)
    for key, words in _NESTED_FORBIDDEN:
        value = node.get(key)
        if key in ("default", "x-kubernetes-list-type", "x-kubernetes-map-type"):
            found = value is not None
        elif key in ("type", "title", "description"):
            found = isinstance(value, str) and value != ""
        elif key in ("x-kubernetes-list-map-keys", "x-kubernetes-validations"):
            found = isinstance(value, list) and len(value) > 0
        else:
            found = value is True
        if found:
            r.err(RULE_CRD, path + (key,), f"Forbidden: {words}")
    extra = node.get("additionalProperties")
    if extra is True or isinstance(extra, dict):
        r.err(RULE_CRD, path + ("additionalProperties",), "Forbidden: must be undefined to be structural")
    if "metadata" in d(node.get("properties")):
        r.err(RULE_CRD, path + ("properties", "metadata"), "Forbidden: must not be specified in a nested context")


def _go_path(path: tuple, start: int) -> str:
    """A schema path as the API server writes it: openAPIV3Schema.properties[spec].allOf[0]."""
    out = []
    parts = path[start:]
    i = 0
    while i < len(parts):
        p = parts[i]
        if p == "properties" and i + 1 < len(parts):
            out.append(f"properties[{parts[i + 1]}]")
            i += 2
            continue
        if isinstance(p, int):
            out[-1] += f"[{p}]"
        else:
            out.append(str(p))
        i += 1
    return ".".join(out)


def _completeness(r: Report, root: dict, path: tuple) -> None:
    """validateStructuralCompleteness: what allOf, anyOf, oneOf or not name must be in the structure too."""
    start = len(path) - 1

    def value(v: dict, s: Any, s_path: tuple, v_path: tuple) -> None:
        if not isinstance(s, dict):
            r.err(RULE_CRD, s_path, f"Required value: because it is defined in {_go_path(v_path, start)}")
            return
        if isinstance(v.get("not"), dict):
            nested(v["not"], s, s_path, v_path + ("not",))
        for key in ("allOf", "anyOf", "oneOf"):
            for i, sub in enumerate(lst(v.get(key))):
                if isinstance(sub, dict):
                    nested(sub, s, s_path, v_path + (key, i))

    def nested(v: dict, s: Any, s_path: tuple, v_path: tuple) -> None:
        if not isinstance(s, dict):
            r.err(RULE_CRD, s_path, f"Required value: because it is defined in {_go_path(v_path, start)}")
            return
        value(v, s, s_path, v_path)
        if isinstance(v.get("items"), dict):
            nested(v["items"], s.get("items") if isinstance(s.get("items"), dict) else None, s_path + ("items",),
                   v_path + ("items",))
        s_props = d(s.get("properties"))
        for k, sub in d(v.get("properties")).items():
            if not isinstance(sub, dict):
                continue
            if k not in s_props:
                r.err(RULE_CRD, s_path + ("properties", k), "Required value: because it is defined in "
                                                            f"{_go_path(v_path + ('properties', k), start)}")
            else:
                nested(sub, s_props[k], s_path + ("properties", k), v_path + ("properties", k))

    # the root's own value validations, as upstream (ValidateStructuralWithOptions calls it once, on the root)
    value(root, root, path, path)
