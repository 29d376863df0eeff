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


# RBAC names (pkg/apis/rbac/validation ValidateRBACName): k8s.io/apimachinery v0.36.3
# pkg/api/validate/content/path.go IsPathSegmentName. ValidateRBACName ignores its prefix flag, so a
# generateName prefix is judged as a whole name, without the trailing-dash mask.

def name_is_path_segment(name: str, prefix: bool = False) -> list[str]:
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


# IP addresses and CIDRs of the API's legacy fields: k8s.io/apimachinery v0.36.3 pkg/util/validation/ip.go
# (IsValidIPForLegacyField, IsValidCIDRForLegacyField, parseIP, parseCIDR). A value is first read as
# k8s.io/utils net.ParseIPSloppy / ParseCIDRSloppy read it (the fork of Go 1.16's net.ParseIP and ParseCIDR,
# internal/third_party/forked/golang/net: IPv4 octets may carry leading zeros, a prefix length too); with
# `strict` (the StrictIPCIDRValidation gate, kdt.apivalidation.checker.Options), it must also be what Go's
# net/netip ParseAddr / ParsePrefix accept (no leading zeros; at most 4 hex digits a group), not an
# IPv4-mapped IPv6 address, and a CIDR no bits set beyond its prefix length.

IP_INVALID = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
IP_LEADING_ZEROS = "must not have leading 0s"
IP_4IN6 = "must not be an IPv4-mapped IPv6 address"
CIDR_INVALID = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
CIDR_LEADING_ZEROS = "must not have leading 0s in IP or prefix length"
CIDR_4IN6 = "must not have an IPv4-mapped IPv6 address"
CIDR_HOST_BITS = "must not have bits set beyond the prefix length"
_BIG = 0xFFFFFF
_V4_IN_V6 = bytes(10) + b"\xff\xff"


def _dtoi(s: str) -> tuple[int, int, bool]:
    n = i = 0
    while i < len(s) and "0" <= s[i] <= "9":
        n = n * 10 + ord(s[i]) - 48
        if n >= _BIG:
            return _BIG, i, False
        i += 1
    return (0, 0, False) if i == 0 else (n, i, True)


def _xtoi(s: str) -> tuple[int, int, bool]:
    n = i = 0
    while i < len(s):
        c = s[i]
        if "0" <= c <= "9" or "a" <= c <= "f" or "A" <= c <= "F":
            n = n * 16 + int(c, 16)
        else:
            break
        if n >= _BIG:
            return 0, i, False
        i += 1
    return (0, i, False) if i == 0 else (n, i, True)


class _Strictness:
    """What the sloppy reading let through that netip refuses (the reasons of one parse)."""
    __slots__ = ("lax",)

    def __init__(self) -> None:
        self.lax = False


def _parse_ipv4(s: str, seen: _Strictness) -> bytes | None:
    out = []
    for i in range(4):
        if not s:
            return None
        if i > 0:
            if s[0] != ".":
                return None
            s = s[1:]
        n, c, ok = _dtoi(s)
        if not ok or n > 0xFF:
            return None
        if c > 1 and s[0] == "0":
            seen.lax = True                     # netip: "IPv4 field has octet with leading zero"
        s = s[c:]
        out.append(n)
    if s:
        return None
    return _V4_IN_V6 + bytes(out)


def _parse_ipv6(s: str, seen: _Strictness) -> bytes | None:
    ip = bytearray(16)
    ellipsis = -1
    if len(s) >= 2 and s[0] == ":" and s[1] == ":":
        ellipsis, s = 0, s[2:]
        if not s:
            return bytes(ip)
    i = 0
    while i < 16:
        n, c, ok = _xtoi(s)
        if not ok or n > 0xFFFF:
            return None
        if c < len(s) and s[c] == ".":
            if ellipsis < 0 and i != 12:
                return None
            if i + 4 > 16:
                return None
            ip4 = _parse_ipv4(s, seen)
            if ip4 is None:
                return None
            ip[i:i + 4] = ip4[12:16]
            s = ""
            i += 4
            break
        if c > 4:
            seen.lax = True                     # netip: "each group must have 4 or less digits"
        ip[i], ip[i + 1] = n >> 8, n & 0xFF
        i += 2
        s = s[c:]
        if not s:
            break
        if s[0] != ":" or len(s) == 1:
            return None
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                return None
            ellipsis, s = i, s[1:]
            if not s:
                break
    if s:
        return None
    if i < 16:
        if ellipsis < 0:
            return None
        n = 16 - i
        for j in range(i - 1, ellipsis - 1, -1):
            ip[j + n] = ip[j]
        for j in range(ellipsis + n - 1, ellipsis - 1, -1):
            ip[j] = 0
    elif ellipsis >= 0:
        return None
    return bytes(ip)


def parse_ip_sloppy(s: str) -> bytes | None:
    """net.ParseIPSloppy: the address as 16 bytes (IPv4 as IPv4-in-IPv6), or None."""
    return _parse_ip(s, _Strictness())


def _parse_ip(s: str, seen: _Strictness) -> bytes | None:
    for ch in s:
        if ch == ".":
            return _parse_ipv4(s, seen)
        if ch == ":":
            return _parse_ipv6(s, seen)
    return None


def parse_cidr_sloppy(s: str) -> tuple[bytes, int, bool] | None:
    """net.ParseCIDRSloppy: (address as 16 bytes, prefix length, read as IPv4) or None."""
    got = _parse_cidr(s, _Strictness())
    return got[:3] if got else None


def _parse_cidr(s: str, seen: _Strictness) -> tuple[bytes, int, bool, bool] | None:
    """(address, prefix length, read as IPv4, the address part was read as IPv6)."""
    if "/" not in s:
        return None
    addr, mask = s.split("/", 1)
    v4 = True
    ip = _parse_ipv4(addr, seen)
    if ip is None:
        v4 = False
        ip = _parse_ipv6(addr, seen)
    n, i, ok = _dtoi(mask)
    if ip is None or not ok or i != len(mask) or n > (32 if v4 else 128):
        return None
    if len(mask) > 1 and mask[0] == "0":
        seen.lax = True                         # netip.ParsePrefix: "bad bits after slash"
    return ip, n, v4, not v4


def _masked(ip: bytes, bits: int, v4: bool) -> bytes:
    total = 32 if v4 else 128
    raw = int.from_bytes(ip[12:] if v4 else ip, "big")
    keep = ((1 << bits) - 1) << (total - bits) if bits else 0
    return (raw & keep).to_bytes(total // 8, "big")


def cidr_family(s: str) -> int | None:
    """4 or 6 as k8s.io/utils net IPFamilyOfCIDR reads the network ParseCIDRSloppy gives (an IPv4-mapped
    network counts as IPv4, as net.IP.To4 reads it); None when it is no CIDR."""
    got = parse_cidr_sloppy(s)
    if got is None:
        return None
    ip, bits, v4 = got
    if v4:
        return 4
    net = _masked(ip, bits, False)
    return 4 if net[:12] == _V4_IN_V6 else 6


def is_valid_ip_for_legacy_field(value: str, strict: bool) -> list[str]:
    """IsValidIPForLegacyField: what is wrong with an IP address of a legacy field ([] when valid)."""
    seen = _Strictness()
    ip = _parse_ip(value, seen)
    if ip is None:
        return [IP_INVALID]
    if not strict:
        return []
    if seen.lax:
        return [IP_LEADING_ZEROS]
    if ":" in value.split(".", 1)[0] and ip[:12] == _V4_IN_V6:
        return [IP_4IN6]
    return []


def is_valid_cidr_for_legacy_field(value: str, strict: bool) -> list[str]:
    """IsValidCIDRForLegacyField: what is wrong with a CIDR of a legacy field ([] when valid)."""
    seen = _Strictness()
    got = _parse_cidr(value, seen)
    if got is None:
        return [CIDR_INVALID]
    if not strict:
        return []
    ip, bits, v4, as_v6 = got
    if seen.lax:
        return [CIDR_LEADING_ZEROS]
    if as_v6 and ip[:12] == _V4_IN_V6:
        return [CIDR_4IN6]
    if _masked(ip, bits, v4) != (ip[12:] if v4 else ip):
        return [CIDR_HOST_BITS]
    return []


def cidr_network(s: str) -> tuple[bytes, int, int] | None:
    """The network of a CIDR as Go's net.IPNet.Contains compares it: (address, its prefix, the mask's own size),
    the address 4 bytes when net.IP.To4 reads it as IPv4 (an IPv4-mapped network too); None when it is no CIDR."""
    got = parse_cidr_sloppy(s)
    if got is None:
        return None
    ip, bits, v4 = got
    if v4:
        return _masked(ip, bits, True), bits, bits
    net = _masked(ip, bits, False)
    if net[:12] == _V4_IN_V6:
        return net[12:], max(bits - 96, 0), bits
    return net, bits, bits


def cidr_contains(outer: str, inner: str) -> bool:
    """net.IPNet.Contains(inner's network address), of two CIDRs ParseCIDRSloppy reads."""
    a, b = cidr_network(outer), cidr_network(inner)
    if a is None or b is None or len(a[0]) != len(b[0]):
        return False
    total = len(a[0]) * 8
    return _masked(_pad(b[0]), a[1], total == 32) == _masked(_pad(a[0]), a[1], total == 32)


def _pad(addr: bytes) -> bytes:
    return _V4_IN_V6 + addr if len(addr) == 4 else addr


def endpoint_ip_errors(value: str) -> list[str]:
    """ValidateEndpointIP (kubernetes v1.36.3 pkg/apis/core/validation/validation.go): no unspecified, loopback,
    link-local or link-local multicast address (net.IP's IsUnspecified, IsLoopback, IsLinkLocalUnicast,
    IsLinkLocalMulticast, an IPv4-mapped address read as IPv4)."""
    ip = parse_ip_sloppy(value)
    if ip is None:
        return ["must be a valid IP address"]
    errs = []
    v4 = ip[12:] if ip[:12] == _V4_IN_V6 else None
    if (v4 == bytes(4)) if v4 is not None else ip == bytes(16):
        errs.append(f"may not be unspecified ({value})")
    if (v4[0] == 127) if v4 is not None else ip == bytes(15) + b"\x01":
        errs.append("may not be in the loopback range (127.0.0.0/8, ::1/128)")
    if (v4[:2] == b"\xa9\xfe") if v4 is not None else (ip[0] == 0xFE and ip[1] & 0xC0 == 0x80):
        errs.append("may not be in the link-local range (169.254.0.0/16, fe80::/10)")
    if (v4[:3] == b"\xe0\x00\x00") if v4 is not None else (ip[0] == 0xFF and ip[1] & 0x0F == 0x02):
        errs.append("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")
    return errs
