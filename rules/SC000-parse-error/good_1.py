# The same file, complete.
import triton

@triton.jit
def kernel(x_ptr):
    pass
