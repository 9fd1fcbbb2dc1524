"""glfs.scores._binned: a per-gene score standardised in cell_ranger's mean bins.

Checked against the written-out form (pandas.cut with scanpy's edges, median and MAD per bin by
loops) and against scanpy's own cell_ranger normalised dispersion.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from glfs.scores._binned import BIN_PERCENTILES, bin_standardise, mean_bins


def _written_out(score, means):
    import pandas as pd

    edges = np.r_[-np.inf, np.percentile(means, np.arange(10, 105, 5)), np.inf]
    b = pd.cut(means, bins=edges, labels=False)
    out = np.full(score.size, np.nan)
    for k in np.unique(b):
        idx = [j for j in range(score.size) if b[j] == k and np.isfinite(score[j])]
        v = score[idx]
        med = np.median(v)
        mad = 1.482602218505602 * np.median(np.abs(v - med))
        for j in idx:
            out[j] = (score[j] - med) / (mad if mad > 0 else 1.0)
    return out


def test_mean_bins_are_cell_rangers_edges():
    rng = np.random.default_rng(0)
    means = rng.gamma(0.5, 1.0, 400)
    import pandas as pd

    edges = np.r_[-np.inf, np.percentile(means, np.arange(10, 105, 5)), np.inf]
    assert BIN_PERCENTILES == tuple(range(10, 105, 5))
    np.testing.assert_array_equal(mean_bins(means), pd.cut(means, bins=edges, labels=False))


def test_bin_standardise_matches_written_out_form():
    rng = np.random.default_rng(1)
    means = rng.lognormal(0, 1.5, 300)
    score = rng.normal(size=300) + 2.0 * np.log(means)  # a score that grows with the mean
    score[[3, 50]] = np.nan
    got = bin_standardise(score, means)
    np.testing.assert_allclose(got, _written_out(score, means), rtol=1e-12, equal_nan=True)
    assert np.isnan(got[[3, 50]]).all()
    # the mean trend is gone: the standardised score no longer correlates with the mean
    from scipy.stats import spearmanr

    ok = np.isfinite(got)
    assert abs(spearmanr(got[ok], means[ok])[0]) < 0.2 and spearmanr(score[ok], means[ok])[0] > 0.8


def test_bin_with_zero_mad_divides_by_one():
    means = np.arange(40.0)
    score = np.ones(40)
    score[39] = 5.0  # the top bin holds genes 38 and 39 ... all other bins are constant
    got = bin_standardise(score, means)
    np.testing.assert_allclose(got, _written_out(score, means))


def test_bin_standardise_refuses_bad_input():
    with pytest.raises(ValueError, match="same length"):
        bin_standardise(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="means must be finite"):
        bin_standardise(np.ones(3), np.array([1.0, np.nan, 2.0]))
    assert np.isnan(bin_standardise(np.full(3, np.nan), np.ones(3))).all()


def test_cell_ranger_is_bin_standardised_dispersion():
    """scanpy's cell_ranger dispersions_norm = bin_standardise(var / mean, mean) of the log data."""
    sc = pytest.importorskip("scanpy")
    pytest.importorskip("statsmodels")
    import anndata as ad

    rng = np.random.default_rng(2)
    counts = rng.negative_binomial(2, 2.0 / (2.0 + rng.gamma(0.6, 2.0, 500)), size=(300, 500)).astype(np.float32)
    counts[0] += 1  # every gene expressed
    a = ad.AnnData(sp.csr_matrix(counts))
    sc.pp.normalize_total(a)
    sc.pp.log1p(a)
    df = sc.pp.highly_variable_genes(a, flavor="cell_ranger", n_top_genes=50, inplace=False)
    X = a.X.toarray().astype(np.float64)
    mean, var = X.mean(axis=0), X.var(axis=0, ddof=1)
    got = bin_standardise(var / mean, mean)
    np.testing.assert_allclose(got, df["dispersions_norm"].to_numpy(), rtol=1e-4, atol=1e-5)
