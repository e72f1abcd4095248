"""The package's public import paths (issue 20 moved the modules into stridecheck/testing/)."""

import sys
from pathlib import Path

import pytest

import stridecheck.testing

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the linter's own dependency on 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", stridecheck.testing.__all__)
def test_every_public_name_resolves_and_is_listed(name):
    assert getattr(stridecheck.testing, name) is not None
    assert name in dir(stridecheck.testing)


def test_the_former_module_paths_give_the_same_objects():
    from stridecheck import pytest_plugin, strategies
    from stridecheck.testing import pytest_plugin as plugin
    from stridecheck.testing import strategies as strategies_module

    assert strategies.strided_tensors is strategies_module.strided_tensors is stridecheck.testing.strided_tensors
    assert pytest_plugin.layout_check is plugin.layout_check


def test_the_pytest_entry_point_names_the_plugin_module():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"stridecheck": "stridecheck.testing.pytest_plugin"}


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'assert_layout_invariance'"):
        stridecheck.testing.assert_layout_invariance  # noqa: B018 - the lookup is the test
