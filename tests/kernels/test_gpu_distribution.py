"""Large distribution tests, on a CUDA device only.

Parametrised over the CUDA devices present: without CUDA the parameter set is empty and pytest
reports each test as skipped ("got empty parameter set"), never as passed.
"""

import math

import pytest
import torch

from guarded_kernels import gumbel_sample, resample, resample_plan, sample_plan
from tests.kernels.chisquare import chi2_pvalue

GPU = ["cuda"] if torch.cuda.is_available() else []
ALPHA = 1e-6  # fixed seeds: deterministic verdicts (see test_gumbel_sample)
DRAWS = 4 * 1024 * 1024
CALL_ROWS = 8192


def _count_draws(logits_row, temperature, accurate_log):
    """[V] int64 counts (CPU) of DRAWS draws from one row; ``accurate_log``: the plan's library
    logarithm instead of the GPU's lg2.approx."""
    V = logits_row.numel()
    plan = sample_plan(CALL_ROWS, V, logits_row.dtype, logits_row.device, fast_log=not accurate_log)
    counts = torch.zeros(V, dtype=torch.int64, device="cuda")
    idx = torch.zeros(CALL_ROWS, dtype=torch.int64, device="cuda")
    temp = torch.tensor([temperature], device="cuda")
    seed = torch.tensor([20261129], device="cuda")
    logits = logits_row.expand(CALL_ROWS, V)  # one row, stride 0: every draw reads it from L2
    for start in range(0, DRAWS, CALL_ROWS):
        pos = torch.arange(start, start + CALL_ROWS, device="cuda")
        out = gumbel_sample(logits, idx, temp, seed, pos, plan=plan)
        counts += torch.bincount(out, minlength=V)
    return counts.cpu().numpy()


@pytest.mark.gpu
@pytest.mark.parametrize("device", GPU)
@pytest.mark.parametrize("accurate_log", [False, True], ids=["lg2_approx", "accurate_log"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_large_vocabulary_distribution(device, accurate_log, dtype):
    # V = 200,000, 4,194,304 draws, categories pooled to >= 5 expected draws per bin.
    V = 200_000
    g = torch.Generator().manual_seed(1)
    row = (torch.randn(V, generator=g) * 2.5).to(dtype)
    temperature = 0.8
    counts = _count_draws(row.to(device), temperature, accurate_log)
    assert counts.sum() == DRAWS
    probs = torch.softmax(row.double() / temperature, -1).numpy()
    stat, p, dof = chi2_pvalue(counts, probs)
    print(f"V={V} draws={DRAWS} chi2={stat:.1f} dof={dof} p={p:.3g}")
    assert p > ALPHA, (stat, dof, p)


@pytest.mark.gpu
@pytest.mark.parametrize("device", GPU)
@pytest.mark.parametrize("accurate_log", [False, True], ids=["lg2_approx", "accurate_log"])
def test_heavy_tail_is_drawn_at_its_rate(device, accurate_log):
    # One token 18 nats above 65,536 others: the tail holds 65536 e^-18 / (1 + 65536 e^-18) of
    # the mass, about 1e-3, so ~4,190 of 4.2M draws. With 24-bit uniforms the noise is capped
    # near 17.3 nats and the tail rate falls far short. Poisson tolerance: 5 sigma.
    M = 65536
    row = torch.zeros(M + 1, device="cuda")
    row[0] = 18.0
    counts = _count_draws(row, 1.0, accurate_log)
    tail = int(counts[1:].sum())
    mass = M * math.exp(-18) / (1 + M * math.exp(-18))
    expected = DRAWS * mass
    print(f"tail draws {tail}, expected {expected:.1f}")
    assert abs(tail - expected) < 5 * math.sqrt(expected), (tail, expected)


def _count_residual_draws(t_row, d_row, seed, race, accurate_log=False):
    """[V] int64 counts (CPU) of DRAWS resampled tokens: CALL_ROWS requests a call, each with one
    rejected draft, every target row ``t_row`` and every draft row ``d_row`` (one request-state
    slot: idx_mapping is all 0, stride-0 rows read from L2), temperature 1, noise positions
    fresh per call; the one launch's p - q draw, as the race or by log keys."""
    V = t_row.numel()
    Q = CALL_ROWS
    target = t_row.float().cuda().expand(2 * Q, V)
    draft = d_row.float().cuda().expand(1, 1, V)
    cu = torch.arange(0, 2 * Q + 1, 2, device="cuda")
    acc = torch.zeros(Q, dtype=torch.int64, device="cuda")
    idx = torch.zeros(Q, dtype=torch.int64, device="cuda")
    temp = torch.ones(1, device="cuda")
    seed_t = torch.tensor([seed], device="cuda")
    tokens = torch.zeros(Q, 1, dtype=torch.int64, device="cuda")
    counts = torch.zeros(V, dtype=torch.int64, device="cuda")
    plan = resample_plan(Q, V, target.dtype, target.device, exchange=True, residual_form=2, race=race,
                         fast_log=not accurate_log)
    for start in range(0, DRAWS, Q):
        pos = torch.arange(2 * start, 2 * start + 2 * Q, device="cuda")
        counts += torch.bincount(resample(target, draft, tokens, acc, cu, idx, temp, seed_t, pos, plan=plan),
                                 minlength=V)
    return counts.cpu()


# The residual draw's two key forms on the one launch its 8,192-request calls take: the Gumbel-max
# log keys of p - q, and the exponential race (the plan's race, shipped for 16-bit logits; set here
# for these float32 rows), the same draw in exact arithmetic.
RACE = pytest.mark.parametrize("race", [False, True], ids=["log_keys", "race"])


@pytest.mark.gpu
@pytest.mark.parametrize("device", GPU)
@RACE
def test_large_vocabulary_residual(device, race):
    V = 200_000
    g = torch.Generator().manual_seed(2)
    t_row = torch.randn(V, generator=g) * 2
    d_row = t_row + torch.randn(V, generator=g) * 0.7
    counts = _count_residual_draws(t_row, d_row, 99, race).numpy()
    p = torch.softmax(t_row.double(), -1)
    q = torch.softmax(d_row.double(), -1)
    r = (p - q).clamp(min=0)
    assert counts[(p <= q).numpy()].sum() == 0
    stat, pv, dof = chi2_pvalue(counts, (r / r.sum()).numpy())
    print(f"residual V={V} draws={DRAWS} chi2={stat:.1f} dof={dof} p={pv:.3g}")
    assert pv > ALPHA, (stat, dof, pv)


@pytest.mark.gpu
@pytest.mark.parametrize("device", GPU)
@pytest.mark.parametrize("accurate_log", [False, True], ids=["lg2_approx", "accurate_log"])
@RACE
def test_residual_heavy_tail_is_drawn_at_its_rate(device, accurate_log, race):
    # resample's twin of the heavy-tail test. Target: tokens 0 and 1 at 18 nats, 65,536 tail
    # tokens at 0. Draft: q = p / 2 on token 0 and on the tail, the rest of q on token 1, so
    # q_1 > p_1 and the residual max(p - q, 0) is p / 2 on token 0 and on the tail, 0 on token 1:
    # one dominant token and a tail 18 nats below it per token, about 1e-3 of the residual mass
    # (~4,190 of 4.2M draws), every tail value computed through log p + log(1 - q / p) with
    # q / p = 1/2. With 24-bit uniforms the noise is capped near 17.3 nats and the tail is
    # (almost) never drawn. Tolerance: 5 Poisson standard deviations of the expected count
    # (+-323): a correct sampler fails with probability ~6e-7, while a tail drawn at 17.3-nat
    # resolution misses by thousands of draws. The expected count is the float64 residual's.
    M = 65536
    V = M + 2
    t_row = torch.zeros(V, dtype=torch.float64)
    t_row[:2] = 18.0
    lse_t = torch.logsumexp(t_row, 0)
    # log q_i = log p_i - log 2 on token 0 and the tail; token 1 takes the rest of q's mass.
    d_row = t_row - lse_t - math.log(2)
    d_row[1] = math.log(1 - torch.exp(torch.cat([d_row[:1], d_row[2:]])).sum().item())
    p = torch.softmax(t_row, 0)
    q = torch.softmax(d_row.float().double(), 0)
    r = (p - q).clamp(min=0)
    assert r[1] == 0
    mass = (r[2:].sum() / r.sum()).item()
    counts = _count_residual_draws(t_row, d_row, 7, race, accurate_log)
    assert counts.sum() == DRAWS
    assert counts[1] == 0  # p_1 < q_1: never drawn
    tail = int(counts[2:].sum())
    expected = DRAWS * mass
    print(f"residual tail draws {tail}, expected {expected:.1f} (mass {mass:.3e})")
    assert abs(tail - expected) < 5 * math.sqrt(expected), (tail, expected)
