"""The single-cell baselines (issue 17): scanpy's HVG flavours through glfs, and the binomial deviance.

- each hvg_* method selects exactly the genes of scanpy's own call on the same data, and the top k of
  its ranking is scanpy's selection of k genes for every k of a grid (the evaluation uses top-k);
- the deviance equals 2 (saturated - null) binomial log-likelihood, computed here from
  scipy.stats.binom (an independent route), on dense and sparse input;
- count-based methods refuse data that are not counts, naming where counts should come from.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

import glfs

sc = pytest.importorskip("scanpy")
ad = pytest.importorskip("anndata")

HVG = ["hvg_seurat", "hvg_cell_ranger", "hvg_seurat_v3", "hvg_pearson_residuals"]
COUNT_METHODS = ["hvg_seurat_v3", "hvg_pearson_residuals", "deviance"]


def _counts(seed=0, n=240, d=400, n_groups=3, n_markers=30):
    """Negative-binomial counts: gene means over 3 decades, library sizes varying 4x,
    ``n_markers`` genes per group up 6x in that group; the first genes are all zero."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(n_groups), n // n_groups)
    base = np.exp(rng.uniform(np.log(0.02), np.log(20), d))
    mu = np.tile(base, (n, 1))
    for g in range(n_groups):
        cols = np.arange(n_markers) + 10 + g * n_markers
        mu[np.ix_(groups == g, cols)] *= 6.0
    lib = rng.uniform(0.5, 2.0, n)[:, None]
    mu *= lib
    theta = 5.0
    counts = rng.negative_binomial(theta, theta / (theta + mu)).astype(np.float32)
    counts[:, :3] = 0  # genes with no count at all, as in real data
    return sp.csr_matrix(counts), groups


def _lognorm(counts):
    a = ad.AnnData(counts.copy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc.pp.normalize_total(a)
        sc.pp.log1p(a)
    return a.X


@pytest.fixture(scope="module")
def data():
    counts, groups = _counts()
    return counts, _lognorm(counts), groups


def _scanpy_mask(method, counts, lognorm, n):
    """scanpy's own call, inplace on a fresh AnnData, as a user makes it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "hvg_pearson_residuals":
            a = ad.AnnData(counts.copy())
            sc.experimental.pp.highly_variable_genes(a, flavor="pearson_residuals", n_top_genes=n)
        elif method == "hvg_seurat_v3":
            a = ad.AnnData(counts.copy())
            sc.pp.highly_variable_genes(a, flavor="seurat_v3", n_top_genes=n)
        else:
            a = ad.AnnData(lognorm.copy())
            sc.pp.highly_variable_genes(a, flavor=method.removeprefix("hvg_"), n_top_genes=n)
    return a.var["highly_variable"].to_numpy(dtype=bool)


def _glfs(method, counts, lognorm, n):
    kw = {"counts": counts} if glfs.METHODS[method].needs_counts else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return glfs.select(lognorm, method, n_features_to_select=n, **kw)


@pytest.mark.parametrize("method", HVG)
@pytest.mark.parametrize("n", [20, 75])
def test_selects_what_scanpy_selects(data, method, n):
    counts, lognorm, _ = data
    sel = _glfs(method, counts, lognorm, n)
    expected = _scanpy_mask(method, counts, lognorm, n)
    assert expected.sum() == n
    np.testing.assert_array_equal(sel.selected, expected)


@pytest.mark.parametrize("method", HVG)
def test_top_k_of_the_ranking_is_scanpys_selection_of_k(data, method):
    counts, lognorm, _ = data
    sel = _glfs(method, counts, lognorm, 50)
    for k in (10, 50, 120):
        top = np.zeros(lognorm.shape[1], dtype=bool)
        top[sel.ranking[:k]] = True
        np.testing.assert_array_equal(top, _scanpy_mask(method, counts, lognorm, k), err_msg=f"k={k}")


@pytest.mark.parametrize("method", [*HVG, "deviance"])
def test_planted_group_genes_rank_high(data, method):
    """Genes up 6x in one group of three are the variable ones: the top 90 hold at least twice the
    planted genes that chance gives (90 * 90 / 400 = 20).  Not more: the 90 planted genes include
    means down to 0.02 counts, and the noise is overdispersed (theta 5), which the count models
    with a fixed theta (Pearson residuals theta 100, binomial deviance) take for signal in the
    highly expressed noise genes (measured: 48 of 90 for both, 66-71 for the others)."""
    counts, lognorm, _ = data
    sel = _glfs(method, counts, lognorm, 90)
    planted = set(range(10, 100))
    assert len(planted & set(sel.ranking[:90].tolist())) >= 40


def _deviance_reference(Y):
    """2 * sum_i [log Binom(y; n_i, y/n_i) - log Binom(y; n_i, pi_j)]: the binomial coefficient cancels."""
    Y = np.asarray(Y, dtype=np.float64)
    n = Y.sum(axis=1, keepdims=True)
    pi = Y.sum(axis=0, keepdims=True) / Y.sum()
    sat = stats.binom.logpmf(Y, n, np.divide(Y, n, out=np.zeros_like(Y), where=n > 0))
    null = stats.binom.logpmf(Y, n, np.broadcast_to(pi, Y.shape))
    return 2.0 * (sat - null).sum(axis=0)


def test_deviance_equals_the_binomial_likelihood_ratio():
    counts, _ = _counts(seed=3, n=60, d=50, n_markers=10)
    Y = counts.toarray()
    Y[:, 5] = 0
    Y[0, 5] = 7  # a gene with a single count
    ref = _deviance_reference(Y)
    ref[np.all(Y == 0, axis=0)] = 0.0
    got_dense = glfs.scores._genewise.deviance_score(Y)
    got_sparse = glfs.scores._genewise.deviance_score(sp.csr_matrix(Y))
    np.testing.assert_allclose(got_dense, ref, rtol=1e-9, atol=1e-8)
    np.testing.assert_allclose(got_sparse, got_dense, rtol=1e-12, atol=1e-10)
    assert np.all(got_dense[:3] == 0)  # genes without a count


def test_deviance_orders_a_planted_gene_above_a_constant_proportion_one():
    rng = np.random.default_rng(1)
    n = 200
    lib = rng.integers(500, 5000, n)
    group = np.arange(n) < n // 2
    constant = rng.binomial(lib, 0.01)
    planted = rng.binomial(lib, np.where(group, 0.018, 0.002))  # same overall share, split by group
    rest = lib - constant - planted
    s = glfs.scores._genewise.deviance_score(np.column_stack([constant, planted, rest]))
    assert s[1] > 10 * s[0]


def test_deviance_refuses_non_counts():
    with pytest.raises(ValueError, match="raw counts"):
        glfs.scores._genewise.deviance_score(np.array([[0.5, 1.0], [2.0, 3.0]]))
    with pytest.raises(ValueError, match="all-zero"):
        glfs.scores._genewise.deviance_score(np.zeros((3, 2)))


@pytest.mark.parametrize("method", COUNT_METHODS)
def test_count_methods_refuse_normalised_x_without_counts(data, method):
    _, lognorm, _ = data
    with pytest.raises(ValueError, match=rf"method '{method}' scores raw counts: pass them as counts="):
        glfs.select(lognorm, method, n_features_to_select=5)


@pytest.mark.parametrize("method", COUNT_METHODS)
def test_count_methods_take_counts_from_x(data, method):
    counts, lognorm, _ = data
    a = _glfs(method, counts, lognorm, 25)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = glfs.select(counts, method, n_features_to_select=25)
    np.testing.assert_array_equal(a.ranking, b.ranking)


def test_counts_of_another_shape_are_refused(data):
    counts, lognorm, _ = data
    with pytest.raises(ValueError, match="counts must have the shape of X"):
        glfs.select(lognorm, "deviance", n_features_to_select=5, counts=counts[:, :10])


@pytest.mark.parametrize(
    ("method", "params", "match"),
    [
        (
            "hvg_seurat",
            {"span": 0.3},
            r"parameter 'span' is not a parameter of method 'hvg_seurat'; its parameters are \['n_bins'\]",
        ),
        ("hvg_seurat_v3", {"n_bins": 20}, r"its parameters are \['span'\]"),
        ("deviance", {"theta": 1}, "parameter 'theta' is not a parameter of method 'deviance'; it takes none"),
    ],
)
def test_unknown_parameters_are_refused(data, method, params, match):
    counts, lognorm, _ = data
    with pytest.raises(ValueError, match=match):
        glfs.select(lognorm, method, n_features_to_select=5, counts=counts, **params)


def test_registry_marks_the_count_methods():
    assert {m for m, i in glfs.METHODS.items() if i.needs_counts} == set(COUNT_METHODS)
    assert {m for m, i in glfs.METHODS.items() if i.family == "hvg"} == set(HVG)
    assert not any(glfs.METHODS[m].needs_graph or glfs.METHODS[m].needs_labels for m in [*HVG, "deviance"])


# ---- glfs.tl.select: counts where scanpy users keep them ----


@pytest.fixture
def adata(data):
    counts, lognorm, groups = data
    a = ad.AnnData(lognorm.copy())
    a.layers["counts"] = counts.copy()
    a.obs["group"] = groups.astype(str)
    return a


def test_tl_select_reads_the_counts_layer(adata, data):
    counts, lognorm, _ = data
    glfs.tl.select(adata, "hvg_seurat_v3", 30)
    np.testing.assert_array_equal(
        adata.var["hvg_seurat_v3"].to_numpy(), _scanpy_mask("hvg_seurat_v3", counts, lognorm, 30)
    )
    assert adata.uns["hvg_seurat_v3"]["params"]["counts"] == "layers:counts"


def test_tl_select_names_the_missing_layer(adata):
    del adata.layers["counts"]
    before = adata.var.copy()
    with pytest.raises(ValueError, match=r"adata.layers has no 'counts' layer .* adata.X does not hold counts"):
        glfs.tl.select(adata, "deviance", 30)
    assert adata.var.equals(before)  # a failed call leaves the AnnData unchanged


def test_tl_select_counts_layer_can_be_renamed(adata, data):
    adata.layers["raw"] = adata.layers.pop("counts")
    glfs.tl.select(adata, "deviance", 30, counts_layer="raw")
    assert adata.uns["deviance"]["params"]["counts"] == "layers:raw"
    expected = glfs.select(data[0], "deviance", n_features_to_select=30).selected
    np.testing.assert_array_equal(adata.var["deviance"].to_numpy(), expected)


def test_mark_highly_variable_is_opt_in_and_never_silent(adata):
    glfs.tl.select(adata, "laplacian_score", 40, graph_params={"n_neighbors": 10})
    assert "highly_variable" not in adata.var
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc.pp.highly_variable_genes(adata, n_top_genes=25)
    with pytest.warns(UserWarning, match=r"var\['highly_variable'\] \(25 genes"):
        glfs.tl.select(adata, "deviance", 40, mark_highly_variable=True)
    np.testing.assert_array_equal(adata.var["highly_variable"].to_numpy(), adata.var["deviance"].to_numpy())
    assert adata.var["highly_variable"].sum() == 40


def test_graph_key_names_the_graph(adata):
    glfs.tl.select(adata, "laplacian_score", 10, graph_key="cell_similarity", graph_params={"n_neighbors": 10})
    assert set(adata.obsp) == {"cell_similarity"}
    assert adata.uns["laplacian_score"]["params"]["graph"] == "obsp:cell_similarity"
    with pytest.raises(ValueError, match="graph_key must be a non-empty string"):
        glfs.tl.select(adata, "laplacian_score", 10, graph_key="")


def test_seurat_v3_on_too_few_genes_says_why():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(36, 14))
    X[:18, :3] += 2.5
    with pytest.raises(ValueError, match=r"hvg_seurat_v3: scanpy's loess fit .* failed on .*14 genes"):
        glfs.select(rng.poisson(np.exp(X)).astype(float), "hvg_seurat_v3", n_features_to_select=4)


# ---- scanpy's Pearson residuals: its copies of X are estimated and refused above the size limit (issue 21) ----
def _scanpy_pearson_peak(X):
    """tracemalloc peak of scanpy's Pearson-residuals call on X (numpy registers its buffers with tracemalloc)."""
    import tracemalloc

    from glfs.scores._hvg import _adata

    def run(Y):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sc.experimental.pp.highly_variable_genes(
                _adata(Y), flavor="pearson_residuals", n_top_genes=Y.shape[1], inplace=False
            )

    run(X[:50])  # numba compiles its kernels on the first call; that is not a copy of X
    tracemalloc.start()
    try:
        run(X)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("form", ["csr float32", "csc float32", "csr float64", "dense float32"])
def test_pearson_copy_estimate_matches_the_measured_peak(form):
    """The estimate read in scanpy's source is the measured peak within 15 % (a missing or extra copy is 30 % or more)."""
    layout, dtype = form.split()
    rng = np.random.default_rng(3)
    n, d = (6000, 1500) if layout != "dense" else (2000, 800)
    X = sp.random(n, d, density=0.08, format="csr", random_state=rng, data_rvs=lambda k: rng.poisson(3, k) + 1.0)
    X = X.astype(dtype).asformat(layout if layout != "dense" else "csr")
    if layout == "dense":
        X = X.toarray()
    peak = _scanpy_pearson_peak(X)
    est = glfs.scores._hvg.pearson_residuals_bytes(X)
    assert 0.85 < peak / est < 1.15, (form, peak, est)


def test_pearson_residuals_refuse_above_the_size_limit_before_scanpy_runs(data, monkeypatch):
    counts, _, _ = data
    import glfs.core.limits

    need = glfs.scores._hvg.pearson_residuals_bytes(counts) / 2**30
    monkeypatch.setattr(glfs.core.limits, "DENSE_LIMIT_GB", need / 2)

    def fail(*a, **k):
        raise AssertionError("scanpy ran")

    monkeypatch.setattr(sc.experimental.pp, "highly_variable_genes", fail)
    n, d = counts.shape
    with pytest.raises(ValueError, match="size limit") as err:
        glfs.select(counts, "hvg_pearson_residuals", n_features_to_select=10)
    msg = str(err.value)
    assert msg.startswith("hvg_pearson_residuals:")
    assert f"({n} x {d}, {counts.nnz:.3g} non-zeros" in msg
    assert f"{need:.1f} GB" in msg and "deviance" in msg
    assert "raise glfs.core.limits.DENSE_LIMIT_GB" in msg  # the public, settable name
    monkeypatch.setattr(glfs.core.limits, "DENSE_LIMIT_GB", need * 2)
    with pytest.raises(AssertionError, match="scanpy ran"):  # within the limit it goes on to scanpy
        glfs.select(counts, "hvg_pearson_residuals", n_features_to_select=10)


def test_the_counts_check_reads_a_large_matrix_in_blocks():
    """Checking that X holds counts makes no copy of its values (the floor is taken block by block)."""
    import tracemalloc

    from glfs.core._value_checks import holds_counts

    rng = np.random.default_rng(0)
    nnz = 1 << 24  # 64 MB of float32 values: a floor of all of them would be 64 MB
    X = sp.csr_matrix(
        (
            rng.poisson(2.0, nnz).astype(np.float32) + 1,
            rng.integers(0, 1000, nnz),
            np.linspace(0, nnz, 20_001).astype(np.int64),
        ),
        shape=(20_000, 1000),
    )
    tracemalloc.start()
    try:
        assert holds_counts(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40e6, peak
    X.data[-1] = 0.5  # the last block is read too
    assert not holds_counts(X)
