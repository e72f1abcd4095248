"""`--diff` without `--unsafe-fixes` says when unsafe fixes exist instead of printing nothing."""

from __future__ import annotations

from tests.annotations import REPRODUCTIONS


def test_diff_mentions_hidden_unsafe_fixes(cli):
    case = REPRODUCTIONS / "swapped_weight_strides.py"  # its only fix (a stride swap) is unsafe
    quiet = cli(["lint", "--no-cache", "--diff", str(case)])
    assert quiet.code == 0 and quiet.out == ""
    assert "unsafe fix" in quiet.err and "--unsafe-fixes" in quiet.err
    shown = cli(["lint", "--no-cache", "--diff", "--unsafe-fixes", str(case)])
    assert shown.code == 1 and "w.stride(0)" in shown.out and "not shown" not in shown.err
