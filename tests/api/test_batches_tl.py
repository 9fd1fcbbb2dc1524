"""scanpy's habits in glfs.tl.select (issue 29, item 2), each scanpy issue class of the issue with a test that
fails if it happens here: batch_key, layer= in the per-batch path, subset=True in rank order, inplace=False,
n_top_genes, adata.raw, stale highly_variable columns, params without unused
graph settings, repeated calls equal and inputs unchanged."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import glfs

ad = pytest.importorskip("anndata")
pd = pytest.importorskip("pandas")

SHIFT = 29


def _adata(seed=0, per_batch=(60, 60, 60), d=30):
    """Log-scale expression of 3 cell types in 3 donors (genes 0-8 mark the types; gene SHIFT follows the donor),
    raw counts in layers["counts"], another matrix in layers["other"] (the types marked by genes 10-18)."""
    rng = np.random.default_rng(seed)
    n = sum(per_batch)
    donors = np.repeat([f"d{k}" for k in range(len(per_batch))], per_batch)
    types = rng.integers(0, 3, n)
    mu = np.full((n, d), 2.0)
    other = np.full((n, d), 2.0)
    for t in range(3):
        mu[np.ix_(types == t, np.arange(3 * t, 3 * t + 3))] += 3.0
        other[np.ix_(types == t, np.arange(10 + 3 * t, 13 + 3 * t))] += 3.0
    mu[:, SHIFT] += 8.0 * np.unique(donors, return_inverse=True)[1]
    counts = rng.poisson(mu).astype(np.float32)
    a = ad.AnnData(
        X=np.log1p(counts).astype(np.float64),
        obs=pd.DataFrame({"donor": donors, "type": types.astype(str)}, index=[f"c{i}" for i in range(n)]),
        var=pd.DataFrame(index=[f"g{j}" for j in range(d)]),
    )
    a.layers["counts"] = sp.csr_matrix(counts)
    a.layers["other"] = other + rng.normal(size=(n, d))
    return a


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


@pytest.mark.parametrize("method", ["variance", "laplacian_score", "graph_moran", "deviance"])
def test_batch_key_writes_the_selection_within_batches(method):
    a = _adata()
    _quiet(glfs.tl.select, a, method, 9, batch_key="donor")
    expected = _quiet(
        glfs.select,
        a.X,
        method,
        n_features_to_select=9,
        batches=a.obs["donor"].to_numpy(),
        counts=a.layers["counts"] if method == "deviance" else None,
    )
    np.testing.assert_array_equal(a.var[method].to_numpy(), expected.selected)
    np.testing.assert_array_equal(a.var[f"{method}_nbatches"].to_numpy(), expected.extra["nbatches"])
    assert a.var[f"{method}_intersection"].dtype == bool and not a.var[method].iloc[SHIFT]
    ranks = a.varm[f"{method}_batch_ranks"]
    assert ranks.shape == (30, 3)
    np.testing.assert_array_equal(ranks, expected.extra["batch_ranks"].T)
    params = a.uns[method]["params"]
    assert params["batch_key"] == "donor" and list(params["batches"]) == ["d0", "d1", "d2"]


def test_graph_morans_batch_rule_is_passed_and_recorded():
    a = _adata()
    a.X[:, 0] += 12.0 * np.unique(a.obs["donor"], return_inverse=True)[1]  # a type marker shifted by the donor
    _quiet(glfs.tl.select, a, "graph_moran", 9, batch_key="donor", batch_rule="minus_batch_share")
    expected = _quiet(
        glfs.select,
        a.X,
        "graph_moran",
        n_features_to_select=9,
        batches=a.obs["donor"].to_numpy(),
        batch_rule="minus_batch_share",
    )
    np.testing.assert_array_equal(a.var["graph_moran"].to_numpy(), expected.selected)
    assert a.uns["graph_moran"]["params"]["batch_rule"] == "minus_batch_share" and not a.var["graph_moran"].iloc[0]


def test_layer_is_used_in_the_per_batch_path():
    # scanpy #2396, #2302: layer= was ignored when batch_key was given
    a = _adata()
    df = _quiet(glfs.tl.select, a, "variance", 9, layer="other", batch_key="donor", inplace=False)
    expected = glfs.select(a.layers["other"], "variance", n_features_to_select=9, batches=a.obs["donor"].to_numpy())
    np.testing.assert_array_equal(df["selected"].to_numpy(), expected.selected)
    assert set(np.flatnonzero(df["selected"].to_numpy())) == set(range(10, 19))  # the layer's markers, not X's


@pytest.mark.parametrize("method", ["graph_moran", "hvg_seurat_v3"])
def test_subset_keeps_the_top_genes_in_var_order(method):
    # scanpy #4370, #3027: with batch_key and subset=True the genes kept were not the top ones; scanpy keeps var order
    if method == "hvg_seurat_v3":
        pytest.importorskip("skmisc")
    a = _adata(per_batch=(150, 150, 150), d=300, seed=2)
    full = a.copy()
    df = _quiet(glfs.tl.select, full, method, 20, batch_key="donor", inplace=False)
    top = [g for g in full.var_names if g in set(df.sort_values("rank").index[:20])]  # the top 20, in var order
    _quiet(glfs.tl.select, a, method, 20, batch_key="donor", subset=True)
    assert list(a.var_names) == top
    assert a.var[method].all() and sorted(a.var[f"{method}_rank"]) == list(range(1, 21))
    sub = _quiet(glfs.tl.select, full, method, 20, batch_key="donor", inplace=False, subset=True)
    assert list(sub.index) == list(top)


def test_inplace_false_returns_the_per_gene_table_and_writes_nothing():
    a = _adata()
    before = a.copy()
    df = glfs.tl.select(a, "variance", 9, batch_key="donor", inplace=False)
    assert list(df.columns) == ["score", "rank", "selected", "nbatches", "intersection", "median_rank"]
    assert df.index.equals(a.var_names) and df["selected"].sum() == 9
    assert list(a.var.columns) == list(before.var.columns) and set(a.uns) == set(before.uns)


def test_n_top_genes_is_the_one_name_of_the_gene_count():
    a, b = _adata(), _adata()
    glfs.tl.select(a, "variance", n_top_genes=9)
    glfs.tl.select(b, "variance", 9)
    np.testing.assert_array_equal(a.var["variance"].to_numpy(), b.var["variance"].to_numpy())
    assert a.var["variance"].sum() == 9 and a.uns["variance"]["params"]["n_top_genes"] == 9
    with pytest.raises(TypeError, match=r"n_top_genes"):
        glfs.tl.select(a, "variance", 5, n_top_genes=9)
    with pytest.raises(ValueError, match=r"n_top_genes must be an integer in \[1, 30\].*'variance'.*got None"):
        glfs.tl.select(a, "variance")
    with pytest.raises(ValueError, match=r"n_top_gene"):  # an unknown keyword is named
        glfs.tl.select(a, "variance", n_top_gene=9)


def test_adata_raw_is_refused_before_any_computation():
    a = _adata()
    a.raw = a
    with pytest.raises(ValueError, match=r"adata\.raw.*to_adata\(\)"):
        glfs.tl.select(a.raw, "variance", 9)


def test_mark_highly_variable_removes_scanpy_columns_of_an_earlier_selection():
    """The columns that describe scanpy's selection go; its per-gene statistics and uns["hvg"] (what
    sc.pl.highly_variable_genes plots the new selection against) stay."""
    sc = pytest.importorskip("scanpy")
    pytest.importorskip("skmisc")
    a = _adata(per_batch=(150, 150, 150), d=300, seed=2)
    _quiet(sc.pp.highly_variable_genes, a, flavor="seurat_v3", layer="counts", n_top_genes=30, batch_key="donor")
    assert {"highly_variable_rank", "variances_norm", "highly_variable_nbatches"} <= set(a.var)
    stats = a.var[["means", "variances", "variances_norm"]].copy()
    with pytest.warns(UserWarning, match=r"(?s)30 genes.*removed.*highly_variable_rank.*highly_variable_nbatches"):
        glfs.tl.select(a, "variance", 20, batch_key="donor", mark_highly_variable=True)
    assert "highly_variable_rank" not in a.var
    pd.testing.assert_frame_equal(a.var[["means", "variances", "variances_norm"]], stats)
    assert a.uns["hvg"] == {"flavor": "seurat_v3", "selection": "variance"}
    np.testing.assert_array_equal(a.var["highly_variable"].to_numpy(), a.var["variance"].to_numpy())
    np.testing.assert_array_equal(a.var["highly_variable_nbatches"].to_numpy(), a.var["variance_nbatches"].to_numpy())


def test_a_given_graph_lists_no_graph_settings_it_did_not_use():
    a = _adata()
    a.obsp["connectivities"] = glfs.similarity_graph(a.X, n_neighbors=10, kernel="binary")
    _quiet(glfs.tl.select, a, "graph_moran", 9, obsp="connectivities")
    params = a.uns["graph_moran"]["params"]
    assert params["graph"] == "obsp:connectivities" and params["graph_built"] == "given"
    assert not {"n_neighbors", "n_pcs", "graph_genes"} & set(params)


@pytest.mark.parametrize("method", ["graph_moran", "hvg_pearson_residuals"])
def test_twice_the_same_genes_and_nothing_changed(method):
    # scanpy #2579, #2668: repeated calls gave different genes, or a call changed the data
    pytest.importorskip("scanpy")
    a = _adata(per_batch=(100, 100, 100), d=120, seed=3)
    a.obsp["connectivities"] = glfs.similarity_graph(a.X, n_neighbors=10)
    X0, counts0, other0, W0 = (
        a.X.copy(),
        a.layers["counts"].copy(),
        a.layers["other"].copy(),
        a.obsp["connectivities"].copy(),
    )
    first = _quiet(glfs.tl.select, a, method, 15, batch_key="donor", inplace=False)
    second = _quiet(glfs.tl.select, a, method, 15, batch_key="donor", inplace=False)
    pd.testing.assert_frame_equal(first, second)
    np.testing.assert_array_equal(a.X, X0)
    assert (a.layers["counts"] != counts0).nnz == 0 and (a.obsp["connectivities"] != W0).nnz == 0
    np.testing.assert_array_equal(a.layers["other"], other0)


@pytest.mark.parametrize(
    ("obs", "match"),
    [
        ({"donor": None}, r"batch_key must name an adata\.obs column.*got 'donor'"),
        ({"donor": ["d0", np.nan] * 90}, r"adata\.obs\['donor'\] \(batch_key\) must not contain missing values"),
    ],
)
def test_bad_batch_keys_are_refused(obs, match):
    a = _adata()
    if obs["donor"] is None:
        del a.obs["donor"]
    else:
        a.obs["donor"] = obs["donor"]
    with pytest.raises(ValueError, match=match):
        glfs.tl.select(a, "variance", 9, batch_key="donor")
