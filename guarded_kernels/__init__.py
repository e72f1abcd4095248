"""Reference Triton kernels that address every tensor through its own strides and guard
every launch: Gumbel-max sampling and speculative-decoding residual resampling."""

from guarded_kernels.resample import resample
from guarded_kernels.sample import gumbel_sample

__all__ = ["gumbel_sample", "resample"]
