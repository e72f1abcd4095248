"""guarded_kernels.rejection_sample: the whole speculative-decoding verification step.

Four groups: (1) against a float64 reference built from the documented noise construction
(acceptance decisions, residual / one-hot / bonus / greedy tokens); (2) the one launch's exchange
across programs (run as threads in the interpreter, natively on a GPU): bit for bit the tokens of
one program per request, whatever the split; (3) vLLM's own rejection-sampler tests in our API's
form (their sources are named where each starts); (4) distribution tests: the accepted-count
distribution and every emitted position against the theory, by chi-square.

Statistical tests use fixed seeds, so their verdicts are deterministic; the threshold
``ALPHA = 1e-6`` on the p-value is the chance that a correct sampler fails at a fresh seed, and
each such test also shows power: a wrong hypothesis (the draft's distribution, a shifted acceptance
rate) is rejected by the same statistic on the same draws.
"""

import importlib
import math
import threading
import time

import numpy as np
import pytest
import torch

from guarded_kernels import PLACEHOLDER, gumbel_sample, rejection_sample, resample
from guarded_kernels.noise import token_hashes
from stridecheck import StrideGuardError
from stridecheck.testing import assert_layout_invariant
from tests.kernels.chisquare import chi2_pvalue
from tests.kernels.reference import decided_argmax, noise2, scale64

ALPHA = 1e-6
LOG2E = 1.4426950408889634

rej_mod = importlib.import_module("guarded_kernels.rejection")
_INTERPRETED = not torch.cuda.is_available()
GPU = ["cuda"] if torch.cuda.is_available() else []


@pytest.fixture(autouse=True, scope="module")
def _device_calls_without_repatching():
    """Interpreter speed only. Triton's interpreter patches ``triton.language`` (and the language
    modules the callee's globals hold) on every call of a ``@triton.jit`` helper
    (``InterpretedFunction.__call__`` -> ``_patch_lang``: about 3 ms of ``inspect.getmembers`` a
    call, and this kernel makes dozens per program), although the launch has patched most of them
    already. Here a patch is skipped when every language module the callee sees is patched under
    the launch's patch already; a callee that sees another (``triton.language.standard``'s
    helpers see ``triton.language.core``) patches it, and the launch's restore undoes both. The
    kernels run the same operations. If a Triton release changes these internals, nothing is
    replaced (the tests only run slower)."""
    import inspect

    import triton.language as tl
    from triton.runtime import interpreter

    original = getattr(interpreter, "_patch_lang", None)
    if not _INTERPRETED or original is None or not hasattr(interpreter, "InterpretedFunction"):
        yield
        return
    patched, scopes, seen = set(), [], {}

    def langs(fn):
        if fn not in seen:
            seen[fn] = frozenset(id(v) for v in fn.__globals__.values()
                                 if inspect.ismodule(v) and (v is tl or v is tl.core))
        return seen[fn]

    class Outer:
        def restore(self):
            while scopes:
                scopes.pop().restore()
            patched.clear()

    class Inner:
        def restore(self):
            pass

    def patch_lang(fn):
        need = langs(fn)
        if scopes and need <= patched:
            return Inner()
        first = not scopes
        scopes.append(original(fn))
        patched.update(need)
        return Outer() if first else Inner()

    interpreter._patch_lang = patch_lang
    try:
        yield
    finally:
        interpreter._patch_lang = original


@pytest.fixture
def config(monkeypatch):
    """Set the launch configuration: ``config(block, unit_blocks, splits)``. On the CPU the
    launcher runs one program per request whatever ``splits`` says (the interpreter runs programs
    one after another); on a GPU ``splits`` programs per request exchange their units."""

    def apply(block=16, unit_blocks=2, splits=1):
        monkeypatch.setattr(rej_mod, "launch_config",
                            lambda *a, **k: rej_mod.LaunchConfig(block, 4, unit_blocks, splits))

    return apply


# ------------------------------------------------------------------------------------- inputs


def _requests(device, Q, S, V, W, seed0, *, lengths=None, near=0.5, temps=(0.6, 1.0, 0.0, 1.7)):
    """Q requests over V tokens, up to S drafts each (``lengths``: drafts per request, default S),
    random target logits, draft logits ``target + near * noise`` (so that drafts are often
    accepted), draft tokens drawn from the draft's softmax, temperatures cycling through ``temps``
    (0: greedy), slots permuted, seeds and positions random. Returns the positional arguments of
    rejection_sample."""
    g = torch.Generator().manual_seed(seed0)
    lengths = [S] * Q if lengths is None else list(lengths)
    N = sum(n + 1 for n in lengths)
    cu = torch.tensor([0] + list(np.cumsum([n + 1 for n in lengths])))
    target = torch.randn(N, V, generator=g) * 2
    idx = torch.randperm(Q, generator=g)
    draft = torch.randn(Q, S, W, generator=g) * 2
    tokens = torch.zeros(Q, S, dtype=torch.int64)
    for r in range(Q):
        for i in range(lengths[r]):
            d = target[cu[r] + i] + near * torch.randn(V, generator=g) * 2
            draft[idx[r], i, :V] = d
            tokens[r, i] = torch.multinomial(torch.softmax(d, -1), 1, generator=g).item()
    temp = torch.empty(Q)
    temp[idx] = torch.tensor(temps, dtype=torch.float32).repeat(Q)[:Q]  # request r: temps[r % len]
    seed = torch.randint(0, 2**62, (Q,), generator=g)
    pos = torch.randint(0, 2**40, (N,), generator=g)
    return [t.to(device) for t in (target, draft, tokens, cu, idx, temp, seed, pos)]


def _make_certain(args, requests, steps):
    """Make draft ``steps`` of ``requests`` certain to be accepted in every mode: the drafted token
    50 nats above the rest of its target row (p(x) ~ 1, and the argmax), the draft logits equal
    to the target row (p == q)."""
    target, draft, tokens, cu, idx = args[:5]
    for r in requests:
        for i in steps:
            row = int(cu[r]) + i
            target[row, int(tokens[r, i])] += 50.0
            if draft is not None:
                draft[idx[r], i, : target.shape[1]] = target[row]


def _log2_uniforms(seed_of_row, pos):
    """log2 of each row's acceptance uniform ``(h + 1/2) / 2**32``, ``h`` the verification stream's
    hash of (seed, pos) at the token id 2**32 - 1 (the documented construction)."""
    h = token_hashes(seed_of_row, pos, torch.full_like(pos, -1)).cpu().to(torch.int64) & 0xFFFFFFFF
    return torch.log2((h.double() + 0.5) / 2.0**32)


def _torch_argmax(row):
    """torch.argmax, NaN first (float64 on the CPU)."""
    return int(torch.argmax(row.cpu()).item())


def _log2_softmax(x, sc):
    t = x.double().cpu() * sc
    return t - torch.logsumexp(t / LOG2E, 0) * LOG2E


def _reference(args, vd=None, *, accept_margin=1e-4, token_margin=1e-3):
    """float64 verification of every request: [(accepted, token)], either None where the
    reference's own rounding could decide it either way (an acceptance within ``accept_margin`` of
    its threshold in log2 units, or two token keys within ``token_margin``)."""
    target, draft, tokens, cu, idx, temp, seed, pos = args
    V = target.shape[1]
    Q, S = tokens.shape
    vd = vd or (draft.shape[2] if draft is not None else V)
    cu_c, idx_c = cu.cpu(), idx.cpu()
    row_req = torch.repeat_interleave(torch.arange(Q), cu_c[1:] - cu_c[:-1])
    # The hash runs as a Triton kernel: on the tensors' own device (a GPU refuses CPU tensors).
    log2u = _log2_uniforms(seed[idx_c[row_req].to(seed.device)], pos)
    out = []
    for r in range(Q):
        slot = int(idx_c[r])
        T = float(temp[slot])
        first, n = int(cu_c[r]), min(int(cu_c[r + 1] - cu_c[r]) - 1, S)
        acc, decided, valid, x = 0, True, False, -1
        sc = scale64(T) if T > 0 else LOG2E
        while acc < n:
            row = first + acc
            x = int(tokens[r, acc])
            valid = 0 <= x < V
            if T == 0:
                ok = valid and x == _torch_argmax(target[row])
            elif not valid:
                ok = False
            else:
                lp = float(_log2_softmax(target[row], sc)[x])
                if draft is None:
                    lq = 0.0
                elif x >= vd:
                    lq = -math.inf
                else:
                    lq = float(_log2_softmax(draft[slot, acc, :vd], sc)[x])
                margin = lp - lq - float(log2u[row])
                if not abs(margin) > accept_margin:  # NaN or near the threshold
                    decided = margin != margin
                ok = margin > 0
            if not ok:
                break
            acc += 1
        if not decided:
            out.append((None, None))
            continue
        stop = first + acc
        if T == 0:
            out.append((acc, _torch_argmax(target[stop])))
            continue
        t = target[stop].double().cpu() * sc
        noise = noise2(int(seed[slot]), int(pos[stop]), V)
        rejected = acc < n and valid
        if rejected and draft is not None:
            lp = _log2_softmax(target[stop], sc)
            lq = torch.full((V,), -math.inf, dtype=torch.float64)
            lq[:vd] = _log2_softmax(draft[slot, acc, :vd], sc)
            keys = torch.log2((torch.exp2(lp) - torch.exp2(lq)).clamp(min=0)) + noise
        else:
            keys = t + noise
            if rejected:
                keys[x] = -math.inf
        if not (keys > -math.inf).any():
            keys = t + noise  # no residual mass: a draw from p
        out.append((acc, decided_argmax(keys, token_margin)))
    return out


def _assert_reference(result, args, vd=None, at_least=None):
    """The kernel's counts and tokens equal the reference's wherever it is decided; the accepted
    prefix is the drafts; positions after the emitted token hold PLACEHOLDER."""
    tokens, num_acc = result.tokens.cpu(), result.num_accepted.cpu()
    Q, S = args[2].shape
    assert tokens.shape == (Q, S + 1) and tokens.dtype == torch.int64 and num_acc.dtype == torch.int32
    decided = 0
    for r, (acc, tok) in enumerate(_reference(args, vd)):
        a = int(num_acc[r])
        assert torch.equal(tokens[r, :a], args[2][r, :a].cpu()), r
        assert (tokens[r, a + 1:] == PLACEHOLDER).all(), r
        assert 0 <= tokens[r, a] < args[0].shape[1], r
        if acc is not None:
            assert a == acc, (r, a, acc)
            if tok is not None:
                decided += 1
                assert tokens[r, a].item() == tok, (r, tokens[r, a].item(), tok)
    assert decided >= (Q - 2 if at_least is None else at_least), decided
    return tokens, num_acc


# ------------------------------------------------------------- (1) against the float64 reference


@pytest.mark.parametrize("one_hot", [False, True])
def test_matches_a_float64_reference(device, one_hot, config):
    # Every path in one batch: greedy and sampled requests at three temperatures, drafts often
    # accepted (the draft is the target plus noise), requests of 0 to 3 drafts, a draft cache
    # wider than V_d (W = 31, V_d = 27: q is zero beyond it), blocks and units of 8 / 16 columns.
    config(block=8, unit_blocks=2)
    Q, S, V, W, vd = 20, 3, 29, 31, 27
    lengths = [3, 0, 1, 2, 3, 3, 1, 3, 2, 0, 3, 3, 2, 1, 3, 3, 3, 2, 3, 1]
    args = _requests(device, Q, S, V, W, seed0=1, lengths=lengths)
    if one_hot:
        args[1], vd = None, None
    _make_certain(args, [0, 4, 7, 10], [0, 1])  # sampled, sampled, sampled, greedy; step 2 open
    _make_certain(args, [13], [0])  # one draft: its bonus row
    result = rejection_sample(*args, draft_vocab_size=vd)
    _, num_acc = _assert_reference(result, args, vd)
    # The batch exercises what it claims: acceptances past step 1, full acceptance (bonus rows)
    # and rejections, sampled and greedy.
    n = (args[3][1:] - args[3][:-1] - 1).cpu()
    assert (num_acc[[0, 4, 7, 10]] >= 2).all()
    assert ((num_acc < n) & (args[5][args[4]].cpu() > 0)).any()
    assert ((num_acc == n) & (n > 0)).any()


def test_placeholder_and_out_of_range_drafts_end_verification(device, config):
    # A negative id (placeholder) or one >= V is rejected without a test: verification stops
    # there, even if a valid draft follows, and the token there is drawn from p (sampled: the
    # token gumbel_sample draws for that row) or is the row's argmax (greedy).
    config(block=8)
    Q, S, V = 8, 3, 21
    target, draft, tokens, cu, idx, temp, seed, pos = _requests(device, Q, S, V, V, seed0=3, near=0.0)
    # Step 0 always accepted (a token 50 nats above the rest, drafted with the target's own
    # logits: p(x) = q(x) ~ 1), step 1 a bad id.
    rows0 = cu[:-1]
    tokens[:, 0] = target[rows0].argmax(-1)
    target[rows0, tokens[:, 0]] += 50.0
    draft[idx, 0] = target[rows0]
    tokens[:, 1] = torch.tensor([-1, V, -7, V + 5] * 2, device=device)
    draft[idx, 2] = target[rows0 + 2]  # a valid draft after the bad one: never reached
    tokens[:, 2] = target[rows0 + 2].argmax(-1)
    out = rejection_sample(target, draft, tokens, cu, idx, temp, seed, pos)
    assert (out.num_accepted.cpu() == 1).all()
    rows1 = rows0 + 1
    want = gumbel_sample(target[rows1], idx, temp, seed, pos[rows1])
    assert torch.equal(out.tokens[:, 1], want)  # greedy rows too: gumbel_sample's argmax
    assert (out.tokens[:, 2:] == PLACEHOLDER).all()
    one_hot = rejection_sample(target, None, tokens, cu, idx, temp, seed, pos)
    assert torch.equal(one_hot.tokens, out.tokens) and torch.equal(one_hot.num_accepted, out.num_accepted)


def test_bonus_row_is_gumbel_sample_and_rejections_are_resample(device, config):
    # The draw after verification is resample's for the same accepted count: the bonus row's
    # token is gumbel_sample's for that row (the verification stream), a one-hot rejection is p
    # less the rejected token under the same noise, bit for bit.
    config(block=8)
    Q, S, V = 8, 2, 19
    args = _requests(device, Q, S, V, V, seed0=5, temps=(0.8, 1.0, 1.3))
    _make_certain(args, range(Q // 2), range(S))  # half the requests reach their bonus row
    target, draft, tokens, cu, idx, temp, seed, pos = args
    for d in (draft, None):
        out = rejection_sample(target, d, tokens, cu, idx, temp, seed, pos)
        acc = out.num_accepted.to(torch.int64)
        emitted = out.tokens.gather(1, acc[:, None])[:, 0]
        bonus = acc == S
        assert bonus.any() and (~bonus).any()
        rows = cu[:-1] + acc
        assert torch.equal(emitted[bonus], gumbel_sample(target[rows], idx, temp, seed, pos[rows])[bonus])
        if d is None:
            assert torch.equal(emitted, resample(target, None, tokens, acc, cu, idx, temp, seed, pos))


@pytest.mark.parametrize("use_out", [False, True])
def test_greedy_is_torch_argmax_with_nans_infs_and_ties(device, use_out, config):
    # Temperature 0: a draft is accepted iff it is torch.argmax of its row (lowest index on ties,
    # the first NaN of a row that has one), and the emitted token is that argmax. Drafts set to
    # the argmax of rows with NaN, +inf, -inf only, and ties spread over several units.
    from tests.kernels.test_gumbel_sample import _greedy_rows_with_nans

    config(block=8, unit_blocks=2)
    V = 45
    rows = _greedy_rows_with_nans(V, torch.Generator().manual_seed(43))
    Q, S = rows.shape[0], 2
    N = Q * (S + 1)
    target = torch.randn(N, V, generator=torch.Generator().manual_seed(44))
    target[0::3] = rows
    target[1::3] = rows.roll(1, 0)
    target[2::3] = rows.roll(2, 0)
    tokens = torch.stack([rows.argmax(-1), rows.roll(1, 0).argmax(-1)], 1)
    tokens[1::2, 1] = (tokens[1::2, 1] + 1) % V  # every other request rejects step 1
    cu = torch.arange(0, N + 1, S + 1)
    args = [t.to(device) for t in (target, torch.randn(Q, S, V), tokens, cu, torch.arange(Q), torch.zeros(Q),
                                   torch.arange(Q, dtype=torch.int64), torch.arange(N))]
    kw = {}
    if use_out:
        kw = dict(out_tokens=torch.full((Q, S + 1), 99, dtype=torch.int64, device=device),
                  out_num_accepted=torch.full((Q,), 99, dtype=torch.int32, device=device))
    out = rejection_sample(*args, **kw)
    want_acc = torch.tensor([2, 1] * Q)[:Q]
    assert torch.equal(out.num_accepted.cpu(), want_acc.int())
    stop = cu[:-1] + want_acc
    assert torch.equal(out.tokens.gather(1, want_acc[:, None].to(device))[:, 0].cpu(), target[stop].argmax(-1))
    if use_out:
        assert out.tokens is kw["out_tokens"] and out.num_accepted is kw["out_num_accepted"]


def test_nan_and_minus_inf_rows(device, config):
    # A NaN makes a sampled row's log-sum-exp undefined: the step is rejected and the token
    # drawn from p over the row's numbers (gumbel_sample's draw of that row); an all-NaN or all
    # -inf row returns token 0 (sampled) or torch.argmax (greedy); ids always in range.
    config(block=8)
    Q, S, V = 6, 1, 13
    target, draft, tokens, cu, idx, temp, seed, pos = _requests(device, Q, S, V, V, seed0=7,
                                                                temps=(1.0, 1.0, 1.0, 0.7, 0.0, 0.0))
    rows = cu[:-1]
    target[rows[0], 4] = float("nan")  # a NaN in a sampled target row
    draft[idx[1], 0, 6] = float("nan")  # a NaN in the draft row
    target[rows[2]] = float("-inf")  # no finite logit
    target[rows[3]] = float("nan")
    target[rows[4]] = float("nan")  # greedy: argmax 0 (the first NaN)
    out = rejection_sample(target, draft, tokens, cu, idx, temp, seed, pos)
    assert (out.num_accepted[:4] == 0).all()
    want = gumbel_sample(target[rows[:2]], idx[:2], temp, seed, pos[rows[:2]])
    assert torch.equal(out.tokens[:2, 0], want) and (out.tokens[:2, 0] != 4).all()
    assert out.tokens[2, 0].item() == 0 and out.tokens[3, 0].item() == 0 and out.tokens[4, 0].item() == 0
    assert ((out.tokens[:, :1] >= 0) & (out.tokens[:, :1] < V)).all()


def test_independent_of_batch_composition(device, config):
    config(block=8)
    Q, S, V = 7, 3, 23
    args = _requests(device, Q, S, V, V, seed0=9, lengths=[3, 2, 0, 3, 1, 3, 2])
    target, draft, tokens, cu, idx, temp, seed, pos = args
    full = rejection_sample(*args)
    keep = [5, 1, 3]
    rows = torch.cat([torch.arange(int(cu[r]), int(cu[r + 1])) for r in keep]).to(device)
    lengths = [int(cu[r + 1] - cu[r]) for r in keep]
    cu2 = torch.tensor([0] + list(np.cumsum(lengths))).to(device)
    slots = torch.tensor([4, 0, 9], device=device)
    R2 = 12
    draft2 = torch.zeros(R2, S, V, device=device)
    temp2 = torch.ones(R2, device=device)
    seed2 = torch.zeros(R2, dtype=torch.int64, device=device)
    old = idx[keep]
    draft2[slots], temp2[slots], seed2[slots] = draft[old], temp[old], seed[old]
    part = rejection_sample(target[rows], draft2, tokens[keep], cu2, slots, temp2, seed2, pos[rows])
    assert torch.equal(part.tokens, full.tokens[keep]) and torch.equal(part.num_accepted, full.num_accepted[keep])


def test_layouts_do_not_change_results(device, config):
    config(block=16, unit_blocks=1)
    Q, S, V = 2, 2, 11
    target, draft, tokens, cu, idx, temp, seed, pos = _requests(device, Q, S, V, 13, seed0=11)
    assert_layout_invariant(rejection_sample, target, draft, tokens, cu, idx, temp, seed, pos, draft_vocab_size=V)
    assert_layout_invariant(rejection_sample, target, None, tokens, cu, idx, temp, seed, pos)


def test_writes_only_its_outputs_through_their_strides(device, config):
    # Outputs handed in as views of larger buffers (a column slice, a transposed view): the kernel
    # writes [Q, S + 1] and [Q] through their strides and nothing in between.
    config(block=8)
    Q, S, V = 5, 2, 11
    args = _requests(device, Q, S, V, V, seed0=13)
    want = rejection_sample(*args)
    wide = torch.full((Q, S + 4), -5, dtype=torch.int64, device=device)
    tall = torch.full((Q, 3), -5, dtype=torch.int32, device=device)
    out = rejection_sample(*args, out_tokens=wide[:, 1:S + 2], out_num_accepted=tall[:, 1])
    assert torch.equal(out.tokens, want.tokens) and torch.equal(out.num_accepted, want.num_accepted)
    assert (wide[:, 0] == -5).all() and (wide[:, S + 2:] == -5).all()
    assert (tall[:, 0] == -5).all() and (tall[:, 2] == -5).all()
    trans = torch.full((S + 1, Q), -5, dtype=torch.int64, device=device)
    out = rejection_sample(*args, out_tokens=trans.t())
    assert torch.equal(trans.t(), want.tokens)


def test_refuses_inconsistent_inputs(device):
    Q, S, V = 4, 2, 9
    target, draft, tokens, cu, idx, temp, seed, pos = _requests(device, Q, S, V, V, seed0=15)
    with pytest.raises(ValueError, match="cu_num_logits"):
        rejection_sample(target, draft, tokens, cu[:-1], idx, temp, seed, pos)
    with pytest.raises(ValueError, match="draft_vocab_size"):
        rejection_sample(target, draft, tokens, cu, idx, temp, seed, pos, draft_vocab_size=V + 1)
    with pytest.raises(ValueError, match="out_tokens"):
        rejection_sample(target, draft, tokens, cu, idx, temp, seed, pos,
                         out_tokens=torch.empty(Q, S, dtype=torch.int64, device=device))
    with pytest.raises(StrideGuardError, match="draft_logits dim 1"):
        rejection_sample(target, draft[:, :1], tokens, cu, idx, temp, seed, pos)  # fewer steps than S
    with pytest.raises(StrideGuardError, match="out_tokens"):
        rejection_sample(target, draft, tokens, cu, idx, temp, seed, pos,
                         out_tokens=torch.empty(1, S + 1, dtype=torch.int64, device=device).expand(Q, S + 1))
    with pytest.raises(StrideGuardError, match="pos"):
        rejection_sample(target, draft, tokens, cu, idx, temp, seed, pos[:-1])
    with pytest.raises(ValueError, match="0 columns"):
        rejection_sample(target[:, :0], None, tokens, cu, idx, temp, seed, pos)


def test_empty_batch_and_requests_without_drafts(device):
    Q, S, V = 3, 2, 9
    target, draft, tokens, cu, idx, temp, seed, pos = _requests(device, Q, S, V, V, seed0=17)
    out = rejection_sample(target, draft, tokens[:0], cu[:1], idx[:0], temp, seed, pos)
    assert out.tokens.shape == (0, S + 1) and out.num_accepted.shape == (0,)
    # S = 0: every request samples its bonus row alone, as gumbel_sample.
    rows = torch.arange(Q, device=device)
    out = rejection_sample(target[:Q], draft, tokens[:, :0], torch.arange(Q + 1, device=device), idx, temp, seed,
                           pos[:Q])
    assert (out.num_accepted == 0).all()
    assert torch.equal(out.tokens[:, 0], gumbel_sample(target[rows], idx, temp, seed, pos[rows]))


# ------------------------------------------- (2) the exchange across programs (the GPU path)


def _exchange_in_threads(call_args, kwargs, block, unit_blocks, splits, workers):
    """Run rejection_sample's launch as its GPU path does: the EXCHANGE kernel, ``splits``
    programs per request taking (request, chunk) from the ticket dispenser, executed by
    ``workers`` threads (at most ``workers`` programs resident at once). Returns (tokens,
    num_accepted, slots, done, num_splits) with fresh scratch and outputs (poisoned: the stats and
    winner slots hold random bits, the outputs 77). Fails on a deadlock or a raised error."""
    from triton.runtime import interpreter

    launches = []

    class Capture:
        def __getitem__(self, grid):
            return lambda *args, **meta: launches.append((grid, args, meta))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rej_mod, "_rejection_kernel", Capture())
        mp.setattr(rej_mod, "launch_config", lambda *a, **k: rej_mod.LaunchConfig(block, 4, unit_blocks, splits))
        rejection_sample(*call_args, **kwargs)
    (grid, args, meta), = launches
    kernel = rej_mod._rejection_kernel
    at = {name: i for i, name in enumerate(kernel.arg_names)}
    args = list(args)
    Q, units = args[at["num_reqs"]], args[at["num_units"]]
    per = -(-units // splits)
    num_splits = -(-units // per)
    args[at["units_per_program"]], args[at["num_splits"]] = per, num_splits
    g = torch.Generator().manual_seed(99)
    args[at["stats_ptr"]] = torch.randint(-2**31, 2**31 - 1, (Q * 2 * units * 4,), dtype=torch.int32, generator=g)
    best = args[at["best_ptr"]] = torch.randint(-2**63, 2**63 - 1, (Q * units,), dtype=torch.int64, generator=g)
    done = args[at["done_ptr"]] = torch.zeros(((Q + 1) * 32,), dtype=torch.int32)
    toks = args[at["out_tokens_ptr"]] = torch.full_like(args[at["out_tokens_ptr"]], 77)
    acc = args[at["out_accepted_ptr"]] = torch.full_like(args[at["out_accepted_ptr"]], 77)
    args[at["out_tokens_stride_0"]], args[at["out_tokens_stride_1"]] = toks.stride()
    meta = dict(meta, EXCHANGE=True)
    pending = list(range(Q * num_splits))
    lock, errors = threading.Lock(), []

    def resident():
        while True:
            with lock:
                if not pending:
                    return
                pending.pop()
            try:
                kernel[(1,)](*args, **meta)
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
    return toks, acc, best, done, num_splits


@pytest.mark.skipif(not _INTERPRETED, reason="interpreter programs as threads; a GPU runs them concurrently "
                    "(test_gpu_splits_draw_the_same_tokens)")
@pytest.mark.parametrize("splits, unit_blocks, vd, one_hot, workers", [
    (3, 1, 37, False, 3),  # V_d inside a unit; units [0, 8) .. [56, 61)
    (2, 2, 32, False, 2),  # V_d at a unit boundary
    (4, 1, 61, True, 4),  # one-hot drafts; the last chunk a partial block
    (8, 1, 45, False, 24),  # every program of a request resident at once, and more
])
def test_exchange_across_programs_is_one_program_bit_for_bit(device, splits, unit_blocks, vd, one_hot, workers,
                                                              config):
    # Several programs per request exchanging their units' log-sum-exps (and greedy maxima) round
    # after round, then drawing from their own chunks and merging: the counts and tokens are those
    # of one program per request, bit for bit (each unit is reduced by the same code whoever owns
    # it, and merged in one order), for residual, one-hot, bonus and greedy requests in one batch,
    # with up to three rounds. The counters and the ticket dispenser are back at rest, so a second
    # launch (a CUDA-graph replay) needs no reset.
    Q, S, V, W = 8, 3, 61, 64
    args = _requests(device, Q, S, V, W, seed0=71, lengths=[3, 1, 3, 0, 2, 3, 3, 2])
    if one_hot:
        args[1], vd = None, None
    _make_certain(args, [0, 2], [0, 1])  # three rounds for these two
    config(block=8, unit_blocks=unit_blocks)
    want = rejection_sample(*args, draft_vocab_size=vd)
    assert want.num_accepted.max() >= 2 and want.tokens[:, 0].unique().numel() >= Q // 2
    toks, acc, _, done, num_splits = _exchange_in_threads(args, dict(draft_vocab_size=vd), 8, unit_blocks, splits,
                                                          workers)
    assert num_splits == splits
    assert torch.equal(acc, want.num_accepted) and torch.equal(toks, want.tokens), (toks, want.tokens)
    assert (done == 0).all()


@pytest.mark.skipif(not _INTERPRETED, reason="interpreter programs as threads")
def test_exchange_with_empty_units_and_no_residual_mass(device, config):
    # Units with no finite logit publish (the most negative finite float32, 0) and must add
    # nothing to the merged log-sum-exp (target -inf over [48, 61), the draft over [0, 24)); a
    # NaN draft row (no residual mass: the last program's fallback walks the row, drawing from p)
    # among them. Against one program per request.
    Q, S, V, W = 6, 2, 61, 61
    args = _requests(device, Q, S, V, W, seed0=73, temps=(1.0, 0.7))
    target, draft = args[0], args[1]
    target[:, 48:] = -math.inf
    draft[:, :, :24] = -math.inf
    draft[args[4][2], 0, 30] = float("nan")
    config(block=8, unit_blocks=1)
    want = rejection_sample(*args)
    assert want.num_accepted[2].item() == 0
    rows = args[3][2:3]
    assert want.tokens[2, 0].item() == gumbel_sample(target[rows], args[4][2:3], args[5], args[6],
                                                     args[7][rows]).item()
    toks, acc, *_ = _exchange_in_threads(args, {}, 8, 1, 3, 3)
    assert torch.equal(acc, want.num_accepted) and torch.equal(toks, want.tokens)
    _assert_reference(want, args, at_least=Q - 1)


@pytest.mark.gpu
@pytest.mark.parametrize("device", GPU)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_splits_draw_the_same_tokens(device, dtype, monkeypatch):
    # On the GPU the exchange runs for real: 1 to 16 programs per request (16: every unit of 2,048
    # columns its own program; 96 is capped there) must give the counts and tokens of the default
    # plan (launch_config), bit for bit, at a real vocabulary; twice, so the scratch is back at rest.
    # 24 requests of 2 (48 programs) take their chunks by program id, of 7 or 16 by ticket.
    Q, S, V = 24, 3, 32_000
    g = torch.Generator().manual_seed(5)
    target = (torch.randn(Q * (S + 1), V, generator=g) * 2).to(dtype)
    draft = (target.view(Q, S + 1, V)[:, :S].float() + torch.randn(Q, S, V, generator=g) * 0.3).to(dtype)
    tokens = torch.stack([torch.multinomial(torch.softmax(draft[:, i].float(), -1), 1, generator=g)[:, 0]
                          for i in range(S)], 1)
    temp = torch.tensor([1.0, 0.6, 0.0, 1.4]).repeat(Q)[:Q]
    args = [t.to(device) for t in (target, draft, tokens, torch.arange(0, Q * (S + 1) + 1, S + 1), torch.arange(Q),
                                   temp, torch.randint(0, 2**62, (Q,), generator=g),
                                   torch.randint(0, 2**40, (Q * (S + 1),), generator=g))]
    want = rejection_sample(*args)
    assert want.num_accepted.float().mean() > 1.0  # multi-round verification exercised
    for splits in (1, 2, 7, 16, 96):
        monkeypatch.setattr(rej_mod, "launch_config", lambda *a, s=splits: rej_mod.LaunchConfig(1024, 4, 2, s))
        for _ in range(2):
            got = rejection_sample(*args)
            assert torch.equal(got.num_accepted, want.num_accepted), splits
            assert torch.equal(got.tokens, want.tokens), splits


# ----------------------------------------------------------------- (3) vLLM's tests, our form
#
# vLLM's tests/v1/spec_decode/test_rejection_sampler_utils.py (vllm-project/vllm at commit
# 0822b17a5fbdb70b87c755232f3de0dff8a81b72, the rejection_sample of vLLM 0.33.0's Model Runner V2),
# the tests whose feature this API has, rewritten for it (../shared/peer/tests/
# test_ported_vllm_rejection.py is the reference port to resample): every test of that file but
# FLy windows, synthetic acceptance rates and block verification. Their inputs in our API: the
# target logits are pre-temperature (vLLM's arrive divided by it, so the same p is
# softmax(target / T)); a request's drafts are a row of draft_tokens (vLLM's flat draft_sampled
# holds step i at index i + 1 of the request's span); num_accepted is vLLM's num_sampled - 1.
# vLLM's distribution check (chi-square below df + 10 sqrt(2 df)) is replaced by this file's
# p-value threshold. Sizes: vLLM's on a GPU; on the CPU interpreter a smoke size (what the
# reference port's PORT_SMOKE=1 runs), one block per row.

SMALL = _INTERPRETED
VOCAB_SIZE = 64 if SMALL else 4096
TRIALS_PER_BIN = 2 if SMALL else 10


def _cpu_config(device, config, block=64):
    """One block per row on the CPU (the interpreter's cost grows with the blocks a program walks);
    the GPU runs the shipped launch_config."""
    if device.type == "cpu":
        config(block=block, unit_blocks=1)


def _trials(target_1d, draft_1d, K, temperature, num_trials, seed=0):
    """vLLM's _build_rejection_sample_inputs in our API: ``num_trials`` requests of K drafts over one
    target row and one draft row (broadcast, stride 0: read through the strides), the drafts drawn
    from the draft's softmax after temperature (torch.multinomial, independent of the sampler's
    noise by construction), seeds 0, 1, ..., positions 0, 1, ... Returns a dict of our arguments."""
    device = target_1d.device
    V = target_1d.shape[0]
    N = num_trials * (K + 1)
    scaled = draft_1d.float() / temperature if temperature > 0 else draft_1d.float()
    g = torch.Generator(device=device).manual_seed(seed)
    tokens = torch.multinomial(torch.softmax(scaled, 0), num_trials * K, replacement=True, generator=g)
    return dict(
        target_logits=target_1d.unsqueeze(0).expand(N, V),
        draft_logits=draft_1d.view(1, 1, V).expand(num_trials, K, V),
        draft_tokens=tokens.view(num_trials, K),
        cu_num_logits=torch.arange(num_trials + 1, device=device) * (K + 1),
        idx_mapping=torch.arange(num_trials, dtype=torch.int32, device=device),
        temperature=torch.full((num_trials,), temperature, dtype=torch.float32, device=device),
        seed=torch.arange(num_trials, dtype=torch.int64, device=device),
        pos=torch.arange(N, device=device),
    )


def _sample(inputs):
    return rejection_sample(*(inputs[k] for k in ("target_logits", "draft_logits", "draft_tokens", "cu_num_logits",
                                                   "idx_mapping", "temperature", "seed", "pos")))


def _assert_positions_follow(result, probs, K, label=""):
    """Every emitted position ``j`` (requests with ``num_accepted >= j``) against ``probs``."""
    tokens, acc = result.tokens.cpu(), result.num_accepted.cpu()
    V = probs.numel()
    for j in range(K + 1):
        drawn = tokens[acc >= j, j]
        assert ((drawn >= 0) & (drawn < V)).all()
        if drawn.numel() < 20:
            continue
        stat, pv, dof = chi2_pvalue(np.bincount(drawn.numpy(), minlength=V), probs.double().cpu().numpy())
        assert pv > ALPHA, (label, j, drawn.numel(), stat, dof, pv)


@pytest.mark.parametrize("K, temperature", [(1, 0.6), (3, 0.6), (1, 1.0), (3, 1.0)])
@pytest.mark.parametrize("draft_dtype", [torch.float32, torch.bfloat16])
def test_stochastic_rejection_sample(device, K, temperature, draft_dtype, config):
    # vLLM: many independent trials from one target and one draft distribution; every emitted
    # position follows p (draft logits stored in float32 or the draft head's bfloat16 alike).
    _cpu_config(device, config)
    torch.manual_seed(42)
    target_1d = torch.randn(VOCAB_SIZE, device=device)
    draft_1d = torch.randn(VOCAB_SIZE, device=device).to(draft_dtype)
    result = _sample(_trials(target_1d, draft_1d, K, temperature, TRIALS_PER_BIN * VOCAB_SIZE))
    _assert_positions_follow(result, torch.softmax(target_1d.double() / temperature, 0), K)


NARROW_VOCAB_SIZE = 16
NARROW_NUM_TRIALS = 200 if SMALL else 200_000


def _gumbel_drafted(inputs, draft_1d, K, is_drafting=True):
    """vLLM's _gumbel_drafted_tokens: the drafts drawn by gumbel_sample on the same (seed, pos)
    entries that verify them (step i of trial t: pos[t * (K + 1) + i]), from the draft stream."""
    Q = inputs["draft_tokens"].shape[0]
    V = draft_1d.shape[0]
    dev = draft_1d.device
    rows = (torch.arange(Q, device=dev)[:, None] * (K + 1) + torch.arange(K, device=dev)).view(-1)
    return gumbel_sample(draft_1d.unsqueeze(0).expand(Q * K, V).float(), inputs["idx_mapping"].repeat_interleave(K),
                         inputs["temperature"], inputs["seed"], inputs["pos"][rows],
                         is_drafting=is_drafting).view(Q, K)


@pytest.mark.parametrize("K", [1, 3])
def test_gumbel_drafted_rejection_sample_is_unbiased(device, K, config):
    # vLLM: drafts from gumbel_sample keyed by the same (seed, pos) that verification uses must not
    # share its noise. A draft opposite to the target (q from -logits) rejects ~73% of drafts, so
    # most trials reach the residual draw, where a shared stream would under-weight the tokens the
    # draft ranked high. On a GPU (200,000 trials) the same drafts drawn from the verification
    # stream (is_drafting=False) must fail the same test at position 0: the test has the power.
    _cpu_config(device, config, block=16)
    torch.manual_seed(42)
    target_1d = torch.randn(NARROW_VOCAB_SIZE, device=device)
    draft_1d = -target_1d
    inputs = _trials(target_1d, draft_1d, K, 1.0, NARROW_NUM_TRIALS)
    inputs["draft_tokens"] = _gumbel_drafted(inputs, draft_1d, K)
    p = torch.softmax(target_1d.double(), 0)
    _assert_positions_follow(_sample(inputs), p, K)
    if not SMALL:
        inputs["draft_tokens"] = _gumbel_drafted(inputs, draft_1d, K, is_drafting=False)
        out = _sample(inputs)
        _, pv, _ = chi2_pvalue(np.bincount(out.tokens[:, 0].cpu().numpy(), minlength=NARROW_VOCAB_SIZE),
                               p.cpu().numpy())
        assert pv < ALPHA, pv


@pytest.mark.parametrize("K", [1, 3])
def test_greedy_rejection_sample(device, K, config):
    # vLLM: temperature 0 emits the target argmax at every emitted position.
    _cpu_config(device, config)
    torch.manual_seed(42)
    target_1d = torch.randn(VOCAB_SIZE, device=device)
    inputs = _trials(target_1d, torch.randn(VOCAB_SIZE, device=device), K, 0.0, (16 if SMALL else TRIALS_PER_BIN)
                     * VOCAB_SIZE // (4 if SMALL else 1))
    inputs["draft_tokens"][::2, 0] = int(target_1d.argmax())  # some acceptances (vLLM's drafts rarely are)
    out = _sample(inputs)
    emitted = torch.arange(K + 1, device=device)[None, :] <= out.num_accepted[:, None]
    assert (out.tokens[emitted] == int(target_1d.argmax())).all()
    assert (out.num_accepted[::2] >= 1).all() and (out.tokens[~emitted] == PLACEHOLDER).all()


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_all_nan_target_logits_in_range(device, temperature, config):
    # vLLM (a regression test of NaN breaking tl.argmax's index bounds over padded vocabulary
    # blocks): all-NaN target rows over a vocabulary of several blocks (here: units, and several
    # programs per request on a GPU) give in-range ids and counts.
    if device.type == "cpu":
        config(block=64, unit_blocks=2)
    torch.manual_seed(0)
    V = 300 if SMALL else 20_000
    inputs = _trials(torch.full((V,), float("nan"), device=device), torch.randn(V, device=device), 1, temperature, 4)
    out = _sample(inputs)
    assert ((out.num_accepted >= 0) & (out.num_accepted <= 1)).all()
    emitted = torch.arange(2, device=device)[None, :] <= out.num_accepted[:, None]
    assert ((out.tokens[emitted] >= 0) & (out.tokens[emitted] < V)).all()


def test_placeholder_draft_token_rejected(device, config):
    # vLLM: a placeholder draft (-1) is rejected, without reading out of bounds, and a token is
    # drawn in its place.
    _cpu_config(device, config)
    torch.manual_seed(0)
    temperature = 0.6
    inputs = _trials(torch.randn(VOCAB_SIZE, device=device), torch.randn(VOCAB_SIZE, device=device), 1, temperature,
                     16 if SMALL else 64)
    inputs["draft_tokens"][:] = -1
    out = _sample(inputs)
    assert (out.num_accepted == 0).all()
    assert ((out.tokens[:, 0] >= 0) & (out.tokens[:, 0] < VOCAB_SIZE)).all() and (out.tokens[:, 1] == -1).all()


def test_greedy_placeholder_emits_target_argmax(device, config):
    # vLLM: greedy requests whose first draft is accepted and whose later drafts are placeholders
    # emit the argmax at the placeholder's position (no uninitialised slot).
    _cpu_config(device, config)
    torch.manual_seed(0)
    K = 3
    target_1d = torch.randn(VOCAB_SIZE, device=device)
    inputs = _trials(target_1d, torch.randn(VOCAB_SIZE, device=device), K, 0.0, 16 if SMALL else 512)
    inputs["draft_tokens"][:, 0] = int(target_1d.argmax())
    inputs["draft_tokens"][:, 1:] = -1
    out = _sample(inputs)
    assert (out.num_accepted == 1).all()
    assert (out.tokens[:, :2] == int(target_1d.argmax())).all() and (out.tokens[:, 2:] == -1).all()


def test_placeholder_blocks_later_draft_tokens(device, config):
    # vLLM: a placeholder need not be the last draft; nothing at or after it is accepted, even a
    # valid draft that would be (draft == target: accepted with probability ~1).
    _cpu_config(device, config)
    torch.manual_seed(0)
    K = 3
    draft_1d = torch.randn(VOCAB_SIZE, device=device)
    inputs = _trials(draft_1d.clone(), draft_1d, K, 1.0, (16 if SMALL else 4 * VOCAB_SIZE))
    inputs["draft_tokens"][:, 1] = -1
    out = _sample(inputs)
    assert (out.num_accepted <= 1).all(), "accepted a draft token past a placeholder"
    assert (out.num_accepted == 1).float().mean().item() > 0.9


@pytest.mark.parametrize("has_draft_logits", [True, False])
def test_chunked_requests_match_full_batch(device, has_draft_logits, config):
    # vLLM: requests verified in two chunks get what the whole batch gets, with a padded (strided)
    # target layout.
    _cpu_config(device, config, block=128)
    torch.manual_seed(7)
    Q, K, V = 5, 3, 257
    inputs = _trials(torch.randn(V, device=device), torch.randn(V, device=device), K, 0.6, Q)
    padded = torch.empty(Q * (K + 1), V + 3, device=device)
    padded[:, :V].copy_(inputs["target_logits"])
    inputs["target_logits"] = padded[:, :V]
    assert inputs["target_logits"].stride(-1) == 1 and not inputs["target_logits"].is_contiguous()
    if not has_draft_logits:
        inputs["draft_logits"] = None
    full = _sample(inputs)
    parts = []
    for start, end in ((0, 2), (2, 5)):
        lo, hi = start * (K + 1), end * (K + 1)
        chunk = dict(inputs)
        for name in ("target_logits", "pos"):
            chunk[name] = inputs[name][lo:hi]
        chunk["draft_tokens"] = inputs["draft_tokens"][start:end]
        chunk["cu_num_logits"] = inputs["cu_num_logits"][start:end + 1] - lo
        chunk["idx_mapping"] = inputs["idx_mapping"][start:end]
        parts.append(_sample(chunk))
    assert torch.equal(torch.cat([p.num_accepted for p in parts]), full.num_accepted)
    assert torch.equal(torch.cat([p.tokens for p in parts]), full.tokens)


# -------------------------------------------------------------- (4) distribution against theory

# Fixed target and draft logits over 8 tokens, far apart (total variation 0.62 at T = 0.9):
# drafts from q are accepted with probability alpha = sum_x min(p, q) = 0.379 per step.
P_LOGITS = [2.0, 1.0, 0.0, -1.0, 0.5, 1.5, -0.5, 0.2]
Q_LOGITS = [0.0, 2.0, 1.0, 0.5, -1.0, 0.3, 1.2, -0.4]


def _theory_counts_probs(alpha, K):
    """P(num_accepted = k): steps accepted independently with probability alpha, stopping at the
    first rejection; all K accepted with probability alpha**K."""
    return np.array([alpha**k * (1 - alpha) for k in range(K)] + [alpha**K])


@pytest.mark.parametrize("one_hot", [False, True])
def test_acceptance_rate_and_emitted_tokens_follow_the_theory(device, one_hot, config):
    # Q requests of K = 3 drafts drawn from q (torch.multinomial, fixed seed) against one target
    # row p, temperature 0.9. Theory (Leviathan et al., 2023, appendix A.1): each step accepts with
    # probability alpha = sum_x q(x) min(1, p(x) / q(x)) = sum_x min(p, q) (one-hot q, a point
    # mass on the draft: alpha = sum_x q(x) p(x)), independently across steps here, so the
    # accepted count is truncated-geometric; and every emitted position is distributed as p.
    # Chi-square of the count histogram against that law and of each position's tokens against p,
    # p-value > ALPHA. Power on the same draws: the count histogram against the law of a wrong
    # rule (the inverted ratio min(1, q / p); for one-hot drafts, the full-q rule min(1, p / q)),
    # and position 0 against q, are rejected. The GPU runs 200,000
    # requests at the same fixed seeds.
    _cpu_config(device, config, block=16)
    K, T = 3, 0.9
    Q = 400 if SMALL else 200_000
    pl, ql = torch.tensor(P_LOGITS, device=device), torch.tensor(Q_LOGITS, device=device)
    p = torch.softmax(pl.double() / T, 0)
    q = torch.softmax(ql.double() / T, 0)
    inputs = _trials(pl, ql, K, T, Q, seed=3)
    if one_hot:
        inputs["draft_logits"] = None
        # wrong: the rule for the proposer's own q, min(1, p / q)
        alpha, wrong = float((q * p).sum()), float(torch.minimum(p, q).sum())
    else:
        alpha, wrong = float(torch.minimum(p, q).sum()), float((q * (q / p).clamp(max=1)).sum())
    out = _sample(inputs)
    counts = np.bincount(out.num_accepted.cpu().numpy(), minlength=K + 1)
    assert counts.sum() == Q
    stat, pv, dof = chi2_pvalue(counts, _theory_counts_probs(alpha, K))
    assert pv > ALPHA, (counts, alpha, stat, pv)
    _, pv_wrong, _ = chi2_pvalue(counts, _theory_counts_probs(wrong, K))
    assert pv_wrong < ALPHA, (counts, wrong, pv_wrong)
    _assert_positions_follow(out, p.float(), K)
    _, pv_q, _ = chi2_pvalue(np.bincount(out.tokens[:, 0].cpu().numpy(), minlength=8), q.cpu().numpy())
    assert pv_q < ALPHA


@pytest.mark.gpu
@pytest.mark.parametrize("device", GPU)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_distribution_at_a_real_vocabulary(device, dtype):
    # V = 32,000, 65,536 requests of 3 drafts from q on the shipped launch configuration (several
    # programs per request exchanging their units): the accepted counts follow the truncated
    # geometric law of alpha = sum min(p, q) (computed in float64 from the logits as stored), and
    # every emitted position follows p, categories pooled to >= 5 expected draws per bin.
    V, K, T, Q = 32_000, 3, 1.0, 65_536
    g = torch.Generator().manual_seed(11)
    base = torch.randn(V, generator=g) * 2
    pl = base.to(dtype).to(device)
    ql = (base + torch.randn(V, generator=g)).to(dtype).to(device)
    p = torch.softmax(pl.double() / T, 0)
    q = torch.softmax(ql.double() / T, 0)
    out = _sample(_trials(pl, ql, K, T, Q, seed=5))
    counts = np.bincount(out.num_accepted.cpu().numpy(), minlength=K + 1)
    alpha = float(torch.minimum(p, q).sum())
    stat, pv, _ = chi2_pvalue(counts, _theory_counts_probs(alpha, K))
    print(f"{dtype} alpha={alpha:.4f} counts={counts.tolist()} chi2={stat:.1f} p={pv:.3g}")
    assert pv > ALPHA, (counts, alpha, stat, pv)
    _assert_positions_follow(out, p, K, str(dtype))


def test_launch_plan_policy(monkeypatch):
    # The shipped plan on a 132-multiprocessor GPU (launch_config, _plan): 1,024 columns / 8 warps,
    # units of 2,048; about four programs per multiprocessor at small batches, chunks of at most
    # 8,192 columns (float32) / 16,384 (16-bit) at large ones, from 64 to 256 requests units of
    # 4,096 and chunks of at most 32,768 columns; never more programs per request than
    # multiprocessors or units (the exchange's residency bound); the program id instead of tickets
    # only while the whole grid has one program per multiprocessor at most; a 64-register cap;
    # and on the CPU one program per request, no exchange, no cap.
    monkeypatch.setattr(rej_mod, "sm_count", lambda device: 132)
    cuda, cpu = torch.device("cuda"), torch.device("cpu")

    def plan(T, V, dtype, device=cuda):
        return rej_mod._plan(rej_mod.launch_config, lambda *a: False, rej_mod.max_registers, T, 1, V, dtype, device,
                             True, False)

    for dtype, narrow in ((torch.float32, 8192), (torch.bfloat16, 16384)):
        for V in (32_000, 151_936, 262_144):
            for T in (1, 8, 64, 256, 1024):
                p = plan(T, V, dtype)
                unit, columns = (4096, 32768) if 64 <= T <= 256 else (2048, narrow)
                assert p.num_units == -(-V // unit) and p.meta["BLOCK"] == 1024 and p.meta["num_warps"] == 8
                assert p.meta["UNIT_BLOCKS"] == unit // 1024
                assert 1 <= p.num_splits <= min(132, p.num_units)
                assert p.units_per_program * unit <= columns, (dtype, V, T)
                assert (p.num_splits - 1) * p.units_per_program < p.num_units <= p.num_splits * p.units_per_program
                assert p.meta["TICKETS"] == (T * p.num_splits > 132) and p.meta["maxnreg"] == 64
                assert p.grid == (T * p.num_splits, 1) and p.exchange == (p.num_splits > 1)
    assert plan(1, 262_144, torch.float32).num_splits == 128 and not plan(1, 262_144, torch.float32).meta["TICKETS"]
    assert plan(1024, 262_144, torch.float32).num_splits == 32 and plan(1024, 262_144, torch.bfloat16).num_splits == 16
    assert plan(1, 32_000, torch.float32).num_splits == 16  # one unit each
    p = plan(7, 262_144, torch.float32, cpu)
    assert p.num_splits == 1 and not p.exchange and "maxnreg" not in p.meta and "TICKETS" not in p.meta
