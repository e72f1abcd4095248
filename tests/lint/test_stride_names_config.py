"""The configured ``stride-names`` patterns reach every rule that asks whether a parameter is
*named* as a stride (SC004 fires only for such parameters), through the real CLI and config."""

from __future__ import annotations

import textwrap

from tests.lint.lint_support import write

KERNEL = '''\
import triton
import triton.language as tl


@triton.jit
def k(c_ptr, {name}, n, BLOCK: tl.constexpr):
    r = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    tl.store(c_ptr + r * {name} + offs, 0.0, mask=offs < n)


def launch(c):
    rows, cols = c.shape
    k[(rows,)](c, cols, cols, BLOCK=1024)
'''


def _lint(cli, tmp_path, name, config=""):
    write(tmp_path / "kern.py", KERNEL.format(name=name))
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(config))
    return cli(["lint", "--no-cache", "--format", "json", "kern.py"], cwd=tmp_path)


def test_a_parameter_named_by_a_configured_pattern_is_a_stride_for_sc004(cli, tmp_path):
    silent = _lint(cli, tmp_path, "pitch_c")
    assert silent.code == 0, silent.out
    configured = _lint(cli, tmp_path, "pitch_c", '[tool.stridecheck]\nstride-names = ["pitch_.*"]\n')
    assert configured.code == 1, configured.out + configured.err
    assert '"SC004"' in configured.out and "c.stride(0)" in configured.out


def test_the_built_in_names_still_need_no_configuration(cli, tmp_path):
    found = _lint(cli, tmp_path, "stride_c")
    assert found.code == 1 and '"SC004"' in found.out
