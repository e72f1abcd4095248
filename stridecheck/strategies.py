"""``stridecheck.strategies``: the public path of :mod:`stridecheck.testing.strategies`.

>>> from stridecheck.strategies import strided_tensors
"""

from stridecheck.testing.strategies import strided_tensors

__all__ = ["strided_tensors"]
