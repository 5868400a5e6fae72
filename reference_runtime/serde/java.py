"""Java's spelling of Python values: ``Double.toString`` and ``String``'s UTF-16 view (spec SER-2, KEY-*)."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, Decimal


def utf16_units(s: str) -> list[int]:
    """The UTF-16 code units of ``s``, as a Java ``String`` holds them."""
    data = s.encode("utf-16-be")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def utf16_order(s: str) -> bytes:
    """A sort key that orders strings as Java's ``String.compareTo`` does."""
    # Big-endian UTF-16 bytes compare exactly as the code-unit sequences do.
    return s.encode("utf-16-be")


def java_double(x: float) -> str:
    """Java's ``Double.toString`` (JDK 19+ shortest-digit form; JDK 17 differs for a few values)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1, x) < 0 else "0.0"
    sign, digits, exp = Decimal(repr(x)).as_tuple()
    assert isinstance(exp, int)
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    exp += len("".join(map(str, digits))) - len(ds)
    if len(ds) == 1:
        # JDK 19+ never prints one significant digit: among two-digit decimals that still read back as x
        # it takes the one closest to x (Double.MIN_VALUE is 4.9E-324, not 5.0E-324).
        exact = Decimal(x)
        two = exact.quantize(Decimal(1).scaleb(exact.adjusted() - 1), rounding=ROUND_HALF_EVEN)
        if float(two) == x:
            _s, tdigits, texp = two.as_tuple()
            assert isinstance(texp, int)
            ds = "".join(map(str, tdigits)).rstrip("0") or "0"
            exp = texp + len(tdigits) - len(ds)
    sci = len(ds) + exp - 1  # exponent of the leading digit
    prefix = "-" if sign else ""
    if 1e-3 <= abs(x) < 1e7:
        if exp >= 0:
            return f"{prefix}{ds}{'0' * exp}.0"
        point = len(ds) + exp
        if point > 0:
            return f"{prefix}{ds[:point]}.{ds[point:]}"
        return f"{prefix}0.{'0' * -point}{ds}"
    return f"{prefix}{ds[0]}.{ds[1:] or '0'}E{sci}"
