# A kernel file with a syntax error.
import triton

@triton.jit
def kernel(x_ptr  # expect: SC000
