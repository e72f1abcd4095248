"""Kernel tests run on CUDA where it exists, else on the CPU through TRITON_INTERPRET=1
(set by tests/conftest.py). The same test bodies serve both; sizes are kept small for the
interpreter, which runs each program instance in Python."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

HAS_CUDA = torch.cuda.is_available()
DEVICE = "cuda" if HAS_CUDA else "cpu"


@pytest.fixture
def device():
    return torch.device(DEVICE)


class SmallPlans:
    """Launch plans for the tests' small vocabularies: several blocks and several programs per row,
    so the loop, the masked tail block and the cross-program merge all run. ``small_blocks(block,
    splits, exchange, **knobs)`` chooses them for the calls that follow; ``.sample`` and
    ``.resample`` call the kernels with the plan for their arguments' shape (``knobs``: fields of
    ``SamplePlan`` / ``ResamplePlan``, each applied where the plan has it)."""

    def __init__(self):
        self.knobs = {}
        self.exchange = False

    def __call__(self, block=32, splits=3, exchange=False, **knobs):
        self.knobs = dict(block=block, num_splits=splits, num_warps=4, **knobs)
        self.exchange = exchange

    def sample(self, logits, *args, use_fp64=False, **kwargs):
        from guarded_kernels import SamplePlan, gumbel_sample, sample_plan

        knobs = {k: v for k, v in self.knobs.items() if k in SamplePlan.__dataclass_fields__}
        plan = sample_plan(*logits.shape, logits.dtype, logits.device, use_fp64=use_fp64, **knobs)
        return gumbel_sample(logits, *args, use_fp64=use_fp64, plan=plan, **kwargs)

    def resample(self, target, draft, tokens, accepted, *args, use_fp64=False, **kwargs):
        from guarded_kernels import ResamplePlan, resample, resample_plan

        knobs = {k: v for k, v in self.knobs.items() if k in ResamplePlan.__dataclass_fields__}
        if use_fp64:
            knobs = {k: v for k, v in knobs.items() if k in ("block", "num_warps", "num_splits")}
        plan = resample_plan(accepted.shape[0], target.shape[1], target.dtype, target.device, use_fp64=use_fp64,
                             exchange=self.exchange and not use_fp64, **knobs)
        return resample(target, draft, tokens, accepted, *args, use_fp64=use_fp64, plan=plan, **kwargs)


@pytest.fixture
def small_blocks():
    """:class:`SmallPlans` for one test."""
    return SmallPlans()


def pytest_collection_modifyitems(items):
    # The interpreter evaluates masked-out lanes too: -inf - -inf and log2(0) there are expected
    # (the kernels select them away), and numpy reports them as RuntimeWarnings.
    here = str(__import__("pathlib").Path(__file__).parent)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.filterwarnings("ignore::RuntimeWarning:triton.runtime.interpreter"))
