"""Reference Triton kernels that address every tensor through its own strides and guard
every launch: Gumbel-max sampling, speculative-decoding residual resampling, and the whole
speculative-decoding verification step (accept / reject, residual and bonus draws)."""

from guarded_kernels.rejection import PLACEHOLDER, RejectionResult, rejection_sample
from guarded_kernels.resample import resample
from guarded_kernels.sample import gumbel_sample

__all__ = ["PLACEHOLDER", "RejectionResult", "gumbel_sample", "rejection_sample", "resample"]
