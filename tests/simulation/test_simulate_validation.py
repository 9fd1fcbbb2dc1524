"""Bad arguments of the simulation (glfs.simulation._simulate) are refused by the one validator, glfs.core._validation.check_scalar."""

from __future__ import annotations

import numpy as np
import pytest

from glfs.core._validation import ParameterTypeError
from glfs.simulation._simulate import make_planted, recovery_experiment

BAD_PLANTED = [
    ({"n_samples": 7}, ValueError, r"n_samples must be an integer >= 8; got 7"),
    ({"n_samples": 5, "n_informative": 3}, ValueError, r"n_samples must be an integer >= 6; got 5"),
    ({"n_samples": 40.0}, ParameterTypeError, r"n_samples must be an integer >= 8; got 40\.0 \(float\)"),
    ({"n_noise": -1}, ValueError, r"n_noise must be a non-negative integer; got -1"),
    ({"n_noise": True}, ParameterTypeError, r"n_noise must be a non-negative integer; got True \(bool\)"),
    ({"sigma": 0}, ValueError, r"sigma must be a positive number; got 0"),
    ({"sigma": -0.5}, ValueError, r"sigma must be a positive number; got -0\.5"),
    ({"sigma": float("nan")}, ValueError, r"sigma must be a positive number; got nan"),
    ({"sigma": float("inf")}, ValueError, r"sigma must be a positive number; got inf"),
    ({"sigma": "0.2"}, ParameterTypeError, r"sigma must be a positive number; got '0\.2' \(str\)"),
]


@pytest.mark.parametrize(("kwargs", "error", "match"), BAD_PLANTED)
def test_make_planted_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_planted(**{"n_samples": 40, "n_noise": 5, "sigma": 0.2, **kwargs})


@pytest.mark.parametrize(
    ("replicates", "error", "match"),
    [
        (0, ValueError, r"replicates must be a positive integer; got 0"),
        (-2, ValueError, r"replicates must be a positive integer; got -2"),
        (2.0, ParameterTypeError, r"replicates must be a positive integer; got 2\.0 \(float\)"),
        (True, ParameterTypeError, r"replicates must be a positive integer; got True \(bool\)"),
    ],
)
def test_recovery_experiment_bad_replicates(replicates, error, match):
    with pytest.raises(error, match=match):
        recovery_experiment("variance", [(0.1, 5)], replicates=replicates, n_samples=16)


def test_numpy_scalars_are_accepted_and_give_the_same_data():
    """The grid hands numpy scalars over: they pass and draw exactly what the Python numbers draw."""
    a = make_planted(np.int64(16), np.int64(5), np.float64(0.3), random_state=1)
    b = make_planted(16, 5, 0.3, random_state=1)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
