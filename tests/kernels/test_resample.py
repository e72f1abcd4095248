"""guarded_kernels.resample: residual, one-hot and bonus draws; greedy; layouts."""

import numpy as np
import pytest
import torch

from guarded_kernels import gumbel_sample, resample
from stridecheck.testing import assert_layout_invariant
from tests.kernels.chisquare import chi2_pvalue

ALPHA = 1e-6  # as in test_gumbel_sample: fixed seeds, deterministic verdicts, large margins

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


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_residual_distribution(device, temperature, small_blocks):
    small_blocks(block=16, splits=1)
    Q = 600 if device.type == "cpu" else 100_000
    args = _batch(device, Q, temperature=temperature)
    out = resample(*args).cpu().numpy()
    p, q, r = _residual(temperature)
    # Never a token with p <= q.
    assert not np.isin(out, torch.nonzero(p <= q).flatten().numpy()).any()
    stat, pv, dof = chi2_pvalue(np.bincount(out, minlength=7), r.numpy())
    assert pv > ALPHA, (stat, dof, pv)
    # Power: judged against p itself (the residual ignored), the draws fail.
    _, pv_wrong, _ = chi2_pvalue(np.bincount(out, minlength=7), p.numpy())
    assert pv_wrong < ALPHA


def test_residual_with_a_wider_draft_cache_and_smaller_draft_vocab(device, small_blocks):
    # W exceeds V_d (the founding bug's cache); columns beyond V_d hold 7.0, which must be ignored.
    small_blocks(block=4, splits=2)
    Q = 300 if device.type == "cpu" else 100_000
    args = _batch(device, Q, width_pad=3)
    out = resample(*args, draft_vocab_size=5).cpu().numpy()
    p, q, r = _residual(vd=5)
    assert not np.isin(out, torch.nonzero(p <= q).flatten().numpy()).any()
    _, pv, _ = chi2_pvalue(np.bincount(out, minlength=7), r.numpy())
    assert pv > ALPHA


def test_split_and_single_program_paths_agree(device, small_blocks):
    args = _batch(device, 40)
    small_blocks(block=4, splits=2)
    a = resample(*args)
    small_blocks(block=16, splits=1)
    assert torch.equal(a, resample(*args))


def test_one_hot_drafts_remove_the_rejected_token(device, small_blocks):
    small_blocks(block=16, splits=1)
    Q = 500 if device.type == "cpu" else 100_000
    target, draft, tokens, acc, cu, idx, temp, seed, pos = _batch(device, Q)
    tokens[:, 0] = 2  # the most likely token, rejected
    out = resample(target, None, tokens, acc, cu, idx, temp, seed, pos).cpu().numpy()
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
    out = resample(target, draft, tokens, acc, cu, idx, temp, seed, pos)
    rows = cu[:-1] + S
    # The verification stream keyed by (seed, pos of that row): gumbel_sample's draw of that row.
    same = gumbel_sample(target[rows], idx, temp, seed, pos[rows])
    assert torch.equal(out, same)


def test_greedy_is_the_target_argmax_of_the_resampled_row(device, small_blocks):
    small_blocks(block=4, splits=2)
    Q, S = 6, 3
    target, draft, tokens, acc, cu, idx, temp, seed, pos = _batch(device, Q, S=S, temperature=0.0)
    g = torch.Generator().manual_seed(6)
    target = torch.randn(Q * (S + 1), 7, generator=g).to(device)
    target[1 * (S + 1) + 1, 3] = target[1 * (S + 1) + 1, 5] = 9.0  # tie: 3 wins
    acc = torch.tensor([0, 1, 2, 3, 0, 1], device=device)
    out = resample(target, draft, tokens, acc, cu, idx, temp, seed, pos)
    assert torch.equal(out, target[cu[:-1] + acc].argmax(-1))
    assert out[1].item() == 3
    assert torch.equal(out, resample(target, None, tokens, acc, cu, idx, temp, seed, pos))


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
