"""Tests of the Figure 1 simulation driver (glfs.simulation._simulate.recovery_experiment)."""

import numpy as np
import pytest

from glfs.simulation._simulate import make_planted, point_seed, recovery_experiment, simulation_grid


def test_grid_has_both_panels_once():
    pts = simulation_grid([0.1, 0.2], 1000, [100, 1000], 0.2)
    assert pts == [(0.1, 1000), (0.2, 1000), (0.2, 100)]


def test_point_seed_same_for_every_method_and_distinct_across_points():
    a = point_seed(0, 0.2, 1000, 0)
    assert a == point_seed(0, 0.2, 1000, 0)
    assert len({a, point_seed(0, 0.2, 1000, 1), point_seed(0, 0.3, 1000, 0), point_seed(1, 0.2, 1000, 0)}) == 4


def test_variance_recovers_at_low_noise_and_fails_at_high_noise():
    # informative features have variance ~ 3/16 + 0.01; noise sd 0.05 -> variance 0.0025: top 4 by variance.
    # noise sd 2 -> variance 4 >> 0.2: the informative features sink to the bottom.
    rec = recovery_experiment("variance", [(0.05, 50), (2.0, 50)], replicates=2, n_samples=40)
    low = [r["score"] for r in rec if r["sigma"] == 0.05]
    high = [r["score"] for r in rec if r["sigma"] == 2.0]
    assert low == [1.0, 1.0]
    assert max(high) < 0.1
    assert {tuple(sorted(r)) for r in rec} == {("method", "n_noise", "replicate", "score", "sigma")}


def test_experiment_is_deterministic():
    kw = {"replicates": 2, "n_samples": 40, "random_state": 3}
    assert recovery_experiment("laplacian_score", [(0.5, 30)], **kw) == recovery_experiment(
        "laplacian_score", [(0.5, 30)], **kw
    )


def test_bad_replicates():
    with pytest.raises(ValueError, match="replicates"):
        recovery_experiment("variance", [(0.1, 5)], replicates=0)


def test_data_depend_only_on_point_seed():
    X1, inf1, _ = make_planted(40, 10, 0.3, random_state=point_seed(0, 0.3, 10, 0))
    X2, inf2, _ = make_planted(40, 10, 0.3, random_state=point_seed(0, 0.3, 10, 0))
    assert np.array_equal(X1, X2) and np.array_equal(inf1, inf2)
