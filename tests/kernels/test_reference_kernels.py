"""The one-page reference kernels as oracles of the tuned ones: the same tokens, bit for bit, on
random inputs, for every launch plan the tests' small sizes can build.

The noise is keyed by (seed, pos, token), not by program or block, and the tuned kernels compute
each key by the same expression as the references, so the argmax can only differ on keys equal to
the last bit (the tuned lane-maximum path then picks the lowest lane, not the lowest column:
about one draw in a million at V = 200,000, none at these sizes) and, for residual rows, where
the float32 log-sum-exps, summed in another order, reorder two keys within rounding: those rows
are compared where the float64 keys of the same noise are decided by more than 1e-4 (log2
units), two orders of magnitude above float32's error in them.
"""

import pytest
import torch

from guarded_kernels import resample, resample_plan
from guarded_kernels.resample_reference import resample_reference
from guarded_kernels.sample_reference import gumbel_sample_reference
from stridecheck import StrideGuardError
from tests.kernels.reference import decided_argmax, random_requests, reference_keys

# The tuned sampler's paths at the tests' sizes: one program per row, the cross-program merge
# (atomic word or per-program slots), lane maxima with and without the exact block skip, the
# preloaded first blocks (0, 1, 2).
SAMPLE_PLANS = {
    "one program, float32": (torch.float32, dict(block=32, splits=1)),
    "atomic merge, bfloat16": (torch.bfloat16, dict(block=16, splits=3, merge_slots=False)),
    "slot merge, float32": (torch.float32, dict(block=8, splits=5, merge_slots=True)),
    "lane max, bfloat16": (torch.bfloat16, dict(block=8, splits=2, lane_max=True, skip=False, early=0)),
    "block skip, float32": (torch.float32, dict(block=8, splits=2, lane_max=True, skip=True, early=1)),
    "block skip, bfloat16": (torch.bfloat16, dict(block=8, splits=2, lane_max=True, skip=True, early=2)),
    "two preloaded, float16": (torch.float16, dict(block=16, splits=4, lane_max=False, early=2)),
}


def _sample_inputs(device, T, V, dtype, seed0):
    """Random logits with the edge rows: NaN entries, an all -inf row, a +inf entry, greedy rows
    (one with a NaN, one with a tie) and a padding row."""
    g = torch.Generator().manual_seed(seed0)
    logits = (torch.randn(T, V, generator=g) * 3).to(dtype)
    logits[0, ::4] = float("nan")
    logits[1] = float("-inf")
    logits[2, V - 3] = float("inf")
    logits[3, [5, V - 2]] = logits[3].max() + 1  # a greedy tie across programs: 5 wins
    logits[4, 7] = float("nan")
    idx = torch.randperm(T, generator=g)
    idx[T - 1] = -1  # padding
    temp = torch.tensor([0.7, 1.0, 1.6, 0.4], dtype=torch.float32).repeat(T)[:T]
    temp[idx[3]] = temp[idx[4]] = temp[idx[5]] = 0.0  # greedy
    seed = torch.randint(0, 2**62, (T,), generator=g)
    pos = torch.randint(0, 2**40, (T,), generator=g)
    return [t.to(device) for t in (logits, idx, temp, seed, pos)]


@pytest.mark.parametrize("plan", list(SAMPLE_PLANS))
def test_gumbel_sample_draws_the_reference_tokens(device, plan, small_blocks):
    dtype, knobs = SAMPLE_PLANS[plan]
    small_blocks(**knobs)
    T, V = 10, 90
    args = _sample_inputs(device, T, V, dtype, seed0=len(plan))
    want = gumbel_sample_reference(*args)
    assert torch.equal(small_blocks.sample(*args), want)
    assert want.unique().numel() >= T - 3  # varied tokens: the comparison has power
    logits = args[0].cpu().float()
    assert want[3].item() == 5 and want[4].item() == 7  # greedy: torch.argmax's tie and NaN rules
    assert torch.equal(want[3:6].cpu(), logits[3:6].argmax(-1))
    assert want[1].item() == 0 and want[2].item() == V - 3 and want[T - 1].item() == 0
    assert not logits[0, want[0].item()].isnan()


@pytest.mark.parametrize("options", [dict(is_drafting=True), dict(apply_temperature=False)],
                         ids=["drafting", "no temperature"])
def test_gumbel_sample_options_draw_the_reference_tokens(device, options, small_blocks):
    small_blocks(block=16, splits=2)
    args = _sample_inputs(device, 8, 50, torch.float32, seed0=7)
    args[2] = torch.where(args[2] == 0, 0.0, 5.0)  # a temperature whose omission changes draws
    want = gumbel_sample_reference(*args, **options)
    assert torch.equal(small_blocks.sample(*args, **options), want)
    assert not torch.equal(want, gumbel_sample_reference(*args))  # the option changes draws


# The tuned resampler's paths: one program per request (PHASE 2), the two launches (PHASE 0 and
# 1) in both residual forms and with the draw's block skip, and the one launch (PHASE 4; on the
# CPU with one program per request) with its loop variants (its log form: the exchange tests of
# test_resample.py, token for token against the two launches).
RESAMPLE_PLANS = {
    "one program": dict(block=16, splits=1),
    "two launches, log form": dict(block=8, splits=3, residual_form=1),
    "two launches, p - q, skip": dict(block=8, splits=3, residual_form=2, skip=True),
    "one launch, race": dict(block=8, splits=1, exchange=True, residual_form=2, race=True, lse_unroll=2),
    "one launch, pipelined": dict(block=8, splits=1, exchange=True, residual_form=2, lse_stages=3, skip=True),
}


def _resample_inputs(device, Q, S, V, W, seed0):
    """random_requests with greedy slots (one with a NaN), a rejected row whose draft equals the
    target (no residual mass: the fallback to p) and one with a NaN. Draft vocabulary 53 or more."""
    args = list(random_requests(device, Q, S, V, W, seed0))
    target, draft, tokens, acc, cu, idx, temp, seed, pos = args
    rows = cu[:-1] + acc
    temp[idx[::5]] = 0.0  # greedy
    target[rows[5], 3] = float("nan")  # greedy, a NaN: 3
    acc[1] = acc[2] = 0
    rows = cu[:-1] + acc
    # p == q: the draft row equals the target row, which has no mass beyond the draft vocabulary.
    target[rows[1], 53:] = float("-inf")
    draft[idx[1], 0, :V] = target[rows[1]]
    target[rows[2], 9] = float("nan")  # the log-sum-exp undefined: a draw from p
    return args


@pytest.mark.parametrize("one_hot", [False, True], ids=["draft logits", "one-hot"])
@pytest.mark.parametrize("plan", list(RESAMPLE_PLANS), ids=list(RESAMPLE_PLANS))
def test_resample_draws_the_reference_tokens(device, plan, one_hot, small_blocks):
    small_blocks(**RESAMPLE_PLANS[plan])
    Q, S, V, W, vd = 15, 2, 61, 64, 53
    args = _resample_inputs(device, Q, S, V, W, seed0=3 + len(plan))
    vd = None if one_hot else vd
    if one_hot:
        args[1] = None
    got = small_blocks.resample(*args, draft_vocab_size=vd).cpu()
    want = resample_reference(*args, draft_vocab_size=vd).cpu()
    target, draft, tokens, acc, cu, idx, temp, seed, pos = args
    residual = (acc < S).cpu() & (temp[idx] != 0).cpu() & (not one_hot)
    exact = ~residual
    exact[1] = exact[2] = True  # the fallbacks to p are bit-exact draws too
    assert torch.equal(got[exact], want[exact]), (exact.nonzero().flatten(), got, want)
    compared = 0
    for r in residual.nonzero().flatten().tolist():
        if r in (1, 2):
            continue
        if decided_argmax(reference_keys(*args, r, vd or V), 1e-4) is not None:
            compared += 1
            assert got[r].item() == want[r].item(), r
    assert compared >= (0 if one_hot else 4), compared
    assert want.unique().numel() >= Q // 2
    greedy = (temp[idx] == 0).cpu()
    rows = (cu[:-1] + acc).cpu()
    assert torch.equal(want[greedy], target[rows[greedy]].cpu().argmax(-1))  # torch.argmax, NaN rule too
    assert greedy.sum() == 3 and want[5].item() == 3


def test_references_are_guarded(device):
    # The same contract as the tuned kernels: a layout the kernel cannot address is refused.
    logits = torch.randn(3, 16, device=device)
    t = [torch.arange(3, device=device), torch.ones(3, device=device), torch.arange(3, device=device),
         torch.arange(3, device=device)]
    with pytest.raises(StrideGuardError):
        gumbel_sample_reference(logits.t().contiguous().t(), *t)
    with pytest.raises(StrideGuardError):
        gumbel_sample_reference(logits, t[0], t[1], t[2], t[3][:2])
    args = list(random_requests(device, 2, 1, 7, 5, seed0=1))
    with pytest.raises(StrideGuardError):
        resample_reference(*args, draft_vocab_size=7)  # draft rows narrower than V_d
    with pytest.raises(ValueError, match="cu_num_logits"):
        resample_reference(args[0], args[1], *args[2:4], args[4][:-1], *args[5:])


def test_the_default_plan_draws_the_reference_tokens(device):
    # No plan given: the launch the package chooses for this device.
    args = _sample_inputs(device, 6, 300, torch.float32, seed0=11)
    from guarded_kernels import gumbel_sample

    assert torch.equal(gumbel_sample(*args), gumbel_sample_reference(*args))
    rargs = _resample_inputs(device, 12, 1, 40, 40, seed0=12)
    plan = resample_plan(12, 40, torch.float32, device)
    got, want = resample(*rargs, plan=plan), resample_reference(*rargs)
    exact = (rargs[3] == 1) | (rargs[6][rargs[5]] == 0)  # bonus and greedy rows
    assert torch.equal(got[exact], want[exact])
