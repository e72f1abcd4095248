"""How two results of the same function are compared: tolerances by dtype, as torch does.

The default follows :func:`torch.testing.assert_close`: floating and complex tensors are close
when ``|actual - expected| <= atol + rtol * |expected|`` with torch's own per-dtype defaults
(float32: ``rtol=1.3e-6, atol=1e-5``; float16: ``1e-3, 1e-5``; bfloat16: ``1.6e-2, 1e-5``;
float64: ``1e-7, 1e-7``), and every other dtype — integers, booleans, indices, float8 — must be
equal. NaN equals NaN. ``exact`` asks for equal bits (up to a NaN's payload), which is what a
cache written by one kernel and read by another needs; ``atol=rtol=0`` means the same.

Why a tolerance by default: a correct kernel may take another compiled specialisation for
another layout (an odd storage offset defeats 16-byte alignment, a transposed input goes
through a copy) and sum in another order, which moves a float32 result by an ulp or two. A
misplaced element (a wrong stride reads a neighbour, or the NaN poison of a gap) is off by far
more than these tolerances.

Imports torch at import time; :mod:`stridecheck.testing.invariant` imports it lazily.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

#: ``torch.testing.assert_close``'s defaults as its documentation states them, (rtol, atol);
#: used only where torch's own table cannot be read (it is private to torch).
_DOCUMENTED_DEFAULTS = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex32: (1e-3, 1e-5),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}

#: Up to this many units in the last place, a difference is the size a change of rounding
#: (another summation order) makes; a misplaced element is almost never this close.
FEW_ULP = 8


def default_tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """``(rtol, atol)`` that ``torch.testing.assert_close`` uses for ``dtype`` by default.

    ``(0.0, 0.0)`` (exact) for every dtype torch gives no tolerance: integers, bool, float8.
    """
    try:
        from torch.testing._comparison import default_tolerances
    except ImportError:
        return _DOCUMENTED_DEFAULTS.get(dtype, (0.0, 0.0))
    return tuple(float(x) for x in default_tolerances(dtype))


@dataclass(frozen=True)
class Tolerance:
    """What "the same" means for one comparison.

    ``exact``: equal bits (NaN equal to any NaN). Otherwise ``rtol``/``atol`` as given, or, where
    both are None, :func:`default_tolerance` of each tensor's dtype.
    """

    rtol: float | None = None
    atol: float | None = None
    exact: bool = False

    @classmethod
    def from_arguments(cls, atol: float | None, rtol: float | None, exact: bool) -> "Tolerance":
        """Validate the keywords of :func:`~stridecheck.testing.assert_layout_invariant`.

        One of ``atol``/``rtol`` alone sets the other to 0; both 0 means ``exact``.

        Raises:
            ValueError: a negative or non-finite tolerance; ``exact=True`` with a tolerance.
        """
        for label, value in (("atol", atol), ("rtol", rtol)):
            if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{label} must be a finite number >= 0, got {value!r}")
        if exact and (atol or rtol):
            raise ValueError(f"exact=True asks for equal bits; it takes no atol/rtol (got atol={atol}, rtol={rtol})")
        if exact:
            return cls(exact=True)
        if atol is None and rtol is None:
            return cls()
        atol, rtol = float(atol or 0.0), float(rtol or 0.0)
        if atol == 0 and rtol == 0:
            return cls(exact=True)
        return cls(rtol=rtol, atol=atol)

    @property
    def is_default(self) -> bool:
        return not self.exact and self.rtol is None and self.atol is None

    def for_dtype(self, dtype: torch.dtype) -> tuple[float, float]:
        """``(rtol, atol)`` for a tensor of ``dtype``; ``(0, 0)`` means exact."""
        if self.exact or dtype == torch.bool:
            return 0.0, 0.0
        if self.is_default:
            return default_tolerance(dtype)
        return self.rtol, self.atol

    def describe(self, dtype: torch.dtype) -> str:
        """The comparison used for ``dtype``, in words, naming the keyword that sets it."""
        if self.exact:
            return "exact=True (equal bits)"
        rtol, atol = self.for_dtype(dtype)
        if self.is_default:
            if rtol == 0 and atol == 0:
                return f"exact for {_dtype_name(dtype)} (torch.testing.assert_close's default)"
            return f"rtol={rtol:g}, atol={atol:g} (torch.testing.assert_close's default for {_dtype_name(dtype)})"
        return f"rtol={rtol:g}, atol={atol:g} (as given)"


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclass(frozen=True)
class Difference:
    """How ``actual`` differs from ``expected`` (both tensors of one logical shape).

    ``mismatch`` is set (and the rest empty) when the shapes or dtypes differ: the expected and
    the actual tensor's ``"shape (2, 3) torch.float32"``. Otherwise
    ``index`` is the first differing logical index, ``expected``/``actual`` the values there,
    ``count`` how many of ``numel`` elements differ, ``max_abs`` the largest absolute difference
    among them (inf where one side is NaN or infinite) and ``max_ulp`` the same in units in the
    last place of ``expected``'s dtype (floating dtypes only).
    """

    index: tuple[int, ...] = ()
    expected: object = None
    actual: object = None
    count: int = 0
    numel: int = 0
    max_abs: float | None = None
    max_ulp: float | None = None
    dtype: torch.dtype | None = None
    mismatch: tuple[str, str] | None = None

    @property
    def within_few_ulp(self) -> bool:
        return self.max_ulp is not None and self.max_ulp <= FEW_ULP


_NARROW_FLOATS = tuple(
    getattr(torch, name)
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu")
    if hasattr(torch, name)
)


def _same(a: torch.Tensor, b: torch.Tensor, rtol: float, atol: float) -> torch.Tensor:
    """Elementwise: is ``b`` (actual) the same as ``a`` (expected)? NaN matches NaN.

    ``|b - a| <= atol + rtol * |a|``: the relative part scales with the expected value, as in
    ``torch.testing.assert_close(actual, expected)``.
    """
    if a.dtype == torch.bool:
        return a == b
    if a.is_complex():
        if rtol == 0 and atol == 0:
            ar, br = torch.view_as_real(a), torch.view_as_real(b)
            return _same(ar, br, 0, 0).all(dim=-1)
        return torch.isclose(b, a, rtol=rtol, atol=atol, equal_nan=True)
    if a.is_floating_point():
        if rtol == 0 and atol == 0:
            # Equal bits up to a NaN's payload: -0.0 and 0.0 differ.
            return ((a == b) & (torch.signbit(a) == torch.signbit(b))) | (torch.isnan(a) & torch.isnan(b))
        return torch.isclose(b, a, rtol=rtol, atol=atol, equal_nan=True)
    if rtol == 0 and atol == 0:
        return a == b
    return torch.isclose(b.double(), a.double(), rtol=rtol, atol=atol)


def _ulp(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The spacing of ``dtype``'s values at ``|x|`` (float64 ``x``), subnormals included."""
    info = torch.finfo(dtype)
    exponent = torch.frexp(x.abs()).exponent
    # x = m * 2**e with 0.5 <= m < 1, so values near x are spaced eps * 2**(e - 1) apart.
    spacing = torch.ldexp(torch.full_like(x, info.eps), exponent - 1)
    # Below the normal range (0 included, whose frexp exponent is 0) the spacing is constant.
    smallest = info.eps * info.tiny
    return torch.where(x.abs() < info.tiny, torch.full_like(x, smallest), torch.clamp(spacing, min=smallest))


def difference(expected: torch.Tensor, actual: torch.Tensor, tolerance: Tolerance) -> Difference | None:
    """Where ``actual`` differs from ``expected`` under ``tolerance``; None if they are the same."""
    if tuple(expected.shape) != tuple(actual.shape) or expected.dtype != actual.dtype:
        return Difference(
            mismatch=(f"shape {tuple(expected.shape)} {expected.dtype}", f"shape {tuple(actual.shape)} {actual.dtype}")
        )
    dtype = expected.dtype
    a, b = expected.detach(), actual.detach().to(expected.device)
    if dtype in _NARROW_FLOATS:
        a, b = a.float(), b.float()
    rtol, atol = tolerance.for_dtype(dtype)
    same = _same(a, b, rtol, atol)
    if bool(same.all()):
        return None
    bad = ~same
    index = tuple(int(i) for i in torch.nonzero(bad)[0].tolist())
    max_abs = max_ulp = None
    if a.dtype != torch.bool:
        da, db = a[bad], b[bad]
        if da.is_complex():
            gap = (da.to(torch.complex128) - db.to(torch.complex128)).abs()
        else:
            gap = (da.double() - db.double()).abs()
        gap = torch.where(torch.isnan(gap), torch.full_like(gap, math.inf), gap)
        max_abs = float(gap.max())
        if a.is_floating_point():
            max_ulp = float((gap / _ulp(da.double(), dtype)).max())
    return Difference(
        index=index,
        expected=scalar(expected[index]),
        actual=scalar(actual[index]),
        count=int(bad.sum()),
        numel=expected.numel(),
        max_abs=max_abs,
        max_ulp=max_ulp,
        dtype=dtype,
    )


def scalar(t: torch.Tensor) -> object:
    """A 0-d tensor's value as a Python number (float8 and other narrow dtypes via float32)."""
    try:
        return t.item()
    except (RuntimeError, TypeError):
        return t.float().item()


def format_value(value: object, dtype: torch.dtype | None = None) -> str:
    """``value`` with as many digits as ``dtype`` holds (9 for float32, 5 for float16...)."""
    if isinstance(value, float) and dtype is not None and dtype.is_floating_point:
        digits = 17 if dtype == torch.float64 else 9 if dtype == torch.float32 else 5
        return f"{value:.{digits}g}"
    if isinstance(value, complex) and dtype is not None:
        digits = 17 if dtype == torch.complex128 else 9
        return f"({value.real:.{digits}g}{value.imag:+.{digits}g}j)"
    return repr(value)


def format_index(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]"
