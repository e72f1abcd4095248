"""Reference Triton kernels that address every tensor through its own strides and guard
every launch: Gumbel-max sampling and speculative-decoding residual resampling."""
