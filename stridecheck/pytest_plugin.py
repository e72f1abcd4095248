"""The former path of the pytest plugin, now :mod:`stridecheck.testing.pytest_plugin`.

Kept because an environment installed before the move still names this module in its
``pytest11`` entry point (until it is reinstalled), and ``-p stridecheck.pytest_plugin`` may
appear in users' configurations. A fresh install loads the new module only.
"""

from stridecheck.testing.pytest_plugin import (  # noqa: F401
    layout_check,
    pytest_configure,
    pytest_terminal_summary,
)
