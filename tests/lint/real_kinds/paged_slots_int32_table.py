"""A decode kernel scores one request's query against its cached keys, gathered through the
request's row of the request-to-token table (int32, as engines allocate it to save memory): a
vector of KV-cache slots, each multiplied by the cache's slot stride in 32-bit arithmetic. A KV
pool of more than 2**31 elements (2M slots of 8 heads x 128 dims) wraps for the high slots.

Kind: a vector of slots loaded from an int32 table times the slot stride (seen in LightLLM's
context attention kernels, ModelTC/LightLLM#998; and a vLLM speculative-decoding attention patch,
syv-ai/qwen38-27b-rtx3090#86).

run() uses a small pool, so it returns True: the fault needs more than 2**31 elements."""
import torch
import triton
import triton.language as tl


@triton.jit
def _paged_scores_kernel(
    out_ptr, max_len, q_ptr, stride_qr, stride_qh, k_cache_ptr, stride_ks, stride_kh,
    req_to_token_ptr, stride_req, seq_len_ptr, D: tl.constexpr, BLOCK_N: tl.constexpr,
):
    req = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)
    n_heads = tl.num_programs(1)
    offs_d = tl.arange(0, D)
    offs_n = tl.arange(0, BLOCK_N)
    seq_len = tl.load(seq_len_ptr + req)
    q = tl.load(q_ptr + req * stride_qr + h * stride_qh + offs_d)
    for start in range(0, seq_len, BLOCK_N):
        valid = start + offs_n < seq_len
        slots = tl.load(req_to_token_ptr + req * stride_req + start + offs_n, mask=valid, other=0)
        k = tl.load(k_cache_ptr + slots[:, None] * stride_ks + h * stride_kh + offs_d[None, :], mask=valid[:, None])  # expect: SC006
        tl.store(out_ptr + (req * n_heads + h) * max_len + start + offs_n, tl.sum(k * q[None, :], axis=1), mask=valid)


def paged_scores(q, k_cache, req_to_token, seq_lens):
    """q . k for every cached token of every request: q [R, H, D], k_cache [n_slots, H, D]
    (float32, unit last stride), req_to_token int32 [R, max_len], seq_lens int32 [R];
    returns [R, H, max_len] (zero past each request's length)."""
    n_req, n_heads, d = q.shape
    max_len = req_to_token.shape[1]
    out = torch.zeros(n_req, n_heads, max_len, dtype=torch.float32)
    _paged_scores_kernel[(n_req, n_heads)](
        out, max_len, q, q.stride(0), q.stride(1), k_cache, k_cache.stride(0), k_cache.stride(1),
        req_to_token, req_to_token.stride(0), seq_lens, D=d, BLOCK_N=4,
    )
    return out


def run():
    n_slots, n_heads, d = 20, 2, 8
    k_cache = torch.randn(n_slots, n_heads, d)
    q = torch.randn(2, n_heads, d)
    seq_lens = torch.tensor([5, 3], dtype=torch.int32)
    req_to_token = torch.zeros(2, 6, dtype=torch.int32)
    req_to_token[0, :5] = torch.tensor([7, 2, 19, 11, 4], dtype=torch.int32)
    req_to_token[1, :3] = torch.tensor([0, 13, 8], dtype=torch.int32)
    expected = torch.zeros(2, n_heads, 6)
    for r in range(2):
        keys = k_cache[req_to_token[r, : seq_lens[r]].long()]  # [len, H, D]
        expected[r, :, : seq_lens[r]] = torch.einsum("hd,nhd->hn", q[r], keys)
    return torch.allclose(paged_scores(q, k_cache, req_to_token, seq_lens), expected, atol=1e-5)
