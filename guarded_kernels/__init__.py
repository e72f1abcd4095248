"""Reference Triton kernels that address every tensor through its own strides and guard
every launch: Gumbel-max sampling, speculative-decoding residual resampling, and the whole
speculative-decoding verification step (accept / reject, residual and bonus draws).

``gumbel_sample`` and ``resample`` are tuned for an H200; ``guarded_kernels.sample_reference``
and ``guarded_kernels.resample_reference`` are the same draws in a page each, to read and copy.
A launch plan (``sample_plan`` / ``resample_plan``) says how a call is launched."""

from guarded_kernels._common import Gpu
from guarded_kernels.rejection import PLACEHOLDER, RejectionResult, rejection_sample
from guarded_kernels.resample import ResamplePlan, resample, resample_plan
from guarded_kernels.sample import SamplePlan, gumbel_sample, sample_plan

__all__ = [
    "PLACEHOLDER", "Gpu", "RejectionResult", "ResamplePlan", "SamplePlan", "gumbel_sample", "rejection_sample",
    "resample", "resample_plan", "sample_plan",
]
