"""guarded_kernels.gumbel_sample: the logits cache, the distribution, and the edge cases."""


import numpy as np
import pytest
import torch

from guarded_kernels import Gpu, gumbel_sample, sample_plan
from stridecheck import StrideGuardError
from stridecheck.testing import assert_layout_invariant
from tests.kernels.chisquare import chi2_pvalue
from tests.kernels.reference import bound_probe_row, decided_argmax, near_tied_logits, noise2, scale64

# Fixed seeds make each statistical verdict deterministic. alpha = 1e-6: a correct sampler with
# another hash would fail one such test with probability 1e-6, while the faults they exist for
# (a wrong temperature, a shifted token id, a biased or truncated uniform) push the statistic
# many orders of magnitude past the threshold at these sample sizes.
ALPHA = 1e-6


def _inputs(device, T, V, dtype=torch.float32, temperature=1.0, seed0=0):
    g = torch.Generator().manual_seed(seed0)
    logits = (torch.randn(T, V, generator=g) * 3).to(dtype).to(device)
    idx = torch.arange(T, dtype=torch.int32, device=device)
    temp = torch.full((T,), temperature, dtype=torch.float32, device=device)
    seed = torch.arange(T, dtype=torch.int64, device=device) * 1000 + 17
    pos = torch.arange(T, dtype=torch.int64, device=device) + 5
    return logits, idx, temp, seed, pos


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("per_row_col", [False, True])
def test_cache_is_bit_exact_and_touches_nothing_else(device, dtype, per_row_col, small_blocks):
    small_blocks(block=32, splits=3)
    T, V, R, S = 5, 77, 7, 3
    logits, idx, temp, seed, pos = _inputs(device, T, V, dtype)
    temp = torch.ones(R, device=device)
    seed = torch.arange(R, device=device) + 3
    logits[1, 3] = float("inf")
    logits[2, 4] = float("-inf")
    idx = torch.tensor([4, 0, 6, 2, 5], dtype=torch.int64, device=device)
    cache = torch.zeros(R, S, V + 5, dtype=dtype, device=device)
    col = torch.tensor([2, 0, 1, 2, 1], device=device) if per_row_col else torch.tensor(1, device=device)
    small_blocks.sample(logits, idx, temp, seed, pos, logits_cache=cache, logits_cache_col=col)
    expected = torch.zeros_like(cache)
    cols = col.expand(T) if not per_row_col else col
    for t in range(T):
        expected[idx[t], cols[t], :V] = logits[t]
    # Bit-exact: compare the raw bits, not the values (inf, -inf, signed zeros).
    assert torch.equal(cache.view(torch.int16 if dtype != torch.float32 else torch.int32),
                       expected.view(torch.int16 if dtype != torch.float32 else torch.int32))


def test_cache_source_and_float32_cache_of_bf16(device):
    T, V = 3, 50
    logits, idx, temp, seed, pos = _inputs(device, T, V, torch.bfloat16)
    source = torch.randn(T, V, device=device).to(torch.bfloat16)
    cache = torch.zeros(T, 2, V, dtype=torch.float32, device=device)
    gumbel_sample(logits, idx, temp, seed, pos, logits_cache=cache, logits_cache_col=torch.tensor(0, device=device),
                  logits_cache_source=source)
    assert torch.equal(cache[:, 0], source.float())
    assert torch.count_nonzero(cache[:, 1]) == 0


def test_steps_stay_separate_when_the_cache_is_one_column_wider(device, small_blocks):
    # The founding bug: a cache row one column wider than the logits, written step by step.
    small_blocks(block=16, splits=2)
    T, V, S = 4, 40, 4
    cache = torch.zeros(T, S, V + 1, device=device)
    steps = []
    for s in range(S):
        logits, idx, temp, seed, pos = _inputs(device, T, V, seed0=s)
        steps.append(logits)
        small_blocks.sample(logits, idx, temp, seed, pos, logits_cache=cache, logits_cache_col=torch.tensor(s, device=device))
    for s in range(S):
        assert torch.equal(cache[:, s, :V], steps[s]), f"step {s} landed shifted"
    assert torch.count_nonzero(cache[:, :, V]) == 0


def test_a_cache_one_column_narrower_is_refused(device):
    T, V = 2, 31
    logits, idx, temp, seed, pos = _inputs(device, T, V)
    cache = torch.zeros(T, 2, V - 1, device=device)
    with pytest.raises(StrideGuardError) as err:
        gumbel_sample(logits, idx, temp, seed, pos, logits_cache=cache, logits_cache_col=torch.tensor(0, device=device))
    assert str(V) in str(err.value) and str(V - 1) in str(err.value)
    assert torch.count_nonzero(cache) == 0


def test_lossy_cache_dtype_and_missing_column_are_refused(device):
    logits, idx, temp, seed, pos = _inputs(device, 2, 8)
    with pytest.raises(ValueError, match="exact"):
        gumbel_sample(logits, idx, temp, seed, pos, logits_cache=torch.zeros(2, 1, 8, dtype=torch.bfloat16, device=device),
                      logits_cache_col=torch.tensor(0, device=device))
    with pytest.raises(ValueError, match="logits_cache_col"):
        gumbel_sample(logits, idx, temp, seed, pos, logits_cache=torch.zeros(2, 1, 8, device=device))


def _draws(device, logits_row, n, temperature=1.0, is_drafting=False, seed=3, dtype=torch.float32):
    V = logits_row.numel()
    logits = logits_row.to(dtype).to(device).expand(n, V)  # row stride 0: one row, n draws
    idx = torch.zeros(n, dtype=torch.int64, device=device)
    temp = torch.tensor([temperature], device=device)
    seeds = torch.tensor([seed], device=device)
    pos = torch.arange(n, device=device)
    return gumbel_sample(logits, idx, temp, seeds, pos, is_drafting=is_drafting)


def test_distribution_matches_softmax_and_has_power(device, small_blocks):
    # One program per row keeps the interpreter's per-program cost down; the split path is
    # covered by the determinism test (same tokens with and without splits).
    small_blocks(block=16, splits=1)
    logits = torch.tensor([0.0, 1.0, 2.0, -1.0, 0.5, 1.5, -3.0, 0.25])
    temperature = 0.6
    # 400 draws on the CPU: against softmax at temperature 1 (the fault below) the chi-square's
    # noncentrality is 63, where the 1e-6 threshold of its 6-7 degrees of freedom is about 38.
    n = 400 if device.type == "cpu" else 200_000
    out = _draws(device, logits, n, temperature).cpu()
    assert out.min() >= 0 and out.max() < logits.numel()
    counts = np.bincount(out.numpy(), minlength=logits.numel())
    probs = torch.softmax(logits.double() / temperature, -1).numpy()
    stat, p, dof = chi2_pvalue(counts, probs)
    assert p > ALPHA, (stat, dof, p)
    # Power: the same draws judged against softmax at temperature 1 (the temperature ignored) fail.
    _, p_wrong, _ = chi2_pvalue(counts, torch.softmax(logits.double(), -1).numpy())
    assert p_wrong < ALPHA, p_wrong


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_greedy_is_exact_argmax_with_lowest_index_on_ties(device, dtype, small_blocks):
    small_blocks(block=16, splits=3)
    T, V = 6, 70
    logits, idx, temp, seed, pos = _inputs(device, T, V, temperature=0.0)
    logits[0, 10] = logits[0, 50] = logits[0].max() + 1  # tie across programs: 10 wins
    logits[1, 33] = logits[1, 34] = logits[1].max() + 1  # tie inside a block
    logits[2] = 0.0  # all tied: 0
    logits = logits.to(dtype)
    out = small_blocks.sample(logits, idx, temp, seed, pos)
    assert torch.equal(out, logits.argmax(-1))
    assert out[0].item() == 10 and out[1].item() == 33 and out[2].item() == 0


def test_deterministic_and_independent_of_batch_and_block(device, small_blocks):
    T, V = 6, 90
    logits, idx, temp, seed, pos = _inputs(device, T, V)
    small_blocks(block=16, splits=3)
    a = small_blocks.sample(logits, idx, temp, seed, pos)
    assert torch.equal(a, small_blocks.sample(logits, idx, temp, seed, pos))
    small_blocks(block=64, splits=1)
    b = small_blocks.sample(logits, idx, temp, seed, pos)
    assert torch.equal(a, b)
    # Rows 2..4 alone, in another order, with other request-state slots: the same tokens.
    perm = torch.tensor([4, 2, 3], device=device)
    R2 = 9
    temp2 = torch.ones(R2, device=device)
    seed2 = torch.zeros(R2, dtype=torch.int64, device=device)
    slots = torch.tensor([8, 1, 5], device=device)
    seed2[slots] = seed[perm]
    c = small_blocks.sample(logits[perm], slots, temp2, seed2, pos[perm])
    assert torch.equal(c, a[perm])
    # float64 noise and reduction draw the same tokens here (no near-ties at these sizes).
    assert torch.equal(small_blocks.sample(logits, idx, temp, seed, pos, use_fp64=True), a)


def test_drafting_uses_a_separate_stream(device):
    logits = torch.zeros(40)
    n = 100
    verify = _draws(device, logits, n)
    draft = _draws(device, logits, n, is_drafting=True)
    # Uniform over 40 tokens: independent streams agree on about n / 40 = 2.5 draws (Poisson);
    # 14 or more has probability 4.2e-7. One shared stream would agree on all 100.
    agree = (verify == draft).sum().item()
    assert agree < 14, agree


def test_nan_and_minus_inf_rows_and_padding(device, small_blocks):
    small_blocks(block=16, splits=3)
    T, V = 5, 45
    logits, idx, temp, seed, pos = _inputs(device, T, V)
    logits[0] = float("nan")
    logits[1] = float("-inf")
    logits[2, :40] = float("nan")  # only the last 5 are numbers
    idx[3] = -1  # padding
    cache = torch.zeros(T, 1, V, device=device)
    out = small_blocks.sample(logits, idx, temp, seed, pos, logits_cache=cache, logits_cache_col=torch.tensor(0, device=device))
    assert ((out >= 0) & (out < V)).all()
    assert out[0].item() == 0 and out[1].item() == 0
    assert 40 <= out[2].item() < V
    assert out[3].item() == 0
    assert torch.count_nonzero(cache[3]) == 0  # padding rows write nothing


@pytest.mark.parametrize("V", [1, 2, 33, 100])
def test_vocabulary_sizes_not_a_multiple_of_the_block(device, V, small_blocks):
    small_blocks(block=16, splits=3)
    T = 3
    logits, idx, temp, seed, pos = _inputs(device, T, V)
    out = small_blocks.sample(logits, idx, temp, seed, pos)
    assert ((out >= 0) & (out < V)).all()
    small_blocks(block=128, splits=1)
    assert torch.equal(out, small_blocks.sample(logits, idx, temp, seed, pos))
    greedy = small_blocks.sample(logits, idx, temp * 0, seed, pos)
    assert torch.equal(greedy, logits.argmax(-1))


def test_last_block_is_masked(device, small_blocks):
    # The winner sits in the masked tail of the last block; columns beyond V are never drawn.
    small_blocks(block=16, splits=2)
    V = 35
    logits = torch.full((3, V), -30.0)
    logits[:, V - 1] = 30.0
    out = _draws(device, logits[0], 12)
    assert (out == V - 1).all()


def test_layouts_do_not_change_tokens_or_cache(device):
    T, V = 3, 40
    logits, idx, temp, seed, pos = _inputs(device, T, V)
    cache = torch.zeros(T, 2, V + 1, device=device)
    report = assert_layout_invariant(
        gumbel_sample, logits, idx, temp, seed, pos, logits_cache=cache,
        logits_cache_col=torch.tensor([1, 0, 1], device=device),
    )
    assert report is not None


def test_guard_refuses_bad_layouts(device):
    T, V = 2, 16
    logits, idx, temp, seed, pos = _inputs(device, T, V)
    with pytest.raises(StrideGuardError):
        gumbel_sample(logits.t().contiguous().t(), idx, temp, seed, pos)  # inner stride != 1
    cache = torch.zeros(1, 1, V, device=device).expand(T, 2, V)  # stride-0: a write race
    with pytest.raises(StrideGuardError):
        gumbel_sample(logits, idx, temp, seed, pos, logits_cache=cache, logits_cache_col=torch.tensor(0, device=device))
    with pytest.raises(StrideGuardError):
        gumbel_sample(logits, idx, temp, seed, pos[:1])  # T mismatch


@pytest.mark.parametrize("is_drafting", [False, True])
def test_fp64_argmax_equals_a_float64_reference_of_the_same_noise(device, is_drafting, small_blocks):
    # splits=3 must be ignored by the float64 path: the cross-program merge packs a float32 key.
    small_blocks(block=16, splits=3)
    from guarded_kernels.noise import DRAFT_STREAM, VERIFY_STREAM

    stream = DRAFT_STREAM if is_drafting else VERIFY_STREAM
    g = torch.Generator().manual_seed(31)
    T, V = 12, 40
    seed = torch.randint(0, 2**62, (T,), generator=g)
    pos = torch.randint(0, 2**40, (T,), generator=g)
    temp = torch.tensor([0.8, 1.3, 0.45], dtype=torch.float32).repeat(T // 3)
    # Half the rows near-tied (keys within 1e-6: beyond float32's resolution), half random.
    rows = []
    for t in range(T):
        if t % 2 == 0:
            base = near_tied_logits(int(seed[t]), int(pos[t]), V, float(temp[t]), 1e-6, g)
            # The near-tie is built on the verification noise; shift it onto the stream used.
            base = base + ((noise2(int(seed[t]), int(pos[t]), V) - noise2(int(seed[t]), int(pos[t]), V, stream))
                           / scale64(float(temp[t]))).float()
            rows.append(base)
        else:
            rows.append(torch.randn(V, generator=g) * 2)
    logits = torch.stack(rows)
    idx = torch.arange(T)
    out = small_blocks.sample(*(x.to(device) for x in (logits, idx, temp, seed, pos)), is_drafting=is_drafting,
                        use_fp64=True).cpu()
    compared = 0
    for t in range(T):
        keys = logits[t].double() * scale64(float(temp[t])) + noise2(int(seed[t]), int(pos[t]), V, stream)
        want = decided_argmax(keys, 1e-11)  # float64 rounding of keys near 3 is ~4e-16
        if want is not None:
            compared += 1
            assert out[t].item() == want, (t, out[t].item(), want)
    assert compared >= T - 2, compared


@pytest.mark.parametrize("per_row_col", [False, True])
def test_padding_rows_return_an_in_range_id_and_write_nothing(device, per_row_col, small_blocks):
    # The cache is a view inside a larger zero buffer: a padding row that wrote anywhere (its
    # slot -1 would address memory before the cache) shows up outside the expected columns.
    small_blocks(block=16, splits=3)
    T, V, R, S = 6, 37, 4, 2
    logits, _, _, _, pos = _inputs(device, T, V)
    idx = torch.tensor([2, -1, 0, -5, 3, -1], dtype=torch.int64, device=device)
    temp = torch.tensor([1.0, 0.0, 0.7, 1.0], device=device)
    seed = torch.arange(R, device=device) + 40
    buf = torch.zeros(R + 2, S, V + 3, device=device)
    cache = buf[1:R + 1]
    col = torch.tensor([1, 0, 0, 1, 1, 0], device=device) if per_row_col else torch.tensor(1, device=device)
    out = small_blocks.sample(logits, idx, temp, seed, pos, logits_cache=cache, logits_cache_col=col)
    assert ((out >= 0) & (out < V)).all()
    expected = torch.zeros_like(buf)
    cols = col.expand(T)
    for t in range(T):
        if idx[t] >= 0:
            expected[1 + idx[t], cols[t], :V] = logits[t]
    assert torch.equal(buf, expected)
    # The real rows draw what they draw without the padding rows in the batch.
    real = idx >= 0
    alone = small_blocks.sample(logits[real], idx[real], temp, seed, pos[real])
    assert torch.equal(out[real], alone)


def _greedy_rows_with_nans(V, generator):
    """Rows for torch.argmax's NaN and tie rules: the first NaN wins, NaN beats +inf, +inf beats
    numbers, the lowest index wins ties; NaNs in different programs' chunks and in one lane."""
    rows = torch.randn(12, V, generator=generator) * 3
    rows[0] = float("nan")  # all NaN: 0
    rows[1, 7] = rows[1, 40] = float("nan")  # two NaNs: 7
    rows[1, 30] = 50.0
    rows[2] = float("-inf")  # all -inf: 0
    rows[3, 20] = float("inf")
    rows[3, 41] = float("nan")  # NaN after +inf (another program at splits=3): 41
    rows[4, 41] = float("inf")
    rows[4, 5] = float("nan")  # NaN before +inf: 5
    rows[5, 3] = rows[5, 19] = float("inf")  # +inf tie (one lane at block 16): 3
    rows[6, 2] = rows[6, 33] = rows[6].max() + 1  # tie across programs: 2
    rows[7, 44] = float("nan")  # a NaN in the masked tail block: 44
    rows[8, :] = float("-inf")
    rows[8, 40] = float("nan")  # NaN among -inf: 40
    rows[9, 16] = float("nan")  # NaN then +inf in the same lane (block 16): 16
    rows[9, 32] = float("inf")
    rows[10, 32] = float("nan")  # +inf then NaN in the same lane: 32
    rows[10, 16] = float("inf")
    return rows  # row 11: plain numbers


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("use_fp64, splits", [(False, 3), (False, 1), (True, 1)])
def test_greedy_is_torch_argmax_with_nans_infs_and_ties(device, dtype, use_fp64, splits, small_blocks):
    # temperature == 0 returns exactly torch.argmax, NaN rules included (the issue's contract).
    small_blocks(block=16, splits=splits)
    V = 45
    logits = _greedy_rows_with_nans(V, torch.Generator().manual_seed(41)).to(dtype)
    T = logits.shape[0]
    _, idx, temp, seed, pos = _inputs(device, T, V, temperature=0.0)
    logits = logits.to(device)
    out = small_blocks.sample(logits, idx, temp, seed, pos, use_fp64=use_fp64)
    want = logits.cpu().float().argmax(-1)
    assert want[:11].tolist() == [0, 7, 0, 41, 5, 3, 2, 44, 40, 16, 32]  # torch's own rule, as stated
    assert torch.equal(out.cpu(), want)
    assert torch.equal(out.cpu(), logits.cpu().argmax(-1))


def test_sampled_rows_never_draw_a_nan(device, small_blocks):
    # A sampled row draws from the softmax of its numbers: a NaN entry has probability 0. A row
    # with some NaN draws what the same row with those entries at -inf draws (same noise).
    small_blocks(block=16, splits=3)
    T, V = 6, 45
    logits, idx, temp, seed, pos = _inputs(device, T, V)
    nan_at = torch.rand(T, V, generator=torch.Generator().manual_seed(3)) < 0.3
    with_nan = logits.masked_fill(nan_at.to(device), float("nan"))
    out = small_blocks.sample(with_nan, idx, temp, seed, pos)
    assert not nan_at[torch.arange(T), out.cpu()].any()
    assert torch.equal(out, small_blocks.sample(logits.masked_fill(nan_at.to(device), float("-inf")), idx, temp, seed, pos))
    # All NaN: token 0, an in-range id.
    assert (small_blocks.sample(torch.full_like(logits, float("nan")), idx, temp, seed, pos) == 0).all()


def test_signatures_match_the_issue():
    import inspect

    from guarded_kernels import resample

    def params(fn):
        sig = inspect.signature(fn)
        return [(p.name, p.kind.name, p.default) for p in sig.parameters.values()]

    pos_kind, kw = "POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY"
    empty = inspect.Parameter.empty
    assert params(gumbel_sample) == [
        ("logits", pos_kind, empty), ("idx_mapping", pos_kind, empty), ("temperature", pos_kind, empty),
        ("seed", pos_kind, empty), ("pos", pos_kind, empty),
        ("apply_temperature", kw, True), ("is_drafting", kw, False), ("logits_cache", kw, None),
        ("logits_cache_col", kw, None), ("logits_cache_source", kw, None), ("use_fp64", kw, False),
        ("plan", kw, None),
    ]
    assert params(resample) == [
        ("target_logits", pos_kind, empty), ("draft_logits", pos_kind, empty), ("draft_tokens", pos_kind, empty),
        ("num_accepted", pos_kind, empty), ("cu_num_logits", pos_kind, empty), ("idx_mapping", pos_kind, empty),
        ("temperature", pos_kind, empty), ("seed", pos_kind, empty), ("pos", pos_kind, empty),
        ("draft_vocab_size", kw, None), ("use_fp64", kw, False), ("plan", kw, None),
    ]


def test_apply_temperature_false_uses_the_logits_as_they_are(device, small_blocks):
    small_blocks(block=16, splits=2)
    T, V = 6, 30
    logits, idx, temp, seed, pos = _inputs(device, T, V, temperature=0.5)
    plain = small_blocks.sample(logits, idx, temp, seed, pos, apply_temperature=False)
    # The same draw as temperature 1 (same noise): the temperature is not applied...
    assert torch.equal(plain, small_blocks.sample(logits, idx, torch.ones_like(temp), seed, pos))
    # ...and the call with it applied differs somewhere (logits * 3 at T = 0.5 changes draws).
    assert not torch.equal(plain, small_blocks.sample(logits, idx, temp, seed, pos))
    # temperature 0 still selects greedy.
    assert torch.equal(small_blocks.sample(logits, idx, temp * 0, seed, pos, apply_temperature=False), logits.argmax(-1))


def test_cache_column_of_the_wrong_shape_is_refused(device):
    logits, idx, temp, seed, pos = _inputs(device, 3, 8)
    cache = torch.zeros(3, 2, 8, device=device)
    for col in (torch.tensor([0, 1], device=device), torch.zeros(3, 1, dtype=torch.int64, device=device)):
        with pytest.raises(ValueError, match=r"0-d or \[T\] = \[3\]"):
            gumbel_sample(logits, idx, temp, seed, pos, logits_cache=cache, logits_cache_col=col)
    with pytest.raises(TypeError, match="int32 or int64"):
        gumbel_sample(logits, idx, temp, seed, pos, logits_cache=cache, logits_cache_col=torch.tensor(0.0, device=device))
    assert torch.count_nonzero(cache) == 0
    # int32 per-row columns are accepted.
    gumbel_sample(logits, idx, temp, seed, pos, logits_cache=cache,
                  logits_cache_col=torch.tensor([1, 0, 1], dtype=torch.int32, device=device))
    assert torch.equal(cache[idx.long(), torch.tensor([1, 0, 1], device=device)], logits)


@pytest.mark.parametrize("block, splits", [(16, 1), (8, 3)])
def test_lane_maximum_path_draws_what_the_tracked_path_draws(device, block, splits, small_blocks):
    # Programs of several blocks keep only lane maxima and recompute the winning column once
    # (sample.lane_max): forced on and off at the tests' small sizes, the tokens are the same,
    # with NaN, -inf and +inf entries, all -inf / all NaN chunks, and a winner in the masked tail.
    T, V = 7, 150
    logits, idx, temp, seed, pos = _inputs(device, T, V)
    logits[0, ::3] = float("nan")
    logits[1, :100] = float("-inf")  # the first programs' chunks hold no finite key
    logits[2] = float("-inf")
    logits[3, 149] = 40.0  # the winner in the masked tail block
    logits[4] = float("nan")
    logits[5, 17] = float("inf")
    cache = torch.zeros(T, 1, V, device=device)
    col = torch.tensor(0, device=device)
    got = {}
    for lane_max in (True, False):
        small_blocks(block=block, splits=splits, lane_max=lane_max)
        got[lane_max] = small_blocks.sample(logits, idx, temp, seed, pos, logits_cache=cache, logits_cache_col=col)
    assert torch.equal(got[True], got[False])
    assert torch.equal(cache[:, 0].view(torch.int32), logits.view(torch.int32))  # the cache is bit-exact
    out = got[True].cpu()
    assert out[2].item() == 0 and out[4].item() == 0 and out[3].item() == 149 and out[5].item() == 17
    assert not logits[0, out[0]].isnan() and 100 <= out[1].item() < V


@pytest.mark.parametrize("block, splits", [(16, 1), (8, 3)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_block_skip_draws_what_the_full_loop_draws(device, dtype, block, splits, small_blocks):
    # The exact block skip (the plan's skip, _walk_chunk's SKIP) leaves out the noise of blocks
    # whose bound cannot reach the chunk's best key: forced on and off, the tokens are the same
    # and the cache is written whole (skipped blocks included). Rows: plain random logits; a
    # winner in the first block (every later block skipped); one in the last full block and one
    # in the masked tail (after many skipped blocks); NaN, -inf and +inf entries; a steep and a
    # flat temperature; logits near 1e7, where keys round to whole units and tie, so that only
    # the bound's slack keeps a tied later block in play; greedy and padding rows; two rows built
    # so that a later block's winner lies within a quarter bit of its bound (bound_probe_row: a
    # bound lowered by a quarter bit fails this test).
    T, V = 16, 150
    logits, idx, temp, seed, pos = _inputs(device, T, V, dtype)
    g = torch.Generator().manual_seed(5)
    logits[1, 2] = 60.0
    logits[2, 140] = 60.0
    logits[3, 149] = 60.0
    logits[4, ::7] = float("nan")
    logits[5, :100] = float("-inf")
    logits[6, 75] = float("inf")
    temp[7] = 0.05
    temp[8] = 20.0
    if dtype == torch.float32:
        logits[9] = 1e7 + torch.randint(0, 3, (V,), generator=g).float()
    else:
        logits[9] = (30000 + 256 * torch.randint(0, 3, (V,), generator=g)).to(dtype)
    temp[10] = 0.0
    idx[11] = -1
    chunk = sample_plan(T, V, dtype, device, block=block, num_splits=splits).chunk
    probes = {}
    for r in (12, 13):
        pos[r], row, probes[r] = bound_probe_row(device, int(seed[r]), V, block, chunk, dtype)
        logits[r], temp[r] = row.to(device), 1.0
    cache = torch.zeros(T, 1, V, dtype=dtype, device=device)
    col = torch.tensor(0, device=device)
    bits = torch.int16 if dtype == torch.bfloat16 else torch.int32
    got = {}
    for skip in (True, False):
        small_blocks(block=block, splits=splits, lane_max=True, skip=skip)
        cache.zero_()
        got[skip] = small_blocks.sample(logits, idx, temp, seed, pos, logits_cache=cache, logits_cache_col=col)
        rows = [r for r in range(T) if r != 11]
        assert torch.equal(cache[rows, 0].view(bits), logits[rows].view(bits)), skip
    assert torch.equal(got[True], got[False]), (got[True], got[False])
    out = got[True].cpu()
    assert out[1].item() == 2 and out[2].item() == 140 and out[3].item() == 149 and out[6].item() == 75
    assert not logits[4, out[4]].isnan() and out[5].item() >= 100 and out[11].item() == 0
    assert [out[r].item() for r in probes] == list(probes.values())


def test_block_skip_float16_with_a_cache_source(device, small_blocks):
    # The skip with float16 logits and logits_cache_source (the skip test above covers neither):
    # skipped blocks still copy the source row to the cache, and the tokens match the full loop.
    # Rows: a winner in the first block (every later block skipped), one after many skippable
    # blocks, float16's largest and smallest values against a tiny and a huge temperature, ties.
    T, V = 8, 300
    logits, idx, temp, seed, pos = _inputs(device, T, V, torch.float16, seed0=3)
    source = (-logits).flip(1).contiguous()
    logits[1, 3] = 60.0
    logits[2, :280] = -60.0
    logits[3, ::2] = 65504.0
    logits[3, 1::2] = -65504.0
    temp[3] = 1e-30
    logits[4, 100:] = 65504.0
    temp[4] = 3e38
    logits[5] = 7.0
    cache = torch.zeros(T, 2, V + 2, dtype=torch.float16, device=device)
    small_blocks(block=16, splits=1)
    got = {}
    for skip in (True, False):
        small_blocks(block=16, splits=1, lane_max=True, skip=skip)
        cache.zero_()
        got[skip] = small_blocks.sample(logits, idx, temp, seed, pos, logits_cache=cache,
                                  logits_cache_col=torch.tensor(1, device=device), logits_cache_source=source)
        assert torch.equal(cache[:, 1, :V].view(torch.int16), source.view(torch.int16)), skip
        assert not cache[:, 0].any() and not cache[:, 1, V:].any()
    assert torch.equal(got[True], got[False]), (got[True], got[False])
    out = got[True].cpu()
    # Row 3: +inf keys at every even column (65504 / 1e-30 overflows), the first one wins.
    assert out[1].item() == 3 and out[2].item() >= 280 and out[3].item() == 0


@pytest.mark.parametrize("dtype, block, splits", [
    (torch.float32, 16, 1),  # one program of 10 blocks: the loop after the preloaded blocks
    (torch.float32, 64, 3),  # chunks of one block: a second preloaded block wholly masked
    (torch.bfloat16, 8, 3),  # 7 blocks, the last program 4 and a masked tail
    (torch.bfloat16, 16, 5),  # chunks of exactly two blocks, the last one and a masked tail
])
def test_preloaded_blocks_draw_what_the_loop_draws(device, dtype, block, splits, small_blocks):
    # The first one or two blocks of a program's chunk are loaded before the idx_mapping -> seed
    # loads (the plan's early); forced to 0, 1 and 2 at chunks of 1 to 10 blocks (a chunk
    # shorter than the preloaded blocks, a masked tail after them, the last program's short
    # chunk), the tokens and the cache are the same: sampled, greedy, NaN, -inf and padding rows.
    T, V = 8, 150
    logits, idx, temp, seed, pos = _inputs(device, T, V, dtype)
    logits[0, ::3] = float("nan")
    logits[1, :100] = float("-inf")
    logits[2, 149] = 40.0  # the winner in the last program's short chunk
    logits[3, 1] = 40.0  # the winner in the first preloaded block
    logits[4] = float("nan")
    temp[5] = 0.0  # greedy
    logits[5, 20] = float("nan")
    idx[6] = -1  # padding
    cache = torch.zeros(T, 1, V, dtype=dtype, device=device)
    col = torch.tensor(0, device=device)
    bits = torch.int16 if dtype == torch.bfloat16 else torch.int32
    got = {}
    for early in (0, 1, 2):
        small_blocks(block=block, splits=splits, early=early)
        cache.zero_()
        got[early] = small_blocks.sample(logits, idx, temp, seed, pos, logits_cache=cache, logits_cache_col=col)
        rows = [r for r in range(T) if r != 6]
        assert torch.equal(cache[rows, 0].view(bits), logits[rows].view(bits)), early
        assert torch.count_nonzero(cache[6]) == 0
    assert torch.equal(got[0], got[1]) and torch.equal(got[0], got[2])
    out = got[0].cpu()
    assert out[2].item() == 149 and out[3].item() == 1 and out[5].item() == 20 and out[6].item() == 0
    assert out[4].item() == 0 and not logits[0, out[0]].isnan() and 100 <= out[1].item() < V


def test_preload_policy_by_chunk_length_and_element_size():
    # Two preloaded blocks pay for chunks of at most two blocks, one for long chunks of 16-bit
    # logits, none for long float32 chunks (the peeled loop was 10-16% slower on triton 3.6).
    def early(vocab, block, splits, dtype):
        return sample_plan(64, vocab, dtype, H200, block=block, num_warps=4, num_splits=splits).early

    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        # A one-block chunk (T = 1) preloads that block only: a second would be all masked lanes.
        assert early(2048 * 8, 2048, 8, dtype) == 1 and early(100, 2048, 1, dtype) == 1
        assert early(4097, 4096, 1, dtype) == 2 and early(8192 * 3, 4096, 3, dtype) == 2
    for vocab in (8193, 151936, 262144):
        assert early(vocab, 4096, 1, torch.bfloat16) == 1 and early(vocab, 4096, 1, torch.float16) == 1
        assert early(vocab, 4096, 1, torch.float32) == 0


@pytest.mark.parametrize("dtype, block, splits, rows", [
    (torch.float32, 8, 3, 12),
    (torch.bfloat16, 16, 2, 12),
    # More programs per row than the slots first allocated on the CPU (16): the slots grow. The
    # first four rows only: 23 programs of one block a row cost the interpreter most.
    (torch.float32, 2, 23, 4),
])
def test_slot_merge_draws_what_the_atomic_merge_draws(device, dtype, block, splits, rows, small_blocks):
    # The plan's merge_slots: each program of a split row stores its packed (key, index) word in a
    # slot of its own and the last program reduces the row's slots, instead of one atomic maximum
    # per row. Forced on and off, sampled and greedy rows give the same tokens: NaN and +inf in
    # different programs, a tie across programs, padding rows, the winner in the last program's
    # short chunk. Calls repeated on the same slots draw the same again (the counter is reset, the
    # slots are rewritten).
    V = 45
    greedy = _greedy_rows_with_nans(V, torch.Generator().manual_seed(41))[:rows].to(dtype).to(device)
    T = greedy.shape[0]
    _, idx, temp, seed, pos = _inputs(device, T, V)
    sampled, _, _, _, _ = _inputs(device, T, V, dtype)
    sampled[0, ::3] = float("nan")
    sampled[1, 44] = 40.0  # the winner in the last program's short chunk
    sampled[2, :30] = float("-inf")
    idx[3] = -1  # padding
    got = {}
    for slots in (False, True):
        small_blocks(block=block, splits=splits, merge_slots=slots)
        got[slots] = [small_blocks.sample(greedy, idx, temp * 0, seed, pos), small_blocks.sample(sampled, idx, temp, seed, pos)]
    again = [small_blocks.sample(greedy, idx, temp * 0, seed, pos), small_blocks.sample(sampled, idx, temp, seed, pos)]
    assert all(torch.equal(a, b) for a, b in zip(got[True], again))
    assert all(torch.equal(a, b) for a, b in zip(got[False], got[True]))
    want = greedy.cpu().float().argmax(-1)
    want[3] = 0
    assert torch.equal(got[True][0].cpu(), want)
    out = got[True][1].cpu()
    assert out[1].item() == 44 and out[3].item() == 0 and out[2].item() >= 30 and not sampled[0, out[0]].isnan()


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9,
                    reason="programmatic dependent launch: CUDA compute capability >= 9.0 only")
@pytest.mark.parametrize("pdl", [1, 2])
@pytest.mark.parametrize("V", [262144, 151936])
def test_programmatic_dependent_launch_draws_what_a_plain_launch_draws(device, pdl, V):
    # The plan's pdl: the kernel may start before the previous kernel in the stream ends and waits
    # (griddepcontrol.wait) before its first load. A chain where every call reads what the kernel
    # just before it wrote (pos from a torch add of the last tokens; the merge scratch that the
    # previous call's last programs reset, calls back to back) draws the same sequence as plain
    # launches; a load before the wait would read stale pos or a counter not yet reset. On an
    # H200, V = 262,144 launches the 2,048 / 8-warp grid and V = 151,936 the 1,024 / 4 one.
    from guarded_kernels import sample_plan

    T = 8
    g = torch.Generator(device=device).manual_seed(5)
    logits = torch.randn(T, V, device=device, generator=g) * 2
    idx = torch.arange(T, dtype=torch.int32, device=device)
    temp = torch.full((T,), 0.9, device=device)
    seed = torch.arange(T, dtype=torch.int64, device=device) + 1

    def chain(plan):
        pos = torch.arange(T, dtype=torch.int64, device=device)
        outs = []
        for _ in range(16):
            out = gumbel_sample(logits, idx, temp, seed, pos, plan=plan)
            outs.append(out)
            outs.append(gumbel_sample(logits, idx, temp, seed, pos + 1, plan=plan))
            pos = pos + out + 2
        return torch.stack(outs)

    want = chain(sample_plan(T, V, logits.dtype, device, pdl=0))
    for _ in range(3):
        assert torch.equal(chain(sample_plan(T, V, logits.dtype, device, pdl=pdl)), want)
    assert len(set(want[:, 0].tolist())) > 8  # the chain moves: pos changes the draws
    # The noise is keyed by token, not by program: the other few-row grid draws the same chain.
    other = (2048, 8, 66) if sample_plan(T, V, logits.dtype, device).block == 1024 else (1024, 4, 132)
    plan = sample_plan(T, V, logits.dtype, device, block=other[0], num_warps=other[1], num_splits=other[2], pdl=pdl)
    assert torch.equal(chain(plan), want)


H200 = Gpu(sms=132, pdl=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_few_row_launch_policy(dtype):
    # Below 64 rows the merge goes through per-program slots and the launch is a programmatic
    # dependent launch that also lets the next grid launch (the 1,024 / 4-warp grid only waits);
    # from 64 rows on neither, so those kernels compile as before. Without PDL on the device, none.
    for rows in (1, 8, 63):
        plan = sample_plan(rows, 262_144, dtype, H200)
        assert plan.merge_slots is True and plan.pdl == 2 and plan.num_warps == 8
        assert sample_plan(rows, 262_144, dtype, H200, block=1024, num_warps=4).pdl == 1
        assert sample_plan(rows, 262_144, dtype, Gpu(sms=132, pdl=False)).pdl == 0
    for rows in (64, 256, 1024):
        plan = sample_plan(rows, 262_144, dtype, H200)
        assert plan.merge_slots is False and plan.pdl == 0


def test_block_skip_launch_policy():
    # From 64 rows on a GPU, the block skip with its own launch (1,024 / 4 warps, programs per
    # row by the wave rule over 8 a multiprocessor, loads pipelined 4 deep) where its programs
    # walk >= 32 blocks; elsewhere the 4,096 / 16 launch without it, and never on the CPU.
    import triton

    from guarded_kernels._common import wave_splits

    for rows, vocab, skips in ((256, 151_936, True), (1024, 262_144, True), (512, 151_936, True),
                               (1024, 32_000, True), (64, 151_936, False), (64, 262_144, False),
                               (256, 32_000, False), (128, 262_144, True), (128, 151_936, False)):
        for dtype in (torch.float32, torch.bfloat16):
            plan = sample_plan(rows, vocab, dtype, H200)
            assert ((plan.block, plan.num_warps) == (1024, 4)) == skips, (rows, vocab)
            if skips:
                assert plan.num_splits == wave_splits(rows, triton.cdiv(vocab, 1024), 8 * 132)
                assert plan.chunk >= 32 * 1024
            else:
                assert (plan.block, plan.num_warps) == (4096, 16)
            assert plan.skip == skips and plan.lane_max and plan.stages == (4 if skips else 1)
            assert sample_plan(rows, vocab, dtype, "cpu").skip is False
    # Few rows keep their grids (no skip: a chunk of one or two blocks).
    plan = sample_plan(8, 262_144, torch.float32, H200)
    assert (plan.block, plan.num_warps) in ((2048, 8), (1024, 4)) and not plan.skip


def test_few_row_grid_by_busiest_multiprocessor():
    # On a 132-multiprocessor device below 64 rows: 2,048 / 8 warps (four programs per SM), unless
    # 1,024 / 4 warps (eight per SM) gives the busiest SM >= 15% fewer columns, the 2,048 / 8
    # grid's busiest SM walks >= 3 blocks and both grids' programs are at most two blocks.
    def cfg(rows, vocab, dt, fp64=False):
        plan = sample_plan(rows, vocab, dt, H200, use_fp64=fp64)
        return plan.block, plan.num_warps, plan.num_splits

    for dt in (torch.float32, torch.bfloat16):
        # The measured wins, each 5/6 of the busiest SM's columns. T = 8, V = 151,936: 304 programs
        # of 2 x 2,048 leave 40 SMs three (12,288 columns); 600 of 2 x 1,024 at most five (10,240).
        assert cfg(8, 151_936, dt) == (1024, 4, 75)  # 132 programs asked, 75 of two blocks laid out
        assert cfg(4, 151_936, dt) == (1024, 4, 149)  # 6,144 -> 5,120
        assert cfg(5, 262_144, dt) == (1024, 4, 128)  # 12,288 -> 10,240
        # T = 8, V = 262,144: 512 programs, four per SM (16,384 columns) either way: unchanged.
        assert cfg(8, 262_144, dt) == (2048, 8, 64)
        # Measured losses kept on 2,048 / 8: 7/8 of the columns (T = 6, V = 151,936: 8,192 ->
        # 7,168) and busiest SMs of two blocks or less (T = 2, V = 151,936; V = 32,000).
        assert cfg(6, 151_936, dt) == (2048, 8, 75)
        assert cfg(2, 151_936, dt) == (2048, 8, 75)
        for rows in (2, 4, 12):
            assert cfg(rows, 32_000, dt) == (2048, 8, 16)
        # One row: 75 / 128 one-block programs, one per SM either way: unchanged.
        assert cfg(1, 151_936, dt) == (2048, 8, 75)
        assert cfg(1, 262_144, dt) == (2048, 8, 128)
        # Programs of more than two blocks (T = 16, V = 262,144: 8 blocks of 2,048) keep the
        # measured grid, whatever the balance.
        assert cfg(16, 262_144, dt) == (2048, 8, 32)
        # From 64 rows and with float64 keys nothing changes.
        assert cfg(64, 151_936, dt)[:2] == (4096, 16)
        assert cfg(8, 151_936, dt, True) == (1024, 8, 1)
