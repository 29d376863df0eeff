"""resource.Quantity as the API server reads it: the grammar, the value it keeps, the checks on it.

A port of k8s.io/apimachinery pkg/api/resource/quantity.go (parseQuantityString,
ParseQuantity, UnmarshalJSON) and suffix.go (the suffix table) at v0.35.0; the
grammar has not changed since before Kubernetes 1.25:

    <sign>?<digits>?(.<digits>?)?<suffix>?   suffix: n u m "" k M G T P E | Ki Mi Gi Ti Pi Ei | e<int> E<int>

so `16G`, `16Gi`, `1e3`, `100m`, `.5`, `1.` are quantities, and `16GB`, `two`,
`1 Gi`, `0.1mi` are not (the API server refuses the whole object with "quantities
must match the regular expression ..." or "unable to parse quantity's suffix").
A JSON string is trimmed of white space first (UnmarshalJSON); a JSON number is
read from its text.

The value is kept exactly (a Fraction) with the API server's two roundings:
non-zero values are rounded away from zero to a whole nano unit, and binary-SI
values are capped at 2^63-1. bench/apiserver.py holds parse_quantity against
the tables of quantity_test.go (TestQuantityParse: every valid case with its
expected value, with an explicit + and -, and the invalid list).
"""
from __future__ import annotations

import math
import re
from fractions import Fraction

SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT = f"quantities must match the regular expression '{SPLIT_RE}'"
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"

DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT = "DecimalSI", "BinarySI", "DecimalExponent"
_MAX_INT64_FACTORS = 18          # quantity.go maxInt64Factors
_NANO = -9                       # Scale Nano
_MAX_ALLOWED = 2 ** 63 - 1       # maxAllowed: the cap of binary-SI values
_SUFFIX_LETTERS = frozenset("eEinumkKMGTP")
_DEC = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BIN = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_GO_INT = re.compile(r"[+-]?[0-9]+").fullmatch            # strconv.ParseInt(s, 10, 64)
_INF_DEC = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)").fullmatch   # inf.Dec SetString of a numeric part


class QuantityError(ValueError):
    """The text is no quantity; str() is the API server's own message."""


def _split(s: str) -> tuple[bool, str, str, str, str]:
    """parseQuantityString: (positive, value, num, denom, suffix)."""
    positive, pos, end = True, 0, len(s)
    num = denom = ""
    if pos < end:
        if s[0] == "-":
            positive, pos = False, 1
        elif s[0] == "+":
            pos = 1
    i = pos
    while True:                                  # leading zeros
        if i >= end:
            return positive, "0", "0", "", ""
        if s[i] != "0":
            break
        pos += 1
        i += 1
    i = pos
    while True:                                  # the numerator
        if i >= end:
            return positive, s[:end], s[pos:end], "", ""
        if not ("0" <= s[i] <= "9"):
            num, pos = s[pos:i], i
            break
        i += 1
    if not num:
        num = "0"
    if pos < end and s[pos] == ".":              # the denominator
        pos += 1
        i = pos
        while True:
            if i >= end:
                return positive, s[:end], num, s[pos:end], ""
            if not ("0" <= s[i] <= "9"):
                denom, pos = s[pos:i], i
                break
            i += 1
    value = s[:pos]
    start = i = pos
    while True:                                  # suffix letters
        if i >= end:
            return positive, value, num, denom, s[start:end]
        if s[i] not in _SUFFIX_LETTERS:
            pos = i
            break
        i += 1
    if pos < end and s[pos] in "-+":
        pos += 1
    i = pos
    while True:                                  # exponent digits
        if i >= end:
            return positive, value, num, denom, s[start:end]
        if not ("0" <= s[i] <= "9"):
            break
        i += 1
    raise QuantityError(ERR_FORMAT)


def _int32(v: int) -> int:
    return (v + 2 ** 31) % 2 ** 32 - 2 ** 31


def _interpret(suffix: str) -> tuple[int, int, str] | None:
    """suffix.go interpret: (base, exponent, format), None when it is no suffix."""
    if suffix in _DEC:
        return 10, _DEC[suffix], DECIMAL_SI
    if suffix in _BIN:
        return 2, _BIN[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE" and _GO_INT(suffix[1:]):
        parsed = int(suffix[1:])
        if -2 ** 63 <= parsed < 2 ** 63:
            return 10, _int32(parsed), DECIMAL_EXPONENT
    return None


def _round_up_nano(v: Fraction) -> Fraction:
    """inf.RoundUp to 9 decimals: away from zero."""
    scaled = v * 10 ** 9
    if scaled.denominator == 1:
        return v
    whole = math.ceil(scaled) if scaled > 0 else math.floor(scaled)
    return Fraction(whole, 10 ** 9)


def parse_quantity(s: str) -> tuple[Fraction, str]:
    """ParseQuantity: (value, format) or QuantityError with the API server's message."""
    if not s:
        raise QuantityError(ERR_FORMAT)
    if s == "0":
        return Fraction(0), DECIMAL_SI
    positive, value, num, denom, suf = _split(s)
    found = _interpret(suf)
    if found is None:
        raise QuantityError(ERR_SUFFIX)
    base, exponent, fmt = found
    precision, scale, mantissa = 0, 0, 1
    if fmt in (DECIMAL_EXPONENT, DECIMAL_SI):
        scale = exponent
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
    elif exponent >= 0 and not denom:
        mantissa = 1 << exponent
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
    else:
        precision = -1
    if precision >= 0:
        scale -= len(denom)
        if scale >= _NANO:
            result = int(num + denom) * mantissa
            if result < 2 ** 63:                 # int64Multiply did not overflow: the fast path
                v = Fraction(result) * Fraction(10) ** scale
                return (v if positive else -v), fmt
    if not _INF_DEC(value):
        raise QuantityError(ERR_NUMERIC)
    sign, text = (-1 if value.startswith("-") else 1), value.lstrip("+-")
    whole, _, frac = text.partition(".")
    amount = Fraction(int((whole + frac) or "0"), 10 ** len(frac))
    amount *= Fraction(10) ** exponent if base == 10 else 2 ** exponent
    if amount != 0:
        amount = _round_up_nano(amount)
    if fmt == BINARY_SI and amount > _MAX_ALLOWED:
        amount = Fraction(_MAX_ALLOWED)
    if fmt == BINARY_SI and 0 < amount < 1:
        fmt = DECIMAL_SI
    return sign * amount, fmt


def json_text(value) -> str | None:
    """The text UnmarshalJSON parses: a string trimmed of white space, a number as JSON writes it;
    None for what is no quantity field value at all (the schema reports its type)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    return None


_read_cache: dict = {}
_READ_CACHE_MAX = 4096


def read(value) -> int | Fraction | str | None:
    """A quantity field's value (an int when whole, else a Fraction), the API server's error text, or None
    (not a scalar).

    Memoized: the amounts of a stream repeat ("8", "32Gi", "500m")."""
    key = (value.__class__, value) if isinstance(value, (str, int, float)) else None
    if key is not None:
        got = _read_cache.get(key, _read_cache)
        if got is not _read_cache:
            return got
    text = json_text(value)
    if text is None:
        got = None
    else:
        try:
            got = parse_quantity(text)[0]
            if got.denominator == 1:
                got = got.numerator          # whole amounts as ints: they compare ten times faster
        except QuantityError as exc:
            got = str(exc)
    if key is not None:
        if len(_read_cache) >= _READ_CACHE_MAX:
            _read_cache.clear()
        _read_cache[key] = got
    return got


def milli_value(v: int | Fraction) -> int:
    """Quantity.MilliValue: the value in thousandths, rounded up."""
    return math.ceil(v * 1000)


def value(v: int | Fraction) -> int:
    """Quantity.Value: rounded up to a whole number."""
    return math.ceil(v)
