"""Pearson's chi-square goodness-of-fit with its p-value, without scipy.

The p-value is the regularised upper incomplete gamma function Q(k/2, x/2), by its power series
below ``a + 1`` and Lentz's continued fraction above (Press et al., *Numerical Recipes*, 3rd ed.,
section 6.2).
"""

from __future__ import annotations

import math

import numpy as np


def _gamma_q(a: float, x: float) -> float:
    if x <= 0:
        return 1.0
    log_front = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        n = a
        for _ in range(100000):
            n += 1
            term *= x / n
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(log_front))
    tiny = 1e-300
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 100000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return math.exp(log_front) * h


def chi2_pvalue(observed, probs, *, min_expected: float = 5.0) -> tuple[float, float, int]:
    """(statistic, p-value, degrees of freedom) of ``observed`` counts against ``probs``.

    Categories whose expected count is below ``min_expected`` are pooled, in order of
    probability, into bins of at least that expectation (the chi-square approximation needs
    about 5 per bin: Cochran, 1954). Categories with probability 0 must have no draws: any draw
    there returns p = 0.
    """
    observed = np.asarray(observed, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    probs = probs / probs.sum()
    n = observed.sum()
    if observed[probs == 0].sum() > 0:
        return math.inf, 0.0, 0
    order = np.argsort(-probs)
    exp_sorted = probs[order] * n
    obs_sorted = observed[order]
    bins_e, bins_o = [], []
    acc_e = acc_o = 0.0
    for e, o in zip(exp_sorted, obs_sorted):
        if e == 0:
            continue
        acc_e += e
        acc_o += o
        if acc_e >= min_expected:
            bins_e.append(acc_e)
            bins_o.append(acc_o)
            acc_e = acc_o = 0.0
    if acc_e > 0:
        if bins_e:
            bins_e[-1] += acc_e
            bins_o[-1] += acc_o
        else:
            bins_e.append(acc_e)
            bins_o.append(acc_o)
    e = np.array(bins_e)
    o = np.array(bins_o)
    stat = float(((o - e) ** 2 / e).sum())
    dof = len(e) - 1
    if dof < 1:
        return stat, 1.0, dof
    return stat, _gamma_q(dof / 2, stat / 2), dof
