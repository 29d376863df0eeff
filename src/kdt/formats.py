"""The string formats of the Kubernetes API: names, label keys and values, ports, env names, keys.

Each `is_*` function returns the list of what is wrong (empty when the value is
valid), with the API server's own wording, as its Go original does:
k8s.io/apimachinery pkg/util/validation/validation.go (IsDNS1123Label,
IsDNS1123Subdomain, IsDNS1035Label, IsValidPortNum, IsValidPortName,
IsEnvVarName, IsRelaxedEnvVarName, IsConfigMapKey, IsHTTPHeaderName) and
pkg/api/validate/content/kube.go (IsLabelKey, the "qualified name" of label,
annotation and resource keys, and IsLabelValue), at v0.35.0 (Kubernetes 1.35;
the same rules since 1.25, the oldest schemas kdt bundles, but for the relaxed
env names noted below). The name functions of pkg/api/validation/generic.go
(NameIsDNSSubdomain, NameIsDNSLabel, NameIsDNS1035Label, with the trailing-dash
mask a generateName prefix gets) are here too.

Lengths are counted in bytes, as Go's len() counts them. bench/apiserver.py
holds every function against the valid and invalid tables of the upstream tests
(validation_test.go, kube_test.go) at the tags kdt targets.
"""
from __future__ import annotations

import re

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
DNS1035_LABEL_MAX = 63
LABEL_VALUE_MAX = 63
LABEL_KEY_NAME_MAX = 63
PORT_NAME_MAX = 15

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _LABEL_KEY_FMT + ")?"
_ENV_NAME_FMT = "[-._a-zA-Z][-._a-zA-Z0-9]*"
_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
_HTTP_HEADER_FMT = "[-A-Za-z0-9]+"

_dns1123_label = re.compile(_DNS1123_LABEL_FMT).fullmatch
_dns1123_subdomain = re.compile(_DNS1123_SUBDOMAIN_FMT).fullmatch
_dns1035_label = re.compile(_DNS1035_LABEL_FMT).fullmatch
_label_key = re.compile(_LABEL_KEY_FMT).fullmatch
_label_value = re.compile(_LABEL_VALUE_FMT).fullmatch
_env_name = re.compile(_ENV_NAME_FMT).fullmatch
_config_key = re.compile(_CONFIG_KEY_FMT).fullmatch
_http_header = re.compile(_HTTP_HEADER_FMT).fullmatch
_port_name_chars = re.compile("[-a-z0-9]+").fullmatch
_has_letter = re.compile("[a-z]").search


def blen(value: str) -> int:
    """Go's len(): bytes of the UTF-8 encoding."""
    return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))


def max_len_error(n: int) -> str:
    return f"must be no more than {n} characters"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    return msg + " (e.g. " + " or ".join(f"'{e}'" for e in examples) + f", regex used for validation is '{fmt}')"


def inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if blen(value) > DNS1123_LABEL_MAX:
        errs.append(max_len_error(DNS1123_LABEL_MAX))
    if not _dns1123_label(value):
        if _dns1123_subdomain(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                                    "or '-', and must start and end with an alphanumeric character",
                                    _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if blen(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _dns1123_subdomain(value):
        errs.append(regex_error("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                                "'-' or '.', and must start and end with an alphanumeric character",
                                _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if blen(value) > DNS1035_LABEL_MAX:
        errs.append(max_len_error(DNS1035_LABEL_MAX))
    if not _dns1035_label(value):
        errs.append(regex_error("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                                "with an alphabetic character, and end with an alphanumeric character",
                                _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_label_key(value: str) -> list[str]:
    """content.IsLabelKey (validation.IsQualifiedName): `[prefix/]name`, the prefix a DNS subdomain."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + m for m in is_dns1123_subdomain(prefix)]
    else:
        return ["a valid label key " + regex_error("must consist of alphanumeric characters, '-', '_' or '.', and "
                                                   "must start and end with an alphanumeric character",
                                                   _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif blen(name) > LABEL_KEY_NAME_MAX:
        errs.append("name part " + max_len_error(LABEL_KEY_NAME_MAX))
    if not _label_key(name):
        errs.append("name part " + regex_error("must consist of alphanumeric characters, '-', '_' or '.', and must "
                                               "start and end with an alphanumeric character",
                                               _LABEL_KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_label_value(value: str) -> list[str]:
    errs = []
    if blen(value) > LABEL_VALUE_MAX:
        errs.append(max_len_error(LABEL_VALUE_MAX))
    if not _label_value(value):
        errs.append(regex_error("a valid label must be an empty string or consist of alphanumeric characters, '-', "
                                "'_' or '.', and must start and end with an alphanumeric character",
                                _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def is_valid_port_num(port: int) -> list[str]:
    return [] if 1 <= port <= 65535 else [inclusive_range_error(1, 65535)]


def is_valid_port_name(port: str) -> list[str]:
    """IsValidPortName: an IANA_SVC_NAME (RFC 6335), lower case only."""
    errs = []
    if blen(port) > PORT_NAME_MAX:
        errs.append(max_len_error(PORT_NAME_MAX))
    if not _port_name_chars(port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _has_letter(port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _chdir_prefix(value: str) -> list[str]:
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


def is_env_var_name(value: str) -> list[str]:
    """IsEnvVarName: the strict C-like form, Kubernetes before the RelaxedEnvironmentVariableValidation gate."""
    errs = []
    if not _env_name(value):
        errs.append(regex_error("a valid environment variable name must consist of alphabetic characters, digits, "
                                "'_', '-', or '.', and must not start with a digit", _ENV_NAME_FMT,
                                "my.env-name", "MY_ENV.NAME", "MyEnvName1"))
    return errs + _chdir_prefix(value)


def is_relaxed_env_var_name(value: str) -> list[str]:
    """IsRelaxedEnvVarName: any printable ASCII but '=' (the gate's default from Kubernetes 1.32)."""
    errs = []
    if not value:
        errs.append("environment variable name must be non-empty")
    for ch in value:
        if not (" " <= ch <= "~") or ch == "=":
            errs.append("a valid environment variable name must consist only of printable ASCII characters other "
                        "than '='")
            break
    return errs


def is_config_map_key(value: str) -> list[str]:
    errs = []
    if blen(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _config_key(value):
        errs.append(regex_error("a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                                _CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    return errs + _chdir_prefix(value)


def is_http_header_name(value: str) -> list[str]:
    if _http_header(value):
        return []
    return [regex_error("a valid HTTP header must consist of alphanumeric characters or '-'", _HTTP_HEADER_FMT,
                        "X-Header-Name")]


# pkg/api/validation/generic.go: how an object's name (or generateName prefix) is judged per kind.

def _mask_trailing_dash(name: str) -> str:
    """maskTrailingDash, faithfully (it replaces the last two characters of 'x-' names by 'a')."""
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def name_is_dns_subdomain(name: str, prefix: bool = False) -> list[str]:
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool = False) -> list[str]:
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool = False) -> list[str]:
    return is_dns1035_label(_mask_trailing_dash(name) if prefix else name)
