"""Tests of glfs.simulation._estimate: Splat parameters recovered from counts simulated with known (planted) ones.

Each tolerance is stated beside its check; they were set from the estimators'
spread over seeds 0-2 at these sizes (not from one run's output): a fit that
leaves a step out (no outlier component, a BCV without its trend, DE without
the noise model) misses them by several times.
"""

import math

import numpy as np
import pytest

from glfs.simulation._estimate import estimate_params
from glfs.simulation._estimate_batch import estimate_batch_params
from glfs.simulation._scsim import simulate_counts


@pytest.fixture(scope="module")
def splat_default():
    """Splat's defaults at a droplet-like depth (exp(9) counts per cell), one group, no DE."""
    sim = simulate_counts(1500, 2000, group_prob=(1.0,), de_prob=0.0, lib_loc=9.0, random_state=0)
    return sim, estimate_params(sim.counts, bcv_trend=None)


def test_library_sizes_recovered(splat_default):
    _, p = splat_default
    assert abs(p.lib_loc - 9.0) < 0.03  # observed totals scatter around L_c (Poisson, BCV): +-0.03 in meanlog
    assert abs(p.lib_scale - 0.2) < 0.02


def test_gene_means_and_outliers_recovered(splat_default):
    sim, p = splat_default
    assert abs(p.mean_shape - 0.6) < 0.08  # shape 0.6: the SE over 1,800 genes above the 10th percentile is ~0.03
    assert abs(p.out_prob - 0.05) < 0.02
    assert abs(p.out_fac_loc - 4.0) < 0.3 and abs(p.out_fac_scale - 0.5) < 0.15
    # the rate is on the normalised scale: the planted 0.3 times sum(m) / median library size
    scale = sim.gene_mean.sum() / np.median(np.asarray(sim.counts.sum(axis=1)).ravel())
    assert abs(p.mean_rate / (0.3 * scale) - 1.0) < 0.15


def test_splat_bcv_recovered_and_no_dropout(splat_default):
    _, p = splat_default
    assert abs(p.bcv_common - 0.1) < 0.03
    assert abs(p.bcv_trend - 1.0) < 0.1  # fitted freely; Splat's trend is 1
    assert 25 < p.bcv_df < 150  # df 60: trigamma(30) = 0.034 against a noise variance of ~0.01
    assert p.dropout_mid is None and abs(p.diagnostics["zero_excess"]) < 0.01


def test_negative_binomial_without_trend_recovered():
    """bcv_trend 0 (one dispersion scale at every mean, UMI-like), common BCV 0.3, df 8."""
    sim = simulate_counts(
        1500,
        2000,
        group_prob=(1.0,),
        de_prob=0.0,
        lib_loc=8.0,
        bcv_common=0.3,
        bcv_trend=0.0,
        bcv_df=8.0,
        random_state=1,
    )
    p = estimate_params(sim.counts, bcv_trend=None)
    assert abs(p.bcv_common - 0.3) < 0.05 and p.bcv_trend < 0.1
    assert 4 < p.bcv_df < 20
    fixed = estimate_params(sim.counts, bcv_trend=1.0)  # Splat's trend forced on: it cannot reach BCV 0.3 at low means
    assert fixed.bcv_trend == 1.0 and fixed.diagnostics["bcv_level_measured"] < 0.7


def test_no_outliers_gives_zero_outlier_probability():
    sim = simulate_counts(
        1500, 2000, group_prob=(1.0,), de_prob=0.0, lib_loc=8.0, mean_shape=1.5, out_prob=0.0, random_state=2
    )
    p = estimate_params(sim.counts)
    assert p.out_prob == 0.0 and abs(p.mean_shape - 1.5) < 0.2


def test_excess_zeros_are_seen_as_dropout():
    """Dropout is fitted only when zeros exceed the fitted NB's (its logistic is approximate: not checked here)."""
    sim = simulate_counts(1500, 2000, group_prob=(1.0,), de_prob=0.0, lib_loc=9.0, dropout_mid=1.0, random_state=3)
    p = estimate_params(sim.counts)
    assert p.dropout_mid is not None and p.diagnostics["zero_excess"] > 0.02


def test_group_de_recovered():
    sim = simulate_counts(
        1500, 2000, group_prob=(0.2,) * 5, de_prob=0.2, de_fac_loc=0.5, de_fac_scale=0.3, lib_loc=9.0, random_state=3
    )
    p = estimate_params(sim.counts, sim.groups)
    names = p.diagnostics["groups"]  # in order of first appearance
    assert np.allclose(p.group_prob, np.bincount(sim.groups)[names] / 1500)
    assert np.all(np.abs(np.array(p.de_prob) - 0.2) < 0.06)
    assert np.all(np.abs(np.array(p.de_fac_loc) - 0.5) < 0.1)
    assert np.all(np.abs(np.array(p.de_fac_scale) - 0.3) < 0.1)
    assert np.all(np.abs(np.array(p.de_down_prob) - 0.5) < 0.2)
    assert p.bcv_trend == 1.0 and abs(p.bcv_common - 0.1) < 0.04  # within groups: DE is not counted as BCV


def test_simulate_kwargs_round_trip():
    sim = simulate_counts(400, 600, group_prob=(0.5, 0.5), lib_loc=9.0, random_state=4)
    p = estimate_params(sim.counts, sim.groups)
    again = simulate_counts(**p.simulate_kwargs(), random_state=5)
    assert again.counts.shape == (400, 600) and again.n_groups == 2


@pytest.mark.parametrize(("loc", "scale"), [(0.3, 0.2), (0.1, 0.1)])
def test_batch_factor_recovered(loc, scale):
    sim = simulate_counts(
        2400,
        1500,
        group_prob=(0.5, 0.3, 0.2),
        lib_loc=8.0,
        batch_cells=(800, 700, 500, 400),
        batch_fac_loc=loc,
        batch_fac_scale=scale,
        random_state=6,
    )
    bp = estimate_batch_params(sim.counts, sim.batches, sim.groups)
    m2 = loc**2 + scale**2  # well determined; loc and scale apart less so when both are small
    assert abs(bp.batch_fac_loc**2 + bp.batch_fac_scale**2 - m2) < 0.15 * m2
    if loc >= 0.3:
        assert abs(bp.batch_fac_loc - loc) < 0.05 and abs(bp.batch_fac_scale - scale) < 0.05
    assert bp.diagnostics["n_batches"] == 4 and len(bp.diagnostics["groups_used"]) == 3


def test_no_batch_effect_gives_a_small_factor():
    """Batches of identical law (one simulation split in two): the fitted factor's second moment is near 0."""
    sim = simulate_counts(2000, 1500, group_prob=(0.5, 0.5), lib_loc=8.0, random_state=7)
    fake = np.repeat([0, 1], 1000)
    bp = estimate_batch_params(sim.counts, fake, sim.groups)
    assert bp.batch_fac_loc**2 + bp.batch_fac_scale**2 < 0.005  # against 0.02 for splatter's default 0.1 / 0.1


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda X: estimate_params(X - 1), "raw counts"),
        (lambda X: estimate_params(X, groups=np.zeros(3)), "one label per cell"),
        (lambda X: estimate_params(X, bcv_trend=-1), "bcv_trend"),
        (lambda X: estimate_batch_params(X, np.zeros(X.shape[0])), "2 to 10 distinct values"),
    ],
)
def test_bad_inputs_refused(call, match):
    X = simulate_counts(50, 80, lib_loc=9.0, random_state=0).counts.toarray()
    with pytest.raises(ValueError, match=match):
        call(X)


def test_empty_cell_refused():
    X = np.ones((30, 40))
    X[3] = 0
    with pytest.raises(ValueError, match="empty cells"):
        estimate_params(X)
    assert math.isfinite(estimate_params(np.random.default_rng(0).poisson(5.0, (200, 300))).bcv_common)
