"""One finding per defect (issue 18): the other places of one root cause (a line repeating a
product, another term borrowing the same tensor's strides, a vendored copy of the kernel) are
related locations of one finding, in every output format."""

from __future__ import annotations

import json

KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _qv(Q, V, Out, stride_qh, stride_qm, stride_vh, stride_vm, stride_oh, stride_om, M, BLOCK_M: tl.constexpr, D: tl.constexpr):
    h = tl.program_id(0).to(tl.int64)
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    mask = offs_m[:, None] < M
    q = tl.load(Q + h * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :], mask=mask)
    v = tl.load(V + h * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :], mask=mask)
    tl.store(Out + h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :], q + v, mask=mask)


def add_qv(q, v):
    out = torch.empty_like(q)
    _qv[(q.shape[0],)](q, v, out, q.stride(0), q.stride(1), v.stride(0), v.stride(1), out.stride(0), out.stride(1),
                       q.shape[1], BLOCK_M=16, D=q.shape[2])
    return out
'''


def test_one_borrowing_is_one_finding_with_its_other_term_related(lint_files):
    (f,) = [f for f in lint_files({"m.py": KERNEL}) if f.code == "SC005"]
    assert "`stride_qh`" in f.message and "`stride_qm`" in f.message
    assert [(r.span.line, r.span.column) for r in f.related] and all(r.span.line == f.span.line for r in f.related)


def test_a_vendored_copy_is_a_related_location_of_the_first(lint_files):
    found = [f for f in lint_files({"a/m.py": KERNEL, "b/m.py": KERNEL}) if f.code == "SC005"]
    assert len(found) == 1 and found[0].path == "a/m.py"
    assert any(r.path.endswith("b/m.py") and "copy" in r.note for r in found[0].related)


def test_text_and_json_show_the_related_locations(tmp_path, cli):
    (tmp_path / "m.py").write_text(KERNEL, encoding="utf-8")
    text = cli(["lint", "--no-cache", "m.py"], cwd=tmp_path)
    assert text.code == 1 and "= also: line" in text.out
    js = cli(["lint", "--no-cache", "--format", "json", "m.py"], cwd=tmp_path)
    (item,) = [i for i in json.loads(js.out) if i["code"] == "SC005"]
    assert item["related"] and {"path", "line", "column", "end_line", "end_column", "note"} == set(item["related"][0])
