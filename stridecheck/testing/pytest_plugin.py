"""pytest plugin: the ``layout_check`` fixture and the ``layouts`` marker.

Loaded (entry point ``pytest11``) by every pytest run of an environment where stridecheck is
installed, so importing it imports neither torch nor triton; :mod:`stridecheck.testing` is
imported when the fixture is first called.

Usage::

    def test_store_step(layout_check):
        logits, cache = torch.randn(3, 300), torch.zeros(3, 3, 301)
        layout_check(store_step, logits, cache, torch.tensor(1))   # raises LayoutError

    @pytest.mark.layouts("padded_last", "transposed", exact=True)
    def test_matvec(layout_check):
        layout_check(matvec, a, x, reference=torch.mv)

``layout_check(fn, *args, **kwargs)`` is :func:`stridecheck.testing.assert_layout_invariant`
whose ``layouts``, ``atol``, ``rtol``, ``exact`` and ``isolate`` default to the ``layouts``
marker's (the closest one: test, class or module); keywords given to the call win (``reference``
and ``name`` are given to the call). It returns the
:class:`~stridecheck.testing.LayoutReport`; every report is also kept in ``layout_check.reports``,
and layouts a ``@stride_guard`` contract refused are listed in the terminal summary.
"""

from __future__ import annotations

import pytest

_OPTIONS = ("atol", "rtol", "exact", "isolate")
_UNSUPPORTED = pytest.StashKey[list]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "layouts(*names, atol=None, rtol=None, exact=False, isolate=False): the layouts "
        "(stridecheck.testing names: padded_last, padded_outer, storage_offset, size_one_strides, "
        "transposed, strided, expanded; default: all but expanded) and the comparison the "
        "layout_check fixture uses in this test (default: torch.testing.assert_close's tolerances)",
    )
    config.stash[_UNSUPPORTED] = []


def _marker_options(node) -> dict:
    __tracebackhide__ = True  # a bad marker shows as its one-line error
    marker = node.get_closest_marker("layouts")
    if marker is None:
        return {}
    unknown = sorted(set(marker.kwargs) - set(_OPTIONS))
    if unknown:
        raise pytest.UsageError(
            f"{node.nodeid}: @pytest.mark.layouts got unknown keyword(s) {unknown}; "
            f"it takes layout names and {', '.join(_OPTIONS)}"
        )
    options = dict(marker.kwargs)
    if marker.args:
        names = marker.args[0] if len(marker.args) == 1 and isinstance(marker.args[0], (list, tuple)) else marker.args
        options["layouts"] = tuple(names)
    return options


@pytest.fixture
def layout_check(request: pytest.FixtureRequest):
    """A callable running a function across tensor layouts: see :mod:`stridecheck.testing.pytest_plugin`."""
    __tracebackhide__ = True
    defaults = _marker_options(request.node)
    reports: list = []
    unsupported = request.config.stash.get(_UNSUPPORTED, [])

    def check(fn, *args, layouts=None, atol=None, rtol=None, exact=None, isolate=None, **kwargs):
        __tracebackhide__ = True  # a failure shows the test's line and the report
        from stridecheck.testing import assert_layout_invariant

        options = dict(defaults)
        given = (("layouts", layouts), ("atol", atol), ("rtol", rtol), ("exact", exact), ("isolate", isolate))
        for key, value in given:
            if value is not None:
                options[key] = value
        try:
            report = assert_layout_invariant(fn, *args, **options, **kwargs)
        except AssertionError as err:
            report = getattr(err, "report", None)
            if report is not None:
                reports.append(report)
            raise
        reports.append(report)
        for entry in report.unsupported:
            unsupported.append((request.node.nodeid, entry))
        return report

    check.reports = reports
    return check


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    entries = config.stash.get(_UNSUPPORTED, [])
    if not entries:
        return
    terminalreporter.section("stridecheck: layouts declared unsupported by @stride_guard")
    for nodeid, entry in entries:
        terminalreporter.write_line(f"{nodeid}: {entry.argument} as {entry.layout}: {entry.detail}")
