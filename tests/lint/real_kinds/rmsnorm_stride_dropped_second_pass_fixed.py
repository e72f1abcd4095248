"""Fixed twin of rmsnorm_stride_dropped_second_pass.py: both passes read the row with its column
stride."""
import torch
import triton
import triton.language as tl


@triton.jit
def _rms_norm_kernel(
    X, Y, W, x_stride0, x_stride1, y_stride0, y_stride1, N, eps, BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    X += row * x_stride0
    Y += row * y_stride0
    sum_sq = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols * x_stride1, mask=cols < N, other=0.0)
        sum_sq += x * x
    rstd = 1 / tl.sqrt(tl.sum(sum_sq, axis=0) / N + eps)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        x = tl.load(X + cols * x_stride1, mask=mask, other=0.0)
        tl.store(Y + cols * y_stride1, x * rstd * w, mask=mask)


def rms_norm(x, weight, eps=1e-6):
    """RMS norm over the last dimension of x [..., N] (float32); weight [N]."""
    y = torch.empty_like(x)
    x_arg = x.view(-1, x.shape[-1])
    y_arg = y.view(-1, x.shape[-1])
    m, n = x_arg.shape
    _rms_norm_kernel[(m,)](
        x_arg, y_arg, weight, x_arg.stride(0), x_arg.stride(1), y_arg.stride(0), y_arg.stride(1), n, eps,
        BLOCK_SIZE=min(1024, triton.next_power_of_2(n)),
    )
    return y


def run():
    x = torch.randn(9, 6).t()  # [6, 9], column stride 6
    w = torch.randn(9)
    expected = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    return torch.allclose(rms_norm(x, w), expected, atol=1e-5)
