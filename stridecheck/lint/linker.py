"""Binds launches to kernels across the linted tree.

A first pass indexes every kernel of every module; each ``Launch`` is then resolved through the
module's imports and kernel aliases to one ``Kernel``, and its arguments are bound to the
kernel's parameters exactly as Python binds a call. What cannot be resolved is skipped, never
guessed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from stridecheck.lint.model import ArgOrigin, Kernel, Launch, ModuleModel


@dataclass(slots=True)
class BoundLaunch:
    launch: Launch
    module: ModuleModel  # where the launch is written
    kernel: Kernel
    kernel_module: ModuleModel  # where the kernel is defined
    bound: dict[str, ArgOrigin] = field(default_factory=dict)  # kernel parameter -> argument origin


class Tree:
    """All module models of one run, with kernels indexed and launches bound."""

    def __init__(self, models: Sequence[ModuleModel]):
        self.models = list(models)
        self._launches: dict[tuple[str, str], list[BoundLaunch]] = {}

    def kernels(self) -> Iterator[tuple[ModuleModel, Kernel]]:
        for model in self.models:
            for kernel in model.kernels:
                yield model, kernel

    def launches_of(self, model: ModuleModel, kernel: Kernel) -> list[BoundLaunch]:
        """Every resolved launch of ``kernel`` (defined in ``model``) in the tree."""
        return self._launches.get((model.path, kernel.name), [])
