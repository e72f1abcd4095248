"""Under Triton's CPU interpreter the kernels compute in every lane, masked or not (the noise's bit
tricks make huge floats in lanes a select drops); the launchers keep numpy quiet about it, only
while interpreted, and leave the caller's numpy settings as they were."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="the CPU interpreter only")


def test_a_call_warns_nothing_and_leaves_numpy_as_it_was():
    from guarded_kernels import gumbel_sample

    before = np.geterr()
    logits = torch.randn(2, 300)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any RuntimeWarning from numpy fails the call
        tokens = gumbel_sample(logits, torch.arange(2, dtype=torch.int32), torch.tensor([1.0, 0.0]),
                               torch.tensor([1, 2]), torch.tensor([0, 1]))
    assert tokens[1] == logits[1].argmax()
    assert np.geterr() == before
