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


@pytest.fixture
def small_blocks(monkeypatch):
    """Force several blocks and several programs per row at the tests' small vocabularies, so the
    loop, the masked tail block and the one-launch cross-program merge are all exercised;
    ``exchange=True`` sends resample through its one-launch exchange path."""
    import importlib

    # `guarded_kernels.resample` the attribute is the function; the module is in sys.modules.
    resample_mod = importlib.import_module("guarded_kernels.resample")
    sample_mod = importlib.import_module("guarded_kernels.sample")

    def config(block, splits):
        def launch_config(num_rows, vocab_size, *args, **kwargs):
            return block, 4, splits

        return launch_config

    def apply(block=32, splits=3, exchange=False):
        monkeypatch.setattr(sample_mod, "launch_config", config(block, splits))
        monkeypatch.setattr(resample_mod, "launch_config", config(block, splits))
        # exchange: resample's one-launch path (PHASE 4) with the same chunks; the interpreter
        # runs it with one program per request (resample.exchange_config).
        monkeypatch.setattr(
            resample_mod, "exchange_config", lambda *a, **k: (block, 4, splits, "", "") if exchange else None
        )

    return apply


def pytest_collection_modifyitems(items):
    # The interpreter evaluates masked-out lanes too: -inf - -inf and log2(0) there are expected
    # (the kernels select them away), and numpy reports them as RuntimeWarnings.
    here = str(__import__("pathlib").Path(__file__).parent)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.filterwarnings("ignore::RuntimeWarning:triton.runtime.interpreter"))
