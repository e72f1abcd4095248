"""guarded_kernels.resample: residual, one-hot and bonus draws; greedy; layouts."""

import importlib
import math

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from guarded_kernels import Gpu, gumbel_sample, resample, resample_plan
from guarded_kernels._common import chunk_layout

H200 = Gpu(sms=132, pdl=True)
from stridecheck.testing import assert_layout_invariant
from tests.kernels.chisquare import chi2_pvalue
from tests.kernels.reference import (
    assert_reference_draws,
    bound_probe_row,
    decided_argmax,
    near_tied_logits,
    noise2,
    random_requests,
    reference_keys,
)

ALPHA = 1e-6  # as in test_gumbel_sample: fixed seeds, deterministic verdicts, large margins

resample_mod = importlib.import_module("guarded_kernels.resample")


TARGET = torch.tensor([0.0, 1.0, 2.0, -1.0, 0.5, 1.5, 0.3])
DRAFT = torch.tensor([1.0, 0.0, 2.5, -1.0, 0.5, 0.0, 0.3])


def _batch(device, Q, S=2, accepted=0, width_pad=0, draft_vocab=None, temperature=1.0):
    """Q requests of S drafts each, all rows holding TARGET, draft slots holding DRAFT."""
    V = TARGET.numel()
    target = TARGET.to(device).expand(Q * (S + 1), V)
    W = V + width_pad
    draft = torch.full((1, S, W), 7.0)
    draft[0, :, :V] = DRAFT
    draft = draft.to(device).expand(Q, S, W)
    cu = torch.arange(0, Q * (S + 1) + 1, S + 1, device=device)
    acc = torch.full((Q,), accepted, dtype=torch.int64, device=device)
    idx = torch.arange(Q, device=device)
    temp = torch.full((Q,), temperature, device=device)
    seed = torch.full((Q,), 11, dtype=torch.int64, device=device)
    pos = torch.arange(Q * (S + 1), device=device)
    tokens = torch.zeros(Q, S, dtype=torch.int64, device=device)
    return target, draft, tokens, acc, cu, idx, temp, seed, pos


def _residual(temperature=1.0, vd=None):
    p = torch.softmax(TARGET.double() / temperature, -1)
    d = DRAFT.double() / temperature
    q = torch.zeros_like(p)
    vd = vd or p.numel()
    q[:vd] = torch.softmax(d[:vd], -1)
    r = (p - q).clamp(min=0)
    return p, q, r / r.sum()


@pytest.mark.parametrize("temperature, use_fp64", [(1.0, False), (0.7, True)])
def test_residual_distribution(device, temperature, use_fp64, small_blocks):
    small_blocks(block=16, splits=1)
    # 200 draws on the CPU: judged against p (the fault below), the chi-square's noncentrality is
    # about 290, far past the 1e-6 threshold of its few degrees of freedom (about 30).
    Q = 200 if device.type == "cpu" else 100_000
    args = _batch(device, Q, temperature=temperature)
    out = small_blocks.resample(*args, use_fp64=use_fp64).cpu().numpy()
    p, q, r = _residual(temperature)
    # Never a token with p <= q.
    assert not np.isin(out, torch.nonzero(p <= q).flatten().numpy()).any()
    stat, pv, dof = chi2_pvalue(np.bincount(out, minlength=7), r.numpy())
    assert pv > ALPHA, (stat, dof, pv)
    # Power: judged against p itself (the residual ignored), the draws fail.
    _, pv_wrong, _ = chi2_pvalue(np.bincount(out, minlength=7), p.numpy())
    assert pv_wrong < ALPHA


def test_residual_with_a_wider_draft_cache_and_smaller_draft_vocab(device, small_blocks):
    # W exceeds V_d (the founding bug's cache); columns beyond V_d hold 7.0, which must be ignored
    # (read, they would take most of q's mass: the residual would be another distribution).
    small_blocks(block=8, splits=1)
    Q = 200 if device.type == "cpu" else 100_000
    args = _batch(device, Q, width_pad=3)
    out = small_blocks.resample(*args, draft_vocab_size=5).cpu().numpy()
    p, q, r = _residual(vd=5)
    assert not np.isin(out, torch.nonzero(p <= q).flatten().numpy()).any()
    _, pv, _ = chi2_pvalue(np.bincount(out, minlength=7), r.numpy())
    assert pv > ALPHA


def test_split_and_single_program_paths_agree(device, small_blocks):
    args = _batch(device, 20)
    small_blocks(block=4, splits=2)
    a = small_blocks.resample(*args)
    small_blocks(block=16, splits=1)
    assert torch.equal(a, small_blocks.resample(*args))


def test_one_hot_drafts_remove_the_rejected_token(device, small_blocks):
    small_blocks(block=16, splits=1)
    # 200 draws: token 2 (p = 0.49 before its removal) would appear about 98 times.
    Q = 200 if device.type == "cpu" else 100_000
    target, draft, tokens, acc, cu, idx, temp, seed, pos = _batch(device, Q)
    tokens[:, 0] = 2  # the most likely token, rejected
    out = small_blocks.resample(target, None, tokens, acc, cu, idx, temp, seed, pos).cpu().numpy()
    assert not (out == 2).any()
    p = torch.softmax(TARGET.double(), -1)
    p[2] = 0
    _, pv, _ = chi2_pvalue(np.bincount(out, minlength=7), (p / p.sum()).numpy())
    assert pv > ALPHA


def test_bonus_row_draws_from_p_with_gumbel_sample_noise(device, small_blocks):
    small_blocks(block=4, splits=2)
    Q, S = 30, 2
    target, draft, tokens, acc, cu, idx, temp, seed, pos = _batch(device, Q, S=S, accepted=S)
    g = torch.Generator().manual_seed(5)
    target = torch.randn(Q * (S + 1), 7, generator=g).to(device)
    out = small_blocks.resample(target, draft, tokens, acc, cu, idx, temp, seed, pos)
    rows = cu[:-1] + S
    # The verification stream keyed by (seed, pos of that row): gumbel_sample's draw of that row.
    same = small_blocks.sample(target[rows], idx, temp, seed, pos[rows])
    assert torch.equal(out, same)


def test_greedy_is_the_target_argmax_of_the_resampled_row(device, small_blocks):
    small_blocks(block=4, splits=2)
    Q, S = 6, 3
    target, draft, tokens, acc, cu, idx, temp, seed, pos = _batch(device, Q, S=S, temperature=0.0)
    g = torch.Generator().manual_seed(6)
    target = torch.randn(Q * (S + 1), 7, generator=g).to(device)
    target[1 * (S + 1) + 1, 3] = target[1 * (S + 1) + 1, 5] = 9.0  # tie: 3 wins
    acc = torch.tensor([0, 1, 2, 3, 0, 1], device=device)
    out = small_blocks.resample(target, draft, tokens, acc, cu, idx, temp, seed, pos)
    assert torch.equal(out, target[cu[:-1] + acc].argmax(-1))
    assert out[1].item() == 3
    assert torch.equal(out, small_blocks.resample(target, None, tokens, acc, cu, idx, temp, seed, pos))


def test_deterministic_in_range_and_v_equal_one(device):
    args = _batch(device, 8)
    a = resample(*args)
    assert torch.equal(a, resample(*args))
    assert ((a >= 0) & (a < 7)).all()
    target, draft, tokens, acc, cu, idx, temp, seed, pos = _batch(device, 4)
    one = resample(target[:, :1].contiguous(), draft[:, :, :1].contiguous(), tokens, acc, cu, idx, temp, seed, pos)
    assert (one == 0).all()


def test_refuses_inconsistent_inputs(device):
    target, draft, tokens, acc, cu, idx, temp, seed, pos = _batch(device, 4)
    with pytest.raises(ValueError, match="cu_num_logits"):
        resample(target, draft, tokens, acc, cu[:-1], idx, temp, seed, pos)
    with pytest.raises(ValueError, match="draft_vocab_size"):
        resample(target, draft, tokens, acc, cu, idx, temp, seed, pos, draft_vocab_size=8)


def test_layouts_do_not_change_tokens(device, small_blocks):
    small_blocks(block=4, splits=2)
    Q, S = 3, 2
    g = torch.Generator().manual_seed(8)
    target = torch.randn(Q * (S + 1), 7, generator=g).to(device)
    draft = torch.randn(Q, S, 9, generator=g).to(device)
    _, _, tokens, acc, cu, idx, temp, seed, pos = _batch(device, Q, S=S)
    acc = torch.tensor([0, 1, 2], device=device)
    assert_layout_invariant(resample, target, draft, tokens, acc, cu, idx, temp, seed, pos, draft_vocab_size=7)
    assert_layout_invariant(resample, target, None, tokens, acc, cu, idx, temp, seed, pos)


@pytest.mark.parametrize("one_hot", [False, True])
def test_fp64_argmax_equals_a_float64_reference_of_the_same_noise(device, one_hot, small_blocks):
    # splits=3 is ignored by the float64 path (one program per request), and must be.
    small_blocks(block=16, splits=3)
    Q, S, V, W, vd = 24, 2, 29, 31, 27
    args = random_requests(device, Q, S, V, W, seed0=21)
    target, draft, tokens, acc, cu, idx, temp, seed, pos = args
    if one_hot:
        draft, vd = None, None
    out = small_blocks.resample(target, draft, tokens, acc, cu, idx, temp, seed, pos, draft_vocab_size=vd, use_fp64=True).cpu()
    # The reference forms p - q by subtraction (the kernel by the stable log form): 1e-9 in log2
    # units is far above float64 rounding of either and far below typical key gaps.
    assert_reference_draws(out, (target, draft, tokens, acc, cu, idx, temp, seed, pos), vd or V, 1e-9, Q - 2)
    # The float32 fast path draws the same tokens here (no near-ties at these sizes).
    assert torch.equal(out, small_blocks.resample(target, draft, tokens, acc, cu, idx, temp, seed, pos, draft_vocab_size=vd).cpu())


@pytest.mark.parametrize("use_fp64, block, splits, exchange, form", [
    (False, 16, 1, False, 1),  # one program per request
    (False, 4, 3, False, 2),  # the two launches
    (False, 4, 3, True, 1),  # the one launch, both residual forms
    (False, 4, 3, True, 2),
    (True, 16, 1, False, 1),  # float64
])
def test_no_residual_mass_falls_back_to_p(device, use_fp64, block, splits, exchange, form, small_blocks):
    # p == q exactly (draft logits equal to the target's): max(p - q, 0) is zero everywhere and
    # the residual is undefined. In exact arithmetic such a draft is always accepted; the
    # fallback draws from p (the distribution the output must have), with the row's own noise,
    # so the token is gumbel_sample's draw of that row. Before, the lowest index came back.
    # form 2 (p - q) must give exactly zero where p == q whatever the compiler fuses: on the GPU
    # an FMA of a product and a subtraction rounds once and can leave a tiny residual.
    small_blocks(block=block, splits=splits, exchange=exchange, residual_form=form)
    Q, S, V = 12, 2, 9
    target, _, tokens, acc, cu, idx, temp, seed, pos = random_requests(device, Q, S, V, V, seed0=4)
    acc = torch.zeros(Q, dtype=torch.int64, device=device)  # draft 0 of every request rejected
    rows = cu[:-1]
    draft = torch.empty(Q, S, V, device=device)
    draft[idx, 0] = target[rows]
    out = small_blocks.resample(target, draft, tokens, acc, cu, idx, temp, seed, pos, use_fp64=use_fp64)
    assert torch.equal(out, small_blocks.sample(target[rows], idx, temp, seed, pos[rows], use_fp64=use_fp64))
    assert out.unique().numel() > 1  # not a constant index
    # One-hot drafts where p is a point mass on the rejected token: p less that token is empty;
    # the only token with mass comes back, not token 0 (which p gives probability 0).
    point = torch.full((Q * (S + 1), V), -math.inf, device=device)
    point[:, 5] = 0.0
    tokens = torch.full((Q, S), 5, dtype=torch.int64, device=device)
    out = small_blocks.resample(point, None, tokens, acc, cu, idx, temp, seed, pos, use_fp64=use_fp64)
    assert (out == 5).all()


def test_independent_of_batch_composition(device, small_blocks):
    small_blocks(block=8, splits=2)
    Q, S, V = 6, 2, 20
    target, draft, tokens, acc, cu, idx, temp, seed, pos = random_requests(device, Q, S, V, V, seed0=9)
    a = small_blocks.resample(target, draft, tokens, acc, cu, idx, temp, seed, pos)
    # Requests 4, 1, 3 alone, in that order, their rows packed afresh, in other state slots.
    keep = [4, 1, 3]
    rows = torch.cat([torch.arange(int(cu[r]), int(cu[r + 1])) for r in keep]).to(device)
    R2 = 10
    slots = torch.tensor([7, 0, 3], device=device)
    draft2 = torch.zeros(R2, S, V, device=device)
    temp2 = torch.ones(R2, device=device)
    seed2 = torch.zeros(R2, dtype=torch.int64, device=device)
    old = idx[keep]
    draft2[slots], temp2[slots], seed2[slots] = draft[old], temp[old], seed[old]
    cu2 = torch.arange(0, 3 * (S + 1) + 1, S + 1, device=device)
    b = small_blocks.resample(target[rows], draft2, tokens[keep], acc[keep], cu2, slots, temp2, seed2, pos[rows])
    assert torch.equal(b, a[keep])


def test_fp64_resolves_draws_that_float32_cannot(device):
    # Target rows whose keys (under each row's own noise) lie within 1e-6 of one another, below
    # float32's resolution of keys near 3 (2**-22 ~ 2.4e-7 per rounding, several roundings):
    # only float64 noise and reduction reproduce the float64 reference here. Bonus rows draw from
    # p; rejected rows have a draft that is a point mass on token 0 (logit 0, all others -inf),
    # so the residual is p without token 0 and goes through the residual branch.
    g = torch.Generator().manual_seed(13)
    Q, S, V = 16, 1, 24
    N = Q * (S + 1)
    seed = torch.randint(0, 2**62, (Q,), generator=g)
    pos = torch.randint(0, 2**40, (N,), generator=g)
    temp = torch.full((Q,), 0.8)
    target = torch.stack([near_tied_logits(int(seed[i // 2]), int(pos[i]), V, 0.8, 1e-6, g) for i in range(N)])
    draft = torch.full((Q, S, V), -math.inf)
    draft[:, :, 0] = 0.0
    acc = torch.arange(Q) % 2  # 0: residual, 1: bonus
    cu = torch.arange(0, N + 1, S + 1)
    idx = torch.arange(Q)
    tokens = torch.zeros(Q, S, dtype=torch.int64)
    args = [t.to(device) for t in (target, draft, tokens, acc, cu, idx, temp, seed, pos)]
    out = resample(*args, use_fp64=True).cpu()
    assert_reference_draws(out, (target, draft, tokens, acc, cu, idx, temp, seed, pos), V, 1e-11, Q - 2)


@pytest.mark.parametrize("use_fp64", [False, True])
def test_nan_rows_return_an_in_range_id(device, use_fp64, small_blocks):
    small_blocks(block=4, splits=2)
    Q, S, V = 4, 1, 9
    target, draft, tokens, acc, cu, idx, temp, seed, pos = random_requests(device, Q, S, V, V, seed0=17)
    acc = torch.tensor([0, 1, 0, 0], device=device)
    target[cu[0]] = float("nan")  # a rejected row, all NaN
    target[cu[1] + 1] = float("nan")  # a bonus row, all NaN
    draft[idx[2], 0] = float("nan")  # a NaN draft: q undefined, no token with p > q
    target[cu[3]] = float("-inf")  # an all -inf rejected row
    out = small_blocks.resample(target, draft, tokens, acc, cu, idx, temp, seed, pos, use_fp64=use_fp64)
    assert out[0].item() == 0 and out[1].item() == 0 and out[3].item() == 0
    # The NaN draft falls back to p: the token gumbel_sample draws for that row.
    row = cu[2:3]
    assert out[2].item() == small_blocks.sample(target[row], idx[2:3], temp, seed, pos[row]).item()


@pytest.mark.parametrize("use_fp64, splits, exchange", [(False, 3, False), (False, 3, True), (False, 1, False),
                                                         (True, 1, False)])
def test_greedy_is_torch_argmax_with_nans_infs_and_ties(device, use_fp64, splits, exchange, small_blocks):
    from tests.kernels.test_gumbel_sample import _greedy_rows_with_nans

    small_blocks(block=16, splits=splits, exchange=exchange)
    V = 45
    rows = _greedy_rows_with_nans(V, torch.Generator().manual_seed(43))
    Q = rows.shape[0]
    S = 1
    target = torch.randn(Q * (S + 1), V, generator=torch.Generator().manual_seed(44))
    acc = torch.arange(Q) % (S + 1)  # rejected and bonus rows alike
    cu = torch.arange(0, Q * (S + 1) + 1, S + 1)
    target[cu[:-1] + acc] = rows
    draft = torch.randn(Q, S, V, generator=torch.Generator().manual_seed(45))
    idx = torch.arange(Q)
    temp = torch.zeros(Q)
    seed = torch.arange(Q, dtype=torch.int64)
    pos = torch.arange(Q * (S + 1))
    tokens = torch.zeros(Q, S, dtype=torch.int64)
    args = [t.to(device) for t in (target, draft, tokens, acc, cu, idx, temp, seed, pos)]
    out = small_blocks.resample(*args, use_fp64=use_fp64).cpu()
    assert torch.equal(out, rows.argmax(-1))
    args[1] = None  # one-hot drafts: greedy is the same argmax
    assert torch.equal(small_blocks.resample(*args, use_fp64=use_fp64).cpu(), rows.argmax(-1))


@pytest.mark.parametrize("use_fp64", [False, True])
def test_a_nan_in_a_rejected_row_draws_from_p_over_its_numbers(device, use_fp64, small_blocks):
    # A NaN makes the log-sum-exp, hence the residual, undefined: the row falls back to a draw
    # from p over its non-NaN entries with its own noise (gumbel_sample's draw of that row).
    small_blocks(block=4, splits=2)
    Q, S, V = 6, 1, 9
    target, draft, tokens, acc, cu, idx, temp, seed, pos = random_requests(device, Q, S, V, V, seed0=23)
    acc = torch.zeros(Q, dtype=torch.int64, device=device)
    rows = cu[:-1]
    target[rows[:3], 4] = float("nan")  # a NaN in the target row
    draft[idx[3:], 0, 6] = float("nan")  # a NaN in the draft row
    out = small_blocks.resample(target, draft, tokens, acc, cu, idx, temp, seed, pos, use_fp64=use_fp64)
    want = small_blocks.sample(target[rows], idx, temp, seed, pos[rows], use_fp64=use_fp64)
    assert torch.equal(out, want)
    assert not (out[:3] == 4).any()


# Rows whose verification noise holds two tokens more than 19.5 nats apart, found by a search over
# pos (seed 20261129, V = 32: about 1 row in 2 million). The test recomputes every gap from the
# documented noise construction (tests.kernels.reference.noise2), so the constants only pick rare
# rows; a wrong constant fails the gap assertion, not silently the test's meaning.
TAIL_SEED = 20261129
TAIL_POS = (960793, 5900695, 6450720, 7776709)
TAIL_V = 32


@pytest.mark.parametrize("use_fp64", [False, True])
@pytest.mark.parametrize("kind", ["residual", "one_hot", "bonus"])
def test_a_token_19_nats_below_wins_exactly_when_its_noise_says(device, kind, use_fp64, small_blocks):
    # The interpreter-sized twin of the GPU heavy-tail test: instead of drawing the tail's
    # aggregate rate it checks single draws that only the tail of the uniform decides. In each
    # row, token j (largest noise) sits d nats below token i (smallest noise) in the residual
    # (or in p); the draw is j when d = gap - 0.5 and i when d = gap + 0.5, gap = G_j - G_i >
    # 19.5 nats. A uniform of 24 bits caps the noise near 17.3 nats (j never wins) or rounds
    # 1 - v to 1 for the smallest hashes (infinite noise: j always wins); either fails.
    small_blocks(block=16, splits=2)
    V = TAIL_V
    cases = []
    for p in TAIL_POS:
        noise = noise2(TAIL_SEED, p, V)  # log2 units: -log2(E log2 e)
        j, i = int(noise.argmax()), int(noise.argmin())
        gap = float(noise[j] - noise[i]) * math.log(2)  # nats
        assert gap > 19.5, (p, gap)
        k = next(t for t in range(V) if t not in (i, j))
        cases += [(p, i, j, k, gap - 0.5, j), (p, i, j, k, gap + 0.5, i)]
    Q, S = len(cases), 1
    N = Q * (S + 1)
    target = torch.full((N, V), -math.inf, dtype=torch.float64)
    draft = torch.full((Q, S, V), -math.inf, dtype=torch.float64)
    tokens = torch.zeros(Q, S, dtype=torch.int64)
    acc = torch.full((Q,), S if kind == "bonus" else 0, dtype=torch.int64)
    pos = torch.arange(N, dtype=torch.int64)
    for r, (p, i, j, k, d, _) in enumerate(cases):
        row = r * (S + 1) + int(acc[r])
        pos[row] = p
        target[row, i], target[row, j] = 0.0, -d
        if kind == "residual":
            # q = p / 2 on i and j, the other half on k (where p = 0): the residual is p / 2 on
            # i and j, nothing on k.
            draft[r, 0, i], draft[r, 0, j], draft[r, 0, k] = 0.0, -d, math.log1p(math.exp(-d))
        elif kind == "one_hot":
            target[row, k] = 5.0  # the most likely token, rejected: only i and j remain
            tokens[r, 0] = k
    args = [target.float(), None if kind == "one_hot" else draft.float(), tokens, acc,
            torch.arange(0, N + 1, S + 1), torch.arange(Q), torch.ones(Q), torch.full((Q,), TAIL_SEED), pos]
    out = small_blocks.resample(*[a if a is None else a.to(device) for a in args], use_fp64=use_fp64).cpu()
    assert out.tolist() == [want for *_, want in cases]


@pytest.mark.parametrize("splits, exchange, form", [(1, False, 1), (3, False, 2), (3, True, 1), (3, True, 2)])
def test_float32_draws_are_the_float64_reference_draws_where_decided(device, splits, exchange, form, small_blocks):
    # The float32 path (both residual forms), one program per request and split, against the
    # float64 reference of the same noise, on rows whose two best keys are more than 1e-3 apart
    # in log2 units: far above float32's error (a few 1e-6 where 1 - q/p is not tiny) and below
    # typical gaps, so nearly every row is compared. Residual, bonus and greedy rows mixed
    # (accepted counts 0..S in turn).
    small_blocks(block=16, splits=splits, exchange=exchange, residual_form=form)
    Q, S, V, W, vd = 24, 2, 61, 64, 57
    args = random_requests(device, Q, S, V, W, seed0=31)
    out = small_blocks.resample(*args, draft_vocab_size=vd).cpu()
    assert_reference_draws(out, args, vd, 1e-3, Q - 2)


@pytest.mark.parametrize("splits, exchange", [(3, False), (3, True), (1, False)])
def test_rows_mostly_minus_infinity_draw_the_float64_reference(device, splits, exchange, small_blocks):
    # Sparse rows (about 85% of the target and draft logits -inf, so that whole blocks and whole
    # chunks of a row hold no finite logit): the running maximum starts at the most negative
    # finite float32, not -inf, and an empty block or chunk must add nothing to either
    # log-sum-exp (a chunk with no finite logit publishes (that start, 0)). Against the
    # float64 reference of the same noise, as the dense test above.
    small_blocks(block=4, splits=splits, exchange=exchange)
    Q, S, V, W, vd = 24, 2, 61, 64, 57
    target, draft, *rest = random_requests(device, Q, S, V, W, seed0=61)
    g = torch.Generator().manual_seed(62)
    target = target.masked_fill((torch.rand(target.shape, generator=g) < 0.85).to(device), -math.inf)
    draft = draft.masked_fill((torch.rand(draft.shape, generator=g) < 0.85).to(device), -math.inf)
    target[:, 0] = 0.0  # every row keeps one finite logit
    draft[:, :, 1] = 0.0
    args = (target, draft, *rest)
    out = small_blocks.resample(*args, draft_vocab_size=vd).cpu()
    assert_reference_draws(out, args, vd, 1e-3, Q - 4)


@pytest.mark.parametrize("exchange", [False, True])
def test_split_merge_scratch_is_at_rest_after_every_call(device, exchange, small_blocks):
    # The per-request merge words and counters of a split draw return to rest (INT64_MIN, 0) at
    # the end of each launch, so the next call (or a CUDA-graph replay) needs no fill launch;
    # the one-launch exchange path also resets its ticket dispenser (the word after the last
    # request's counter).
    small_blocks(block=4, splits=2, exchange=exchange)
    Q, S, V = 9, 2, 13
    args = random_requests(device, Q, S, V, V, seed0=37)
    first = small_blocks.resample(*args)
    assert torch.equal(first, small_blocks.resample(*args))
    _assert_scratch_at_rest(device, Q)


def _assert_scratch_at_rest(device, num_reqs):
    """Each request's merge word at INT64_MIN and its counter at 0, and the one-launch path's
    ticket dispenser (the counter word after the last request's) at 0."""
    from guarded_kernels._workspace import INT64_MIN, row_scratch

    best, best_s0, count, count_s0 = row_scratch(device, num_reqs + 1)
    assert (best[: num_reqs * best_s0 : best_s0] == INT64_MIN).all()
    assert (count[: (num_reqs + 1) * count_s0 : count_s0] == 0).all()


@pytest.mark.parametrize("form, unroll, race, stages, vd", [
    (1, 1, False, 1, 61),  # the log form, the log-sum-exp loop rolled
    (1, 2, False, 1, 37),  # unrolled by two; V_d ending inside a chunk
    (2, 1, False, 3, 61),  # p - q, Triton's pipelined log-sum-exp loop
    (2, 2, True, 1, 37),  # the race
    (2, 2, True, 5, 61),  # the race and the 5-deep pipelined loop (the 16-bit GPU launch)
    (2, 1, False, 1, None),  # one-hot drafts (no log-sum-exp)
])
def test_exchange_path_draws_the_two_launch_tokens(device, form, unroll, race, stages, vd, small_blocks):
    # The one-launch path (PHASE 4: chunks by ticket, partial log-sum-exps exchanged within the
    # launch) reads the same chunks, merges the same partial pairs and draws with the same keys
    # as the two launches at the same BLOCK and programs per request, so its tokens are the same
    # token for token, residual rows included (the reference-kernel tests compare those only
    # where float32 rounding cannot decide): residual (both forms), bonus, greedy and one-hot
    # rows. Chunks of 3 and 7 full blocks leave the unrolled loop an odd block to run alone. With
    # the race each lane picks its column by r / E and takes one logarithm (the same draw: only
    # columns within ~2**-19 of each other may order otherwise). The interpreter runs the exchange
    # with one program per request (it runs programs one after another), so there the reference
    # is the one-program launch; on a GPU three programs per request exchange (the threaded tests
    # below run several on the CPU).
    Q, S, V, W = 16, 2, 61, 64
    args = list(random_requests(device, Q, S, V, W, seed0=53))
    args[6][::7] = 0.0  # some greedy slots
    if vd is None:
        args[1] = None
    splits = 3 if device.type == "cuda" else 1
    small_blocks(block=8, splits=splits, residual_form=form)
    want = small_blocks.resample(*args, draft_vocab_size=vd)
    small_blocks(block=8, splits=3, exchange=True, residual_form=form, lse_unroll=unroll, race=race,
                 lse_stages=stages)
    assert torch.equal(small_blocks.resample(*args, draft_vocab_size=vd), want)
    assert want.unique().numel() > Q // 2  # varied tokens, not a constant


@pytest.mark.parametrize("path, form, vd", [
    ("two launches", 2, 37),  # V_d ending inside a block
    ("one program", 1, 61),  # V_d at the row's end
    ("exchange", 2, None),  # one-hot drafts
    ("exchange", 1, 37),
])
def test_draw_block_skip_draws_what_the_full_draw_draws(device, path, form, vd, small_blocks):
    # The draw's exact block skip (the plan's skip, _skip_draw_blocks) leaves out the noise, the
    # residual and the draft row of blocks whose bound (x * scale - lse_t + the noise's
    # leading-zero bound) cannot reach the chunk's best key: forced on and off, the tokens are the
    # same on every path, for residual rows of both forms, bonus and one-hot rows, greedy slots,
    # NaN and -inf entries, a peaked row whose winner comes first (every later block skipped),
    # and two bonus rows built so that a later block's winner lies within a quarter bit of its
    # bound (bound_probe_row: a bound lowered by a quarter bit fails this test).
    Q, S, V, W = 24, 2, 61, 64
    target, draft, tokens, acc, cu, idx, temp, seed, pos = random_requests(device, Q, S, V, W, seed0=97)
    temp[::11] = 0.0  # some greedy slots
    rows = (cu[:-1] + acc).cpu()
    target[rows[1], 2] = 40.0
    target[rows[2], ::5] = float("nan")
    target[rows[3], :30] = float("-inf")
    splits = {"two launches": 3, "one program": 1, "exchange": 3}[path]
    plan = resample_plan(Q, V, target.dtype, device, block=8, num_warps=4, num_splits=splits,
                         exchange=path == "exchange", residual_form=form)
    probes = {}
    for r in (5, 8):  # bonus rows (accepted == S)
        pos[rows[r]], row, probes[r] = bound_probe_row(device, int(seed[idx[r]]), V, 8, plan.chunk, target.dtype)
        target[rows[r]], temp[idx[r]] = row.to(device), 1.0
    drafts = None if vd is None else draft
    got = {}
    for skip in (True, False):
        small_blocks(block=8, splits=splits, exchange=path == "exchange", residual_form=form, skip=skip)
        got[skip] = small_blocks.resample(target, drafts, tokens, acc, cu, idx, temp, seed, pos, draft_vocab_size=vd)
    assert torch.equal(got[True], got[False]), (got[True] != got[False]).nonzero()
    assert got[True].unique().numel() > Q // 2
    assert got[True][1].item() == 2  # request 1's resampled row peaks at column 2
    assert [got[True][r].item() for r in probes] == list(probes.values())


def test_draw_block_skip_with_subnormal_residual_weights(device, small_blocks):
    # Rejected rows whose residual lies wholly where p < 2**-126: target and draft agree on token 0
    # (p = q = 1, no residual there), every other target logit is 148.0-148.4 bits below it and
    # the draft's is -inf. The p - q form's weight p is then subnormal, rounded on the CPU to
    # 2**-148, so log2(p - q) exceeds x * scale - lse_t by up to 0.4 bit, beyond block_key_bound's
    # margin: without resample._skip_draw_blocks' floor for such keys the skip drew other tokens
    # than the full draw (requests 0 and 8 here). On CUDA the fast log flushes the subnormal weights
    # (no residual mass: both draw from p).
    Q, V = 12, 64
    g = torch.Generator().manual_seed(1)
    target = torch.empty(2 * Q, V).uniform_(-102.868, -102.80, generator=g)
    target[:, 0] = 0.0
    draft = torch.full((Q, 1, V), float("-inf"))
    draft[:, :, 0] = 0.0
    seed = torch.randint(0, 2**62, (Q,), generator=g)
    pos = torch.randint(0, 2**40, (2 * Q,), generator=g)
    args = [t.to(device) for t in (target, draft, torch.zeros(Q, 1, dtype=torch.int64),
                                   torch.zeros(Q, dtype=torch.int64), torch.arange(0, 2 * Q + 1, 2),
                                   torch.arange(Q), torch.ones(Q), seed, pos)]
    got = {}
    for skip in (True, False):
        small_blocks(block=16, splits=1, residual_form=2, skip=skip)
        got[skip] = small_blocks.resample(*args)
    assert torch.equal(got[True], got[False]), (got[True] != got[False]).nonzero()
    if device.type == "cpu":
        assert (got[False] > 0).all() and got[False].unique().numel() > 6  # residual draws, varied


def test_draw_skip_policy():
    # The draw's block skip on a GPU for 16-bit logits on the two launches where a program walks
    # >= 32 blocks (from 4 x SMs requests); never for float32, the one launch, or the CPU.
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        for reqs, vocab in ((1024, 151_936), (1024, 262_144), (528, 262_144), (256, 151_936), (64, 262_144)):
            plan = resample_plan(reqs, vocab, dtype, H200)
            want = dtype != torch.float32 and reqs >= 528 and not plan.exchange and plan.chunk >= 32 * plan.block
            assert plan.skip == want, (dtype, reqs, vocab)
            assert plan.stages == (4 if want else 1)
            assert resample_plan(reqs, vocab, dtype, "cpu").skip is False
    assert resample_plan(1024, 151_936, torch.bfloat16, H200).skip


def test_one_launch_loop_policies():
    # The one launch's log-sum-exp loop unrolled by two on a GPU; its 16-bit pass pipelined five
    # deep and its 16-bit p - q draw as the race; nothing of it on the CPU or on the two launches.
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        plan = resample_plan(256, 151_936, dtype, H200)
        sixteen = dtype != torch.float32
        assert plan.exchange and plan.lse_unroll == 2 and plan.evict_draw == "evict_first"
        assert plan.lse_stages == (5 if sixteen else 1) and plan.race is sixteen and plan.residual_form == 2
        two = resample_plan(256, 151_936, dtype, H200, exchange=False)
        assert (two.lse_unroll, two.lse_stages, two.race, two.evict_draw) == (1, 1, False, "")
        cpu = resample_plan(256, 151_936, dtype, "cpu")
        assert not cpu.exchange and not cpu.race and cpu.lse_unroll == 1
    with pytest.raises(ValueError, match="race"):
        resample_plan(256, 151_936, torch.float32, H200, race=True, residual_form=1)


def test_exchange_policy_by_request_count_and_element_size():
    # The one launch from 64 requests on a GPU: float32 from 256 requests below V = 65,536
    # (chunks of 8,192 columns), 16-bit logits below 4 x SMs requests at V >= 65,536 (16,384).
    def splits(reqs, vocab, dtype, device=H200):
        plan = resample_plan(reqs, vocab, dtype, device)
        return plan.num_splits if plan.exchange else None

    assert splits(256, 151_936, torch.float32) == 19
    assert resample_plan(256, 151_936, torch.float32, H200).block == 1024
    assert splits(1024, 262_144, torch.float32) == 32
    assert splits(64, 262_144, torch.bfloat16) == 16
    assert splits(527, 151_936, torch.float16) == 10
    assert splits(528, 151_936, torch.bfloat16) is None
    assert splits(63, 151_936, torch.float32) is None
    assert splits(256, 151_936, torch.float32, "cpu") is None
    assert splits(256, 32_000, torch.float32) == 4
    assert splits(64, 32_000, torch.float32) is None
    assert splits(256, 32_000, torch.bfloat16) is None
    with pytest.raises(ValueError, match="use_fp64"):
        resample_plan(256, 151_936, torch.float32, H200, use_fp64=True, exchange=True)


@pytest.mark.gpu
@pytest.mark.parametrize("gpu", ["cuda"] if torch.cuda.is_available() else [])
@pytest.mark.parametrize("exchange", [False, True])
def test_split_requests_under_cuda_graph_replay(gpu, exchange):
    # Several programs per request (partial log-sum-exps, then the draw with its one-launch
    # merge), captured once and replayed with new noise positions: each replay must draw what an
    # eager call draws (the merge words reset by the launch itself); mixed residual, bonus and
    # greedy rows, V not a multiple of the block. Also through the one-launch exchange path,
    # whose ticket dispenser and counters must be back at rest after each replay.
    Q, S, V = 64, 3, 50_000
    args = list(random_requests(torch.device(gpu), Q, S, V, V + 8, seed0=43))
    knobs = dict(block=2048, num_warps=8, num_splits=7, evict_draw="evict_first") if exchange else {}
    plan = resample_plan(Q, V, args[0].dtype, args[0].device, exchange=exchange, **knobs)
    args[6][::5] = 0.0  # some greedy slots
    pos = args[8]
    static_pos = pos.clone()
    args[8] = static_pos
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        resample(*args, draft_vocab_size=V - 3, plan=plan)  # warm-up: compile, scratch
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        captured = resample(*args, draft_vocab_size=V - 3, plan=plan)
    for step in range(4):
        static_pos.copy_(pos + 1000 * step)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(captured, resample(*args, draft_vocab_size=V - 3, plan=plan)), step


@pytest.mark.gpu
@pytest.mark.parametrize("gpu", ["cuda"] if torch.cuda.is_available() else [])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_default_exchange_draws_the_two_launch_tokens_at_full_size(gpu, dtype):
    # The default one-launch path at a served size (256 requests of V = 151,936: 19 or 10
    # programs per request, thousands of tickets, programs waiting on each other across the
    # whole device) against the two launches over the same chunks: equal token for token, with
    # residual, bonus and greedy rows mixed.
    Q, S, V = 256, 2, 151_936
    args = list(random_requests(torch.device(gpu), Q, S, V, V, seed0=59))
    args[0], args[1] = args[0].to(dtype), args[1].to(dtype)
    args[6][::9] = 0.0
    cfg = resample_plan(Q, V, dtype, args[0].device)
    assert cfg.exchange and cfg.num_splits > 1
    got = resample(*args)
    want = resample(*args, plan=resample_plan(Q, V, dtype, args[0].device, exchange=False, block=cfg.block,
                                              num_warps=cfg.num_warps, num_splits=cfg.num_splits))
    assert torch.equal(got, want)
    assert want.unique().numel() > Q // 2


def test_launch_configuration_by_request_count():
    # On a 132-multiprocessor device: from 256 requests, programs per request fill whole waves
    # (two at 256 requests: 512 programs in 4 x 132 slots, where three made 1.45 waves); float32
    # from 4 x 132 requests at 1024 / 4 warps; below 256 about four programs per multiprocessor.
    def cfg(reqs, vocab, dtype):
        plan = resample_plan(reqs, vocab, dtype, H200, exchange=False)
        return plan.block, plan.num_warps, plan.num_splits

    assert cfg(256, 151_936, torch.float32) == (2048, 8, 2)
    assert cfg(1024, 262_144, torch.float32) == (1024, 4, 1)
    assert cfg(1024, 151_936, torch.bfloat16) == (2048, 8, 1)
    assert cfg(256, 262_144, torch.bfloat16) == (2048, 8, 2)
    assert cfg(8, 262_144, torch.float32) == (1024, 4, 64)  # 66 asked: 64 chunks of 4 blocks
    assert cfg(8, 262_144, torch.bfloat16) == (4096, 8, 64)


def test_residual_form_by_element_size_and_request_count():
    # p - q (half the instructions) where resampling is bound by issue (16-bit logits) and where
    # float32's launch from 256 requests needs its registers; the log form for float32 below.
    assert resample_plan(8, 1000, torch.bfloat16, H200).residual_form == 2
    assert resample_plan(1024, 1000, torch.float16, H200).residual_form == 2
    assert resample_plan(64, 1000, torch.float32, H200).residual_form == 1
    assert resample_plan(256, 1000, torch.float32, H200).residual_form == 2


# The one-launch exchange path with several programs per request, on the CPU: the interpreter
# runs a launch's programs one after another (a program waiting for a later one would wait
# forever), so here each program is a one-program launch of the same arguments on a thread of
# its own. PHASE 4 takes its request and chunk from the ticket, not the program id, so these
# launches are the programs of one launch, in whatever order the threads reach the dispenser.
# The interpreter's atomics are serialised by a lock; Python's thread switches interleave the
# programs between and inside their exchanges.
_INTERPRETED = not torch.cuda.is_available()


def _exchange_in_threads(call_args, vd, block, splits, workers, evict=""):
    """Tokens of resample's PHASE 4 launch with ``splits`` programs per request run as
    ``workers`` threads (at most ``workers`` programs resident at once), and the programs per
    request. Fails if the threads do not all finish (a deadlock) or one raises."""
    import threading
    import time

    import triton
    from triton.runtime import interpreter

    launches = []

    class Capture:
        def __getitem__(self, grid):
            return lambda *args, **meta: launches.append((grid, args, meta))

    target = call_args[0]
    plan = resample_plan(call_args[3].shape[0], target.shape[1], target.dtype, target.device, exchange=True,
                         block=block, num_warps=4, num_splits=splits, evict_draw=evict)
    launcher, = resample_mod._launchers(plan, call_args[1] is not None)
    real, launcher.fn = launcher.fn, Capture()
    try:
        resample(*call_args, draft_vocab_size=vd, plan=plan)
    finally:
        launcher.fn = real
    (grid, args, meta), = launches
    assert meta["PHASE"] == 4
    num_reqs, V = grid[0], call_args[0].shape[1]
    # The launcher's chunks for `splits` programs (it forces one on the CPU).
    chunk, num_splits = chunk_layout(V, splits, block)
    args = list(args)
    kernel = resample_mod._resample_kernel
    at = {name: i for i, name in enumerate(kernel.arg_names)}
    args[at["stats_ptr"]] = torch.empty((num_reqs, num_splits, 4), dtype=torch.float32)
    out = args[at["out_ptr"]] = torch.full((num_reqs,), -1, dtype=torch.int64)
    args[at["chunk_size"]], args[at["num_splits"]] = chunk, num_splits
    meta = dict(meta, SPLITS_P2=triton.next_power_of_2(num_splits))
    pending = list(range(num_reqs * num_splits))
    lock, errors = threading.Lock(), []

    def resident():
        while True:
            with lock:
                if not pending:
                    return
                pending.pop()
            try:
                kernel[(1, 1)](*args, **meta)
            except BaseException as e:  # noqa: BLE001 - reported by the test
                errors.append(e)
                return

    # One patch of the language for all threads: each launch patches and restores it, and a
    # restore by a launch that ends first must not unpatch one still running.
    scope = interpreter._patch_lang(kernel.fn)
    try:
        threads = [threading.Thread(target=resident, daemon=True) for _ in range(workers)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 300
        for t in threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        assert not any(t.is_alive() for t in threads), "programs still waiting: deadlock"
    finally:
        scope.restore()
    assert not errors, errors
    return out, num_splits


@pytest.mark.skipif(not _INTERPRETED, reason="interpreter programs as threads; a GPU runs them concurrently "
                    "(test_default_exchange_draws_the_two_launch_tokens_at_full_size)")
@pytest.mark.parametrize("splits, vd, evict, workers", [
    (3, 37, "evict_first", 3),  # V_d inside chunk 1 of [0, 24) [24, 48) [48, 61): chunk 2 beyond it
    (3, 24, "evict_last", 3),  # V_d at a chunk boundary
    (2, 5, "", 2),  # V_d inside the first block; chunk 1 wholly beyond V_d
    (3, 61, "evict_first", 24),  # V_d = V (W = 64 wider); every program resident at once
    (8, 45, "", 8),  # one block a chunk, the last chunk a partial block
])
def test_exchange_across_programs_draws_the_two_launch_tokens(device, splits, vd, evict, workers,
                                                             small_blocks):
    # Several programs per request exchanging their partial log-sum-exps for real: chunks by
    # ticket, each program waits for its request's pairs, merges them and draws from its own
    # chunk; residual rows counted twice (the merge count reaches 2 * splits - 1), bonus and
    # greedy rows once, mixed in one batch. With as many resident programs as programs per
    # request (the deadlock argument's minimum) the launch must finish; its tokens must be the
    # two launches' at the same chunks, token for token, and the merge words, counters and ticket
    # dispenser back at rest, so that a second launch (a CUDA-graph replay) draws the same.
    Q, S, V, W = 8, 2, 61, 64
    args = list(random_requests(device, Q, S, V, W, seed0=71))
    args[6][::4] = 0.0  # greedy slots
    small_blocks(block=8, splits=splits)
    want = small_blocks.resample(*args, draft_vocab_size=vd)
    got, num_splits = _exchange_in_threads(args, vd, 8, splits, workers, evict)
    assert num_splits == splits
    assert torch.equal(got, want), (got, want)
    assert want.unique().numel() >= Q // 2  # varied tokens, not a constant
    _assert_scratch_at_rest(device, Q)
    again, _ = _exchange_in_threads(args, vd, 8, splits, workers, evict)
    assert torch.equal(again, want)
    _assert_scratch_at_rest(device, Q)


@pytest.mark.skipif(not _INTERPRETED, reason="interpreter programs as threads")
def test_exchange_across_programs_with_empty_chunks_draws_the_float64_reference(device):
    # Chunks with no finite logit publish (the most negative finite float32, 0) and must add
    # nothing to the merged log-sum-exp: target rows -inf over all of chunk 2 ([48, 61)), draft
    # rows over chunk 0 ([0, 24)), ~60% -inf elsewhere; in chunk 1 q is a sharper copy of p,
    # so that the residual draws differ from p's. Against the float64 reference of the same noise.
    Q, S, V, W, vd = 12, 2, 61, 64, 53
    target, draft, *rest = random_requests(device, Q, S, V, W, seed0=73)
    g = torch.Generator().manual_seed(74)
    target = target.masked_fill(torch.rand(target.shape, generator=g) < 0.6, -math.inf)
    draft = draft.masked_fill(torch.rand(draft.shape, generator=g) < 0.6, -math.inf)
    _, acc, cu, idx, temp, seed, pos = rest
    rows = cu[:-1] + acc
    # q a sharper copy of p over chunk 1, so that the residual takes mass from p's likely tokens.
    draft[idx, acc.clamp(max=S - 1), 24:48] = target[rows, 24:48] * 1.5
    target[:, 48:] = -math.inf
    draft[:, :, :24] = -math.inf
    target[:, 0] = draft[:, :, 30] = 0.0  # every row keeps a finite logit
    args = (target, draft, *rest)
    out, num_splits = _exchange_in_threads(args, vd, 8, 3, 3)
    assert num_splits == 3
    assert_reference_draws(out, args, vd, 1e-3, Q - 2)
    # Power: some of these draws are not p's (a lost log-sum-exp falls back to p).
    from_p = gumbel_sample(target[rows], idx, temp, seed, pos[rows])
    assert (out != from_p).sum() >= 1, (out, from_p)


@pytest.mark.parametrize("path", ["two launches", "exchange", "exchange in threads"])
def test_extreme_logits_and_temperatures_on_every_float32_path(device, path, small_blocks):
    # Where the float32 log-sum-exp meets its edges: a +inf target logit (p a point mass there;
    # the log-sum-exp is NaN and every path must still return that column: the residual's
    # fallback to p, the bonus draw and greedy alike), logits of -3e38 (scaled past the most
    # negative float32 to -inf: probability 0, as their exact p ~ 2**-4e38), and a temperature
    # of 1e-20 (logits scaled to ~1e20: p and q one-hot in float32, so every row's token is its
    # target argmax, through the residual where q's argmax differs and the p == q fallback
    # where it does not).
    if path == "exchange in threads" and not _INTERPRETED:
        pytest.skip("interpreter programs as threads")
    Q, S, V, W, vd = 12, 2, 61, 64, 57
    target, draft, tokens, acc, cu, idx, temp, seed, pos = random_requests(device, Q, S, V, W, seed0=79)
    rows = (cu[:-1] + acc).cpu()
    inf_col = torch.tensor([3, 30, 59, 47, 0, 60, 25, 8, 52, 33, 17, 41])
    target[rows[:6], inf_col[:6]] = math.inf  # requests 0-5: one +inf in the resampled row
    target[rows[6:], ::3] = -3e38  # requests 6-11: every third logit -3e38
    temp[idx[6:9]] = 1e-20
    temp[idx[9]] = 0.0
    args = (target, draft, tokens, acc, cu, idx, temp, seed, pos)
    if path == "exchange in threads":
        out, _ = _exchange_in_threads(args, vd, 8, 3, 3)
    else:
        small_blocks(block=8, splits=3, exchange=path == "exchange")
        out = small_blocks.resample(*args, draft_vocab_size=vd)
    out = out.cpu()
    assert torch.equal(out[:6], inf_col[:6])
    assert torch.equal(out[6:10], target[rows[6:10]].argmax(-1).cpu())
    assert (out[6:] % 3 != 0).all()  # never a -3e38 column
    # Requests 10 and 11 (temperature 0.6 / 1.0 over the finite logits): the float64 reference.
    keep = [r for r in range(10, 12) if decided_argmax(reference_keys(*args, r, vd), 1e-3) is not None]
    for r in keep:
        assert out[r].item() == decided_argmax(reference_keys(*args, r, vd), 1e-3), r
    assert len(keep) == 2


@pytest.mark.skipif(not _INTERPRETED, reason="interpreter programs as threads")
def test_exchange_across_programs_greedy_is_torch_argmax_and_one_hot_the_two_launch_tokens(device, small_blocks):
    # Requests that never exchange (greedy, bonus and one-hot rows: counted once, not twice)
    # through the ticketed launch with three programs per request: greedy rows with NaN, +inf
    # and ties across chunks are torch.argmax; one-hot drafts (the rejected token removed) draw
    # the two launches' tokens at the same chunks.
    from tests.kernels.test_gumbel_sample import _greedy_rows_with_nans

    V, S = 45, 1
    rows = _greedy_rows_with_nans(V, torch.Generator().manual_seed(43))
    Q = rows.shape[0]
    target = torch.randn(Q * (S + 1), V, generator=torch.Generator().manual_seed(44))
    acc = torch.arange(Q) % (S + 1)
    cu = torch.arange(0, Q * (S + 1) + 1, S + 1)
    target[cu[:-1] + acc] = rows
    draft = torch.randn(Q, S, V, generator=torch.Generator().manual_seed(45))
    tokens = torch.randint(0, V, (Q, S), generator=torch.Generator().manual_seed(46))
    args = [target, draft, tokens, acc, cu, torch.arange(Q), torch.zeros(Q), torch.arange(Q, dtype=torch.int64),
            torch.arange(Q * (S + 1))]
    out, num_splits = _exchange_in_threads(args, None, 16, 3, 3)
    assert num_splits == 3
    assert torch.equal(out, rows.argmax(-1))
    _assert_scratch_at_rest(device, Q)
    # One-hot drafts, sampled: the rejected token is never drawn, and the tokens are the two
    # launches'.
    args[0] = torch.randn(Q * (S + 1), V, generator=torch.Generator().manual_seed(47))
    args[1], args[6] = None, torch.tensor([0.7, 1.0, 1.6]).repeat(Q)[:Q]
    out, _ = _exchange_in_threads(args, None, 16, 3, 3)
    small_blocks(block=16, splits=3)
    want = small_blocks.resample(*args)
    assert torch.equal(out, want)
    rejected = acc < S
    assert not (out[rejected] == tokens[rejected, 0]).any()
    assert want.unique().numel() >= Q // 2
    _assert_scratch_at_rest(device, Q)


@triton.jit
def _lse2_probe_kernel(x_ptr, out_ptr, n, start, end, scale, BLOCK: tl.constexpr, UNROLL: tl.constexpr,
                       STAGES: tl.constexpr):
    # One row per program: _chunk_lse2 over [start, end).
    row_ptr = x_ptr + tl.program_id(0).to(tl.int64) * n
    m, s = resample_mod._chunk_lse2(row_ptr, start, end, scale, BLOCK, "", UNROLL, STAGES)
    tl.store(out_ptr + tl.program_id(0), m + tl.log2(s))


@pytest.mark.parametrize("block", [2, 8, 16])
@pytest.mark.parametrize("unroll, stages", [(1, 1), (2, 1), (1, 3)], ids=["rolled", "unrolled", "pipelined"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_row_log_sum_exp_is_the_float64_log_sum_exp(device, dtype, unroll, stages, block):
    # _lse2_rows: a row of 16 bytes' maximum first, one rescale per row. Against float64
    # log2-sum-exp2 of x * scale over [start, end): the prefetching loop rolled and unrolled by two
    # and Triton's pipelined loop; a block narrower than 16 bytes (2 elements), one of 16 bytes
    # and wider; a chunk ending inside a block (the masked tail), one of odd full blocks (the
    # unrolled loop's lone block), an empty one; scales of 0.05-3; rows of -inf only (log-sum-exp
    # -inf) and rows with one finite logit among -inf. Tolerance 2e-6 relative + 1e-5 absolute:
    # float32 sums of <= 61 terms in another order.
    g = torch.Generator().manual_seed(97)
    R, n = 6, 61
    x = (torch.randn(R, n, generator=g) * 6).to(dtype)
    x[1] = -math.inf
    x[2] = -math.inf
    x[2, 33] = 1.5
    x[3, ::3] = -math.inf
    xd = x.to(device)
    for start, end, scale in ((0, n, 1.4426950408889634), (5, 44, 0.05), (16, 17, 3.0), (24, 24, 1.0)):
        ref = torch.logsumexp(x[:, start:end].double() * scale * math.log(2), -1) / math.log(2)
        out = torch.empty(R, dtype=torch.float32, device=device)
        _lse2_probe_kernel[(R,)](xd, out, n, start, end, scale, BLOCK=block, UNROLL=unroll, STAGES=stages)
        got = out.cpu().double()
        finite = torch.isfinite(ref)
        assert torch.equal(torch.isfinite(got), finite) and (got[~finite] == -math.inf).all(), (start, end)
        err = (got[finite] - ref[finite]).abs()
        assert (err <= 1e-5 + 2e-6 * ref[finite].abs()).all(), (start, end, scale, err.max())


@pytest.mark.parametrize("x1", [-84.0, -86.0, -87.0])
def test_race_keeps_a_residual_near_the_float32_underflow(device, x1, small_blocks):
    # The race draw's lane weight w = r / E is subnormal when r < E * 2**-126 (E up to 24): a row
    # whose whole residual is one token with p = e**x1 ~ 2**-121 .. 2**-125.5 (normal; the draft
    # has none of it) must draw that token in every request, as the log keys do. A flushing log2
    # of w (lg2.approx.ftz) made it -inf at random: 151 of 256 requests at x1 = -87 on an H200.
    # 16-bit logits on the one launch with the race forced on (the shipped GPU path), two chunks.
    # 16 requests: a flushing logarithm that drops the weight in 151 of 256 passes all 16 with
    # probability 7e-7.
    Q, V = 16, 64
    target = torch.full((2 * Q, V), -math.inf)
    target[:, 0] = 0.0
    target[:, 1] = x1
    draft = torch.full((Q, 1, V), -math.inf)
    draft[:, :, 0] = 0.0
    g = torch.Generator().manual_seed(5)
    args = [z.to(device) for z in (target.bfloat16(), draft.bfloat16(), torch.zeros(Q, 1, dtype=torch.int64),
                                   torch.zeros(Q, dtype=torch.int64), torch.arange(0, 2 * Q + 1, 2), torch.arange(Q),
                                   torch.ones(Q), torch.randint(0, 2**62, (Q,), generator=g),
                                   torch.randint(0, 2**40, (2 * Q,), generator=g))]
    for race in (False, True):
        small_blocks(block=16, splits=2, exchange=True, residual_form=2, race=race)
        out = small_blocks.resample(*args)
        assert (out == 1).all(), (race, int((out == 1).sum()))
