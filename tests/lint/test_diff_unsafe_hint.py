"""`--diff` always ends with one summary line on stderr (ruff's wording): what would be fixed,
the unsafe fixes left out, or that nothing is fixable."""

from __future__ import annotations

from tests.annotations import REPRODUCTIONS


def test_diff_mentions_hidden_unsafe_fixes(cli):
    case = REPRODUCTIONS / "swapped_weight_strides.py"  # its only fix (a stride swap) is unsafe
    quiet = cli(["lint", "--no-cache", "--diff", str(case)])
    assert quiet.code == 0 and quiet.out == ""
    assert quiet.err.strip() == "No findings would be fixed (2 fixes available with `--unsafe-fixes`)."
    shown = cli(["lint", "--no-cache", "--diff", "--unsafe-fixes", str(case)])
    assert shown.code == 1 and "w.stride(0)" in shown.out
    assert shown.err.strip() == "Would fix 2 findings."


def test_diff_with_nothing_fixable_says_so(cli):
    case = REPRODUCTIONS / "hidden_state_cache_layer.py"  # SC001 has no automatic fix
    run = cli(["lint", "--no-cache", "--diff", str(case)])
    assert run.code == 0 and run.out == ""
    assert run.err.strip() == "No fixes available."


def test_diff_counts_safe_fixes_and_names_the_unsafe_ones_left(cli, tmp_path):
    for name in ("swapped_weight_strides.py", "kv_block_stride_from_shape.py"):
        (tmp_path / name).write_text((REPRODUCTIONS / name).read_text())
    run = cli(["lint", "--no-cache", "--diff", "."], cwd=tmp_path)
    assert run.code == 1 and "key_cache.stride(0)" in run.out
    assert run.err.strip() == "Would fix 1 finding (2 additional fixes available with `--unsafe-fixes`)."
