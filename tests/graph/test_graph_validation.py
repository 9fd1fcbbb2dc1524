"""similarity_graph's scalar arguments go through the one validator (glfs.core._validation.check_scalar).

Rows the hand-written checks let through or answered with a numpy error: a bool
as a width or a count, a string width, an infinite width.
"""

from __future__ import annotations

import numpy as np
import pytest

import glfs
from glfs.core._validation import ParameterTypeError

X = np.random.default_rng(0).normal(size=(12, 5))

BAD = [
    ({"n_neighbors": 0}, ValueError, r"n_neighbors must be a positive integer; got 0"),
    ({"n_neighbors": 2.5}, ParameterTypeError, r"n_neighbors must be a positive integer; got 2\.5 \(float\)"),
    ({"n_neighbors": True}, ParameterTypeError, r"n_neighbors must be a positive integer; got True \(bool\)"),
    ({"n_neighbors": 12}, ValueError, r"n_neighbors must be smaller than the number of samples \(12\); got 12"),
    ({"t": True}, ParameterTypeError, r"t \(heat-kernel width\) must be a positive number; got True \(bool\)"),
    ({"t": "1"}, ParameterTypeError, r"t \(heat-kernel width\) must be a positive number; got '1' \(str\)"),
    ({"t": float("inf")}, ValueError, r"t \(heat-kernel width\) must be a positive number; got inf"),
    ({"t": 0}, ValueError, r"t \(heat-kernel width\) must be a positive number; got 0"),
    (
        {"kernel": "snf", "mu": True},
        ParameterTypeError,
        r"mu \(SNF kernel\) must be a positive number; got True \(bool\)",
    ),
    ({"kernel": "snf", "mu": float("nan")}, ValueError, r"mu \(SNF kernel\) must be a positive number; got nan"),
    ({"kernel": "snf", "mu": -2}, ValueError, r"mu \(SNF kernel\) must be a positive number; got -2"),
]


@pytest.mark.parametrize(("kwargs", "error", "match"), BAD)
def test_bad_scalar_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        glfs.similarity_graph(X, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "same_as"),
    [
        ({"t": 3}, {"t": 3.0}),
        ({"t": np.float64(0.7)}, {"t": 0.7}),
        ({"kernel": "snf", "mu": np.float32(0.5)}, {"kernel": "snf", "mu": 0.5}),
        ({"n_neighbors": np.int64(4)}, {"n_neighbors": 4}),
    ],
)
def test_numpy_and_int_scalars_give_the_same_graph(kwargs, same_as):
    a, b = glfs.similarity_graph(X, **kwargs), glfs.similarity_graph(X, **same_as)
    assert (a != b).nnz == 0
