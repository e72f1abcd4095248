"""Shared fixtures of the layout tests."""

import pytest
import torch

from tests.testing.kernels import DEVICE


@pytest.fixture
def device():
    """Where kernels run: "cuda" on a GPU, else "cpu" (Triton's interpreter)."""
    return DEVICE


@pytest.fixture
def randn(device):
    """``randn(*shape, dtype=torch.float32)``: seeded normal values on the test device."""
    gen = torch.Generator().manual_seed(0)

    def make(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=gen).to(dtype=dtype, device=device)

    return make
