"""Tests of the single-cell count simulator (glfs.simulation._scsim.simulate_counts, the Splat model).

Each statistical check compares a sample statistic with what the model says,
with a tolerance of about 4-5 standard errors of that statistic (so a seeded
run passes by a wide margin, and a model that leaves the step out fails by
many standard errors; the comments give the numbers)."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from glfs.simulation._scsim import SimulatedCounts, simulate_counts

RARE = (0.4, 0.3, 0.2, 0.07, 0.03)


def _same(a: SimulatedCounts, b: SimulatedCounts) -> bool:
    return (
        (a.counts != b.counts).nnz == 0
        and np.array_equal(a.counts.indptr, b.counts.indptr)
        and np.array_equal(a.groups, b.groups)
        and np.array_equal(a.programme, b.programme)
        and np.array_equal(a.de_factor, b.de_factor)
        and np.array_equal(a.gene_mean, b.gene_mean)
        and np.array_equal(a.library_size, b.library_size)
    )


def _cell_means(sim: SimulatedCounts) -> np.ndarray:
    """mu_cj = L_c m_j f_gj / sum_i m_i f_gi (the model's mean before the BCV step), dense (n_cells, n_genes)."""
    gm = sim.gene_mean[None, :] * sim.de_factor
    prop = gm / gm.sum(axis=1, keepdims=True)
    return sim.library_size[:, None] * prop[sim.groups]


# ---- reproducibility, shapes -------------------------------------------------------


def test_reproducible_for_a_seed_and_different_for_another():
    a = simulate_counts(200, 300, random_state=3)
    b = simulate_counts(200, 300, random_state=3)
    c = simulate_counts(200, 300, random_state=4)
    assert _same(a, b)
    assert not np.array_equal(a.gene_mean, c.gene_mean)
    assert (a.counts != c.counts).nnz > 0
    assert a.params["entropy"] == 3


def test_fresh_entropy_is_recorded_and_reproduces():
    a = simulate_counts(100, 200, random_state=None)
    assert _same(a, simulate_counts(100, 200, random_state=a.params["entropy"]))
    g = simulate_counts(100, 200, random_state=np.random.default_rng(7))
    assert _same(g, simulate_counts(100, 200, random_state=np.random.default_rng(7)))


def test_shapes_types_and_csr_output():
    sim = simulate_counts(150, 400, group_prob=RARE, random_state=0)
    X = sim.counts
    assert sp.isspmatrix_csr(X) and X.dtype == np.float32 and X.shape == (150, 400)
    assert X.has_canonical_format
    assert np.all(X.data > 0) and np.array_equal(X.data, np.round(X.data))
    assert sim.groups.shape == (150,) and sim.groups.dtype.kind == "i"
    assert set(np.unique(sim.groups)) <= set(range(5))
    assert sim.programme.shape == sim.de_factor.shape == (5, 400) and sim.programme.dtype == bool
    assert np.all(sim.de_factor[~sim.programme] == 1.0) and np.all(sim.de_factor[sim.programme] != 1.0)
    assert sim.gene_mean.shape == (400,) and np.all(sim.gene_mean > 0)
    assert sim.library_size.shape == (150,) and np.all(sim.library_size > 0)
    assert np.array_equal(sim.structured, sim.programme.any(axis=0)) and sim.n_groups == 5
    assert sim.params["group_prob"] == list(RARE) and sim.params["de_prob"] == 0.1


def test_blocks_give_the_same_counts_as_one_block():
    one = simulate_counts(120, 250, group_prob=RARE, random_state=5, block_cells=120)
    for block in (1, 7, 64):
        assert _same(one, simulate_counts(120, 250, group_prob=RARE, random_state=5, block_cells=block))
    assert _same(one, simulate_counts(120, 250, group_prob=RARE, random_state=5))  # default block size


def test_genes_do_not_depend_on_the_number_of_cells():
    """Independent streams: the gene means and programmes of a seed are those of every n_cells."""
    a, b = simulate_counts(50, 300, random_state=2), simulate_counts(400, 300, random_state=2)
    assert np.array_equal(a.gene_mean, b.gene_mean) and np.array_equal(a.de_factor, b.de_factor)


# ---- the model's parts ---------------------------------------------------------------


def test_group_proportions_within_binomial_error():
    n = 20000
    sim = simulate_counts(n, 20, group_prob=RARE, random_state=0)
    counts = np.bincount(sim.groups, minlength=5)
    p = np.array(RARE)
    z = (counts - n * p) / np.sqrt(n * p * (1 - p))
    assert np.all(np.abs(z) < 4), z
    assert stats.chisquare(counts, n * p).pvalue > 1e-3


def test_library_sizes_lognormal_with_the_given_location_and_scale():
    """Expected library sizes: log L ~ N(lib_loc, lib_scale^2) exactly.  Observed totals T:
    log T = log L + log(T/L), where T/L has mean 1 and variance v_c = sum_j Var(x_cj) / L_c^2
    (Var x = mu + mu^2 BCV^2, E[df/chi2] = df/(df-2)); so mean(log T) ~ lib_loc - mean(v)/2 and
    sd(log T) ~ sqrt(lib_scale^2 + mean(v)).  Tolerances: 4 standard errors of a mean
    (sd/sqrt(n)) and of an sd (sd/sqrt(2n)), n = 10,000 cells."""
    n, loc, scale = 10000, 9.0, 0.5
    sim = simulate_counts(n, 1000, lib_loc=loc, lib_scale=scale, random_state=1)
    logL = np.log(sim.library_size)
    assert abs(logL.mean() - loc) < 4 * scale / math.sqrt(n)
    assert abs(logL.std() - scale) < 4 * scale / math.sqrt(2 * n)
    assert stats.kstest(logL, "norm", args=(loc, scale)).pvalue > 1e-3

    mu = _cell_means(sim)
    p = sim.params
    phi = p["bcv_df"] / (p["bcv_df"] - 2)
    v = ((mu + mu**2 * (p["bcv_common"] + 1 / np.sqrt(mu)) ** 2 * phi).sum(axis=1) / sim.library_size**2).mean()
    logT = np.log(np.asarray(sim.counts.sum(axis=1, dtype=np.float64)).ravel())
    sd = math.sqrt(scale**2 + v)
    assert abs(logT.mean() - (loc - v / 2)) < 4 * sd / math.sqrt(n)
    assert abs(logT.std() - sd) < 4 * sd / math.sqrt(2 * n)
    # a wrong location or scale by a tenth of the scale would be 25 / 7 standard errors off
    assert abs(logT.mean() - (loc + 0.1 * scale)) > 4 * sd / math.sqrt(n)


def test_gene_means_gamma_and_span_orders_of_magnitude():
    sim = simulate_counts(1, 20000, out_prob=0.0, random_state=0)
    m = sim.gene_mean
    assert stats.kstest(m, "gamma", args=(0.6, 0, 1 / 0.3)).pvalue > 1e-3
    assert abs(m.mean() - 2.0) < 4 * math.sqrt(0.6) / 0.3 / math.sqrt(
        m.size
    )  # Gamma mean shape/rate, sd sqrt(shape)/rate
    q01, q99 = np.quantile(m, [0.01, 0.99])
    assert math.log10(q99 / q01) > 3.5  # Gamma(0.6, 0.3): 1st percentile 0.0013, 99th 12.0 (3.97 decades)


def test_expression_outliers_are_planted_at_the_median():
    """Same seed with and without outliers: the base means are one stream, so the genes that differ
    are the outliers; about out_prob of them, each at median(base) * exp(|N(4, 0.5^2)|)."""
    base = simulate_counts(1, 20000, out_prob=0.0, random_state=0).gene_mean
    sim = simulate_counts(1, 20000, out_prob=0.05, random_state=0)
    out = sim.gene_mean != base
    n = out.size
    assert abs(out.sum() - 0.05 * n) < 4 * math.sqrt(n * 0.05 * 0.95)
    log_fac = np.log(sim.gene_mean[out] / np.median(base))
    assert np.all(log_fac > 0)
    assert abs(log_fac.mean() - 4.0) < 4 * 0.5 / math.sqrt(out.sum())
    assert abs(log_fac.std() - 0.5) < 4 * 0.5 / math.sqrt(2 * out.sum())


def test_de_factor_is_planted():
    """Two groups of 10,000 cells.  The estimated mean proportion of gene j in group g,
    r_gj = sum_{c in g} x_cj / sum_{c in g} L_c, has expectation p_gj = m_j f_gj / S_g; so
    log(r_0j / r_1j) estimates log(f_0j / f_1j) + log(S_1 / S_0).  z-scores with the delta-method
    standard error from the model's variance (mu + mu^2 BCV^2, E[df/chi2] for the unknown chi2_j)
    stay within 5 for every programme gene with at least 200 expected counts per group, and
    scatter with unit variance (mean z^2 in [0.6, 1.6]: the per-gene chi2 spread adds ~20%)."""
    sim = simulate_counts(20000, 300, group_prob=(0.5, 0.5), de_prob=0.3, de_fac_loc=0.5, random_state=3)
    X = sim.counts.toarray().astype(np.float64)
    mu = _cell_means(sim)
    p = sim.params
    var = mu + mu**2 * (p["bcv_common"] + 1 / np.sqrt(mu)) ** 2 * p["bcv_df"] / (p["bcv_df"] - 2)
    tot = np.stack([X[sim.groups == g].sum(axis=0) for g in (0, 1)])
    exp = np.stack([mu[sim.groups == g].sum(axis=0) for g in (0, 1)])
    se2 = np.stack([var[sim.groups == g].sum(axis=0) for g in (0, 1)]) / exp**2
    gm = sim.gene_mean * sim.de_factor
    S = gm.sum(axis=1)
    est = np.log(tot[0] / tot[1]) - np.log(
        sim.library_size[sim.groups == 0].sum() / sim.library_size[sim.groups == 1].sum()
    )
    truth = np.log(sim.de_factor[0] / sim.de_factor[1]) + np.log(S[1] / S[0])
    ok = (exp.min(axis=0) >= 200) & sim.structured
    assert ok.sum() > 50
    z = (est - truth)[ok] / np.sqrt(se2.sum(axis=0)[ok])
    assert np.all(np.abs(z) < 5), np.sort(np.abs(z))[-5:]
    assert 0.6 < np.mean(z**2) < 1.6
    # the planted factors are large against the error: without them the z-scores would be huge
    z_flat = (est - np.log(S[1] / S[0]))[ok] / np.sqrt(se2.sum(axis=0)[ok])
    assert np.mean(z_flat**2) > 100


def test_overdispersion_follows_the_bcv_model():
    """Non-programme genes of one group.  Given chi2_j, E[(x - mu)^2 - mu] = mu^2 BCV^2 with
    BCV = (bcv_common + 1/sqrt(mu)) sqrt(df/chi2_j); so the per-gene ratio
    r_j = sum_c [(x_cj - mu_cj)^2 - mu_cj] / sum_c mu_cj^2 (bcv_common + 1/sqrt(mu_cj))^2
    has mean df/chi2_j, whose average over genes is df/(df-2) = 1.034 (df 60), sd 0.19 over genes.
    A Poisson model gives r = 0; BCV = bcv_common alone (no mean trend) r ~ 0.02-0.1 here."""
    sim = simulate_counts(6000, 400, group_prob=(0.5, 0.5), random_state=4)
    rows = sim.groups == 0
    X = sim.counts[rows].toarray().astype(np.float64)
    mu = _cell_means(sim)[rows]
    genes = ~sim.programme[0] & (mu.mean(axis=0) > 2) & (mu.mean(axis=0) < 500)
    assert genes.sum() > 60
    X, mu = X[:, genes], mu[:, genes]
    r = ((X - mu) ** 2 - mu).sum(axis=0) / (mu**2 * (0.1 + 1 / np.sqrt(mu)) ** 2).sum(axis=0)
    # mean of r over G genes: 1.034 +- 0.19 / sqrt(G) from chi2, plus sampling noise of each r_j (< 0.1 here)
    assert abs(r.mean() - 60 / 58) < 4 * 0.22 / math.sqrt(genes.sum()), r.mean()
    assert 0.1 < r.std() < 0.35  # the per-gene chi2 spread (0.19) plus sampling noise
    assert np.all(X.var(axis=0) > 1.2 * X.mean(axis=0))  # every such gene is overdispersed


def test_infinite_bcv_df_removes_the_gene_spread():
    sim = simulate_counts(6000, 400, group_prob=(0.5, 0.5), bcv_df=math.inf, random_state=4)
    rows = sim.groups == 0
    X = sim.counts[rows].toarray().astype(np.float64)
    mu = _cell_means(sim)[rows]
    genes = ~sim.programme[0] & (mu.mean(axis=0) > 2) & (mu.mean(axis=0) < 500)
    X, mu = X[:, genes], mu[:, genes]
    r = ((X - mu) ** 2 - mu).sum(axis=0) / (mu**2 * (0.1 + 1 / np.sqrt(mu)) ** 2).sum(axis=0)
    assert abs(r.mean() - 1.0) < 0.05 and r.std() < 0.1


def test_per_group_programme_size_and_strength():
    sim = simulate_counts(
        10,
        20000,
        group_prob=(0.25, 0.25, 0.25, 0.25),
        de_prob=(0.0, 0.02, 0.1, 0.1),
        de_fac_loc=(0.1, 0.1, 0.1, 1.0),
        random_state=0,
    )
    size = sim.programme.sum(axis=1)
    assert size[0] == 0
    for g, q in ((1, 0.02), (2, 0.1)):
        assert abs(size[g] - q * 20000) < 4 * math.sqrt(20000 * q * (1 - q))
    mag = [np.abs(np.log(sim.de_factor[g, sim.programme[g]])).mean() for g in (2, 3)]
    assert abs(mag[0] - 0.33) < 0.03 and abs(mag[1] - 1.0) < 0.05  # E|N(0.1, 0.4^2)| = 0.33, E|N(1, 0.4^2)| = 1.00
    down = (sim.de_factor[2, sim.programme[2]] < 1).mean()
    assert abs(down - 0.5) < 4 * math.sqrt(0.25 / sim.programme[2].sum())


def test_down_regulation_probability():
    sim = simulate_counts(10, 20000, group_prob=(1.0,), de_prob=0.5, de_down_prob=0.9, random_state=1)
    down = (sim.de_factor[0, sim.programme[0]] < 1).mean()
    assert abs(down - 0.9) < 4 * math.sqrt(0.09 / sim.programme[0].sum())


# ---- bad inputs ------------------------------------------------------------------------

BAD = [
    ({"n_cells": 0}, "n_cells must be a positive integer; got 0"),
    ({"n_genes": 2.5}, "n_genes must be a positive integer; got 2.5"),
    ({"n_cells": True}, r"n_cells must be a positive integer; got True \(bool\)"),
    ({"group_prob": (0.5, 0.6)}, "group_prob must be a non-empty sequence of positive numbers that sum to 1"),
    ({"group_prob": ()}, "group_prob must be a non-empty sequence"),
    ({"group_prob": (1.2, -0.2)}, "group_prob must be a non-empty sequence of positive numbers"),
    ({"group_prob": 1.0}, "group_prob must be a sequence of positive numbers"),
    ({"de_prob": 1.5}, r"de_prob must be a number in \[0, 1\]; got 1.5"),
    ({"de_prob": (0.1, 0.2)}, r"de_prob must be a number or a sequence of one number per group \(5"),
    ({"de_fac_loc": (0.1, 0.1, 0.1, 0.1, float("nan"))}, r"de_fac_loc\[4\] must be a number"),
    ({"de_fac_scale": -1.0}, "de_fac_scale must be a non-negative number; got -1.0"),
    ({"de_down_prob": "0.5"}, "de_down_prob must be a number in"),
    ({"mean_shape": 0.0}, "mean_shape must be a positive number; got 0.0"),
    ({"mean_rate": -1.0}, "mean_rate must be a positive number"),
    ({"out_prob": 2.0}, r"out_prob must be a number in \[0, 1\]"),
    ({"lib_scale": -0.1}, "lib_scale must be a non-negative number"),
    ({"lib_loc": float("inf")}, "lib_loc must be a number; got inf"),
    ({"bcv_common": -1.0}, "bcv_common must be a non-negative number"),
    ({"bcv_df": 0.0}, "bcv_df must be a positive number; got 0.0"),
    ({"random_state": -1}, "random_state must be a non-negative integer, None or a numpy Generator; got -1"),
    ({"random_state": 1.5}, "random_state must be a non-negative integer, None or a numpy Generator; got 1.5"),
    ({"block_cells": 0}, "block_cells must be a positive integer; got 0"),
]


@pytest.mark.parametrize(("kwargs", "match"), BAD, ids=[next(iter(k)) + str(i) for i, (k, _) in enumerate(BAD)])
def test_bad_inputs_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate_counts(**{"n_cells": 20, "n_genes": 30, **kwargs})


def test_chunked_storage_gives_the_same_matrix(monkeypatch):
    """The nonzeros are kept in fixed chunks (memory); chunk boundaries inside a block change nothing."""
    from glfs.simulation import _scsim as scsim

    one = simulate_counts(80, 200, random_state=6)
    monkeypatch.setattr(scsim._Chunks, "CHUNK_ELEMENTS", 37)
    assert _same(one, simulate_counts(80, 200, random_state=6, block_cells=9))


# ---- batches (splatter's batchCells, batch.facLoc, batch.facScale) and dropout ----------------


def test_one_batch_is_no_batch_effect_exactly():
    plain = simulate_counts(120, 300, group_prob=RARE, random_state=5)
    one = simulate_counts(120, 300, group_prob=RARE, random_state=5, batch_cells=[120], batch_fac_loc=2.0)
    assert _same(plain, one)
    assert np.array_equal(one.batches, np.zeros(120)) and np.array_equal(one.batch_factor, np.ones((1, 300)))
    assert plain.params["batch_cells"] is None and one.params["batch_cells"] is None


def test_batches_do_not_change_the_other_draws():
    """The batch stream is its own: groups, gene means, programmes and library sizes are those without batches."""
    plain = simulate_counts(200, 400, random_state=8)
    two = simulate_counts(200, 400, random_state=8, batch_cells=(50, 150))
    for name in ("groups", "programme", "de_factor", "gene_mean", "library_size"):
        assert np.array_equal(getattr(plain, name), getattr(two, name)), name
    assert np.array_equal(two.batches, np.repeat([0, 1], [50, 150]))
    assert two.params["batch_cells"] == [50, 150]


def test_batch_factor_is_lognormal_with_random_direction():
    """log b = +-|N(loc, scale^2)|: E|log b| = E|N(loc, scale^2)|, half of the genes down (4-5 standard errors)."""
    loc, scale, n_genes = 0.3, 0.2, 20_000
    sim = simulate_counts(
        30, n_genes, random_state=2, batch_cells=(10, 10, 10), batch_fac_loc=loc, batch_fac_scale=scale
    )
    lb = np.log(sim.batch_factor)
    assert lb.shape == (3, n_genes)
    z = np.abs(np.random.default_rng(0).normal(loc, scale, 10**6))  # the folded normal's moments, by brute force
    assert abs(np.abs(lb).mean() - z.mean()) < 5 * z.std() / math.sqrt(lb.size)
    assert abs(np.abs(lb).std() - z.std()) < 0.01
    assert abs((lb < 0).mean() - 0.5) < 5 * 0.5 / math.sqrt(lb.size)


def test_batch_factor_moves_the_batch_means():
    """Within a group, log(batch-1 mean / batch-0 mean) of well-expressed genes follows log(b_1j / b_0j)."""
    sim = simulate_counts(
        2000,
        600,
        group_prob=(1.0,),
        random_state=4,
        batch_cells=(1000, 1000),
        batch_fac_loc=0.2,
        batch_fac_scale=0.2,
        lib_loc=9.0,
        out_prob=0.0,
    )
    x = sim.counts.toarray()
    x = x / x.sum(axis=1, keepdims=True)
    m0, m1 = x[:1000].mean(axis=0), x[1000:].mean(axis=0)
    ok = (m0 > 2e-4) & (m1 > 2e-4)
    observed = np.log(m1[ok] / m0[ok])
    planted = np.log(sim.batch_factor[1, ok] / sim.batch_factor[0, ok])
    planted -= np.median(planted - observed)  # the library normalisation shifts every gene alike
    assert ok.sum() > 300 and np.corrcoef(observed, planted)[0, 1] > 0.95


def test_dropout_far_below_or_above_the_means():
    """Midpoint far below every mean: nothing drops (the counts are those without dropout); far above: all drop."""
    plain = simulate_counts(60, 200, random_state=3)
    assert _same(plain, simulate_counts(60, 200, random_state=3, dropout_mid=-100.0))
    assert simulate_counts(60, 200, random_state=3, dropout_mid=100.0).counts.nnz == 0


def test_dropout_probability_is_the_logistic_of_the_log_mean():
    """One gene, constant mean: the share of zeros is P0(NB) + (1 - P0) p_drop (4-5 standard errors)."""
    n = 40_000
    base = simulate_counts(
        n,
        1,
        group_prob=(1.0,),
        random_state=1,
        lib_loc=2.0,
        lib_scale=0.0,
        bcv_df=math.inf,
        out_prob=0.0,
        bcv_common=0.0,
    )
    drop = simulate_counts(
        n,
        1,
        group_prob=(1.0,),
        random_state=1,
        lib_loc=2.0,
        lib_scale=0.0,
        bcv_df=math.inf,
        out_prob=0.0,
        bcv_common=0.0,
        dropout_mid=2.0,
        dropout_shape=-1.5,
    )
    # bcv_common 0, bcv_df inf: BCV = 1 / sqrt(mu), so lambda ~ Gamma(shape mu, scale 1), mu = e^2; a count kept
    # by the base run stays with probability 1 - p_drop(lambda): its expectation, by Monte Carlo over lambda.
    x0, x1 = base.counts.toarray().ravel(), drop.counts.toarray().ravel()
    assert np.all((x1 == x0) | (x1 == 0))  # dropout only zeroes counts
    lam = np.random.default_rng(0).gamma(math.exp(2.0), 1.0, 10**6)
    p_nonzero = 1.0 - np.exp(-lam)
    p_keep = 1.0 - 1.0 / (1.0 + np.exp(1.5 * (np.log(lam) - 2.0)))
    expected = (p_nonzero * p_keep).mean() / p_nonzero.mean()
    kept = (x1[x0 > 0] > 0).mean()
    assert abs(kept - expected) < 5 * math.sqrt(expected * (1 - expected) / (x0 > 0).sum())


BAD_BATCH = [
    ({"batch_cells": (10, 5)}, "batch_cells must be a non-empty sequence of positive integers summing to n_cells"),
    ({"batch_cells": (10, 0, 10)}, r"batch_cells\[1\]"),
    ({"batch_cells": (10, 10), "batch_fac_loc": (0.1, 0.2, 0.3)}, "one number per batch"),
    ({"batch_cells": (10, 10), "batch_fac_scale": -1}, "batch_fac_scale"),
    ({"dropout_mid": float("nan")}, "dropout_mid"),
]


@pytest.mark.parametrize(("kwargs", "match"), BAD_BATCH, ids=[str(i) for i in range(len(BAD_BATCH))])
def test_bad_batch_and_dropout_inputs_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate_counts(**{"n_cells": 20, "n_genes": 30, **kwargs})
