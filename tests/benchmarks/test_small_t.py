"""benchmarks/small_t.py's summary: which measured rows belong to which rotation member."""


import pytest

from tests.benchmarks import load_benchmark

pytest.importorskip("torch")
pytest.importorskip("triton")


def test_rotation_members_whose_names_end_in_digits_find_their_passes():
    # Rows of a rotation are labelled name + pass number ("A1", "B2", "slots3"). The summary
    # stripped trailing digits to find the name, which broke the names that end in a digit
    # (pdl1, cfg1024x4w_bpp2, the rotation NOTES.md's next call uses): their means came out NaN.
    member = load_benchmark("small_t")._rotation_member
    rotation = ["A", "B", "pdl1+cfg1024x4w_bpp2", "cfg1024x4w_bpp2", "pdl1"]
    labels = [f"{name}{k}" for k, name in enumerate(rotation * 3, start=1)]
    for k, label in enumerate(labels):
        owners = [name for name in rotation if member(label, name)]
        assert owners == [rotation[k % len(rotation)]], (label, owners)
    assert not member("cfg1024x4w_bpp2", "cfg1024x4w_bpp2")  # a sweep row: no pass number
    assert not member("atomic", "A") and not member("B", "A")
