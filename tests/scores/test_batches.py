"""Batch-aware selection (issue 29; glfs.scores._batches, glfs.select(..., batches=)).

Checked against hand-worked combinations and against each batch scored alone: one batch is the
plain result exactly; per-batch scores are each batch's own; copies of one batch rank as it does;
a planted batch-shift gene ranks first without batches and outside the selection with them; a
batch too small for the method is left out by the stated rule (and the result is the one without
its cells); repeated calls agree and change nothing.  scanpy's flavours select what scanpy selects
with ``batch_key``; the scanpy issue classes of the issue each have a test here (named in it).
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import glfs
from glfs.graph import _neighbors as nb
from glfs.scores._batches import batch_neighbourhoods, combine_batch_ranks, local_batch_share, select_by_batch
from glfs.scores._moran import cell_graph

RANKED = ["variance", "laplacian_score", "graph_moran", "deviance"]
SHIFT = 29  # the planted batch-shift gene of _data


def _data(seed=0, per_batch=(60, 60, 60), d=30, counts=False):
    """Cells of 3 types in each batch; genes 0-8 mark the types (3 per type), gene SHIFT moves with the batch
    only (its mean differs between batches, constant in distribution within one).  Counts: Poisson."""
    rng = np.random.default_rng(seed)
    n = sum(per_batch)
    batches = np.repeat([f"b{k}" for k in range(len(per_batch))], per_batch)
    types = rng.integers(0, 3, n)
    mu = np.full((n, d), 2.0)
    for t in range(3):
        mu[np.ix_(types == t, np.arange(3 * t, 3 * t + 3))] += 3.0
    codes = np.unique(batches, return_inverse=True)[1]
    mu[:, SHIFT] += 8.0 * codes
    X = rng.poisson(mu).astype(np.float64) if counts else mu + rng.normal(size=(n, d))
    return X, batches


def _same(a, b):
    np.testing.assert_array_equal(a.scores, b.scores)  # NaN where NaN
    np.testing.assert_array_equal(a.ranking, b.ranking)
    np.testing.assert_array_equal(a.selected, b.selected)


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


# ---- the combination, worked by hand ---------------------------------------------------------------


def test_combination_by_hand():
    # three batches rank five genes; each selects its top 2
    rankings = [[0, 1, 2, 3, 4], [1, 0, 3, 2, 4], [4, 1, 0, 2, 3]]
    selected = [np.isin(np.arange(5), r[:2]) for r in rankings]
    c = combine_batch_ranks(rankings, selected)
    np.testing.assert_array_equal(c.ranks, [[1, 2, 3, 4, 5], [2, 1, 4, 3, 5], [3, 2, 4, 5, 1]])
    np.testing.assert_array_equal(c.nbatches, [2, 3, 0, 0, 1])
    np.testing.assert_array_equal(c.intersection, [False, True, False, False, False])
    np.testing.assert_array_equal(c.median_rank, [1.5, 2.0, np.nan, np.nan, 1.0])
    # Seurat's SelectIntegrationFeatures: most batches first, then the median rank; genes in no batch by their median rank
    np.testing.assert_array_equal(c.ranking, [1, 0, 4, 2, 3])
    # scanpy's seurat_v3: the median rank first, so gene 4, selected in one batch only, comes first
    np.testing.assert_array_equal(combine_batch_ranks(rankings, selected, rule="median_rank").ranking, [4, 0, 1, 2, 3])


def test_combination_refuses_an_unknown_rule():
    with pytest.raises(ValueError, match="rule must be one of"):
        combine_batch_ranks([[0, 1]], [[True, False]], rule="mean")


# ---- the tests of the issue --------------------------------------------------------------------------


@pytest.mark.parametrize("method", RANKED)
def test_one_batch_is_the_plain_result_exactly(method):
    X, _ = _data(counts=method == "deviance")
    plain = _quiet(glfs.select, X, method, n_features_to_select=5)
    one = _quiet(glfs.select, X, method, n_features_to_select=5, batches=np.zeros(X.shape[0], int))
    _same(one, plain)
    assert one.extra["nbatches"].sum() == 5


@pytest.mark.parametrize("method", RANKED)
def test_per_batch_scores_are_each_batch_scored_alone(method):
    X, b = _data(counts=method == "deviance")
    sel = _quiet(glfs.select, X, method, n_features_to_select=5, batches=b)
    for k, label in enumerate(sel.extra["batches"]):
        rows = b == label
        # graph_moran's graph is one PCA of all cells, searched within each batch: the batch alone on its block
        # of that graph (the Laplacian score's default graph searches all genes: the batch alone, graph and all)
        given = {"graph": sel.extra["graph"][rows][:, rows]} if method == "graph_moran" else {}
        alone = _quiet(glfs.select, X[rows], method, n_features_to_select=5, **given)
        np.testing.assert_array_equal(sel.extra["batch_scores"][k], alone.scores)
        np.testing.assert_array_equal(sel.extra["batch_ranks"][k], alone.rank)
    # the combined score is the mean over the batches (not the last batch's: scanpy #1725); graph_moran's default
    # rule (minus_global_local_share) takes the gene's between-batch shares of variance (over all cells, among similar
    # cells) off that mean
    mean = np.nanmean(sel.extra["batch_scores"], axis=0)
    if method == "graph_moran":
        np.testing.assert_array_equal(sel.extra["mean_moran_i"], mean)
        mean = mean - (
            np.nan_to_num(sel.extra["between_batch_share"], nan=0.0)
            + np.nan_to_num(sel.extra["local_batch_share"], nan=0.0)
        )
    np.testing.assert_allclose(sel.scores, mean, rtol=0, atol=0)
    assert not np.allclose(sel.scores, sel.extra["batch_scores"][-1], equal_nan=True)


@pytest.mark.parametrize("method", RANKED)
def test_copies_of_one_batch_rank_as_the_batch(method):
    X, _ = _data(per_batch=(90,), counts=method == "deviance")
    single = _quiet(glfs.select, X, method, n_features_to_select=5)
    copies = _quiet(glfs.select, np.vstack([X, X, X]), method, n_features_to_select=5, batches=np.repeat([0, 1, 2], 90))
    np.testing.assert_array_equal(copies.ranking, single.ranking)
    np.testing.assert_array_equal(copies.selected, single.selected)
    assert copies.extra["intersection"].sum() == 5


@pytest.mark.parametrize("method", RANKED)
def test_a_planted_batch_gene_ranks_first_without_batches_and_low_with_them(method):
    X, b = _data(counts=method == "deviance")
    plain = _quiet(glfs.select, X, method, n_features_to_select=9)
    aware = _quiet(glfs.select, X, method, n_features_to_select=9, batches=b)
    assert plain.rank[SHIFT] == 1
    assert aware.rank[SHIFT] > 9 and not aware.selected[SHIFT]
    assert aware.extra["nbatches"][SHIFT] == 0
    assert set(aware.indices) == set(range(9))  # the type markers, selected in every batch


@pytest.mark.parametrize("method", RANKED)
def test_twice_the_same_and_inputs_unchanged(method):
    X, b = _data(counts=method == "deviance")
    X0, b0 = X.copy(), b.copy()
    first = _quiet(glfs.select, X, method, n_features_to_select=5, batches=b)
    second = _quiet(glfs.select, X, method, n_features_to_select=5, batches=b)
    _same(first, second)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(b, b0)


@pytest.mark.parametrize("method", ["laplacian_score", "graph_moran"])
def test_a_batch_of_three_cells_is_left_out_by_the_stated_rule(method, caplog):
    # never silently: a UserWarning (what a scanpy session shows), the log and params name it, its size and why
    X, b = _data(per_batch=(60, 60, 3))
    with caplog.at_level(logging.WARNING, logger="glfs"), pytest.warns(UserWarning, match=r"1 of 3 batches left out"):
        sel = glfs.select(X, method, n_features_to_select=5, batches=b)
    assert sel.params["batches_left_out"] == ["b2"]
    assert "'b2': \"3 cells, fewer than" in caplog.text and "neighbours" in caplog.text
    keep = b != "b2"
    without = _quiet(glfs.select, X[keep], method, n_features_to_select=5, batches=b[keep])
    _same(sel, without)


def test_a_batch_of_three_cells_is_scored_by_a_score_without_a_graph():
    X, b = _data(per_batch=(60, 60, 3))
    sel = glfs.select(X, "variance", n_features_to_select=5, batches=b)
    assert sel.params["batches"] == ["b0", "b1", "b2"] and sel.params["batches_left_out"] == []
    np.testing.assert_allclose(sel.extra["batch_scores"][2], X[b == "b2"].var(axis=0))


def test_every_batch_too_small_is_refused_with_the_sizes():
    X, b = _data(per_batch=(3, 3, 3))
    with pytest.raises(ValueError, match=r"every batch is too small for method 'laplacian_score'.*'b0': 3"):
        glfs.select(X, "laplacian_score", n_features_to_select=5, batches=b)


# ---- graphs ------------------------------------------------------------------------------------------


def _brute_within(Z, b, k):
    """Edges (i, j), i < j, of the binary kNN graph searched within each batch on Z: every pair of distances
    of a batch written out (float64), each cell's k nearest others of its batch, i-j when either is the other's."""
    edges = set()
    for label in np.unique(b):
        rows = np.flatnonzero(b == label)
        D = np.sqrt(((Z[rows, None, :] - Z[None, rows, :]) ** 2).sum(axis=2))
        np.fill_diagonal(D, np.inf)
        for a, near in enumerate(np.argsort(D, axis=1, kind="stable")[:, :k]):
            edges |= {tuple(sorted((int(rows[a]), int(rows[c])))) for c in near}
    return edges


def _edges(W):
    C = sp.triu(W, k=1).tocoo()
    return set(zip(C.row.tolist(), C.col.tolist()))


def test_the_graph_is_one_pca_of_all_cells_searched_within_batches_brute_force():
    from glfs.graph._neighbors import _pca_in_memory

    X, b = _data()
    sel = _quiet(glfs.select, X, "graph_moran", n_features_to_select=5, batches=b)
    W = sel.extra["graph"]
    assert sel.params["graph"] == "built within each batch" and W.shape == (X.shape[0],) * 2
    Z = np.asarray(_pca_in_memory(X, 29, 0), dtype=np.float64)  # graph_moran's 29 = min(50, 30 genes - 1) components
    # the components are those of all the cells (not of one batch): their variances are PCA's of all of X
    top = np.linalg.svd(X - X.mean(axis=0), compute_uv=False)[:29] ** 2 / (X.shape[0] - 1)
    np.testing.assert_allclose(Z.var(axis=0, ddof=1), top, rtol=1e-4)
    assert _edges(W) == _brute_within(Z, b, 15)  # no edge between batches, each cell's 15 nearest of its batch
    assert set(np.unique(W.data)) == {1.0}


def test_similarity_graph_searches_within_batches_on_shared_components_brute_force():
    from glfs.graph._neighbors import _pca_in_memory

    X, b = _data(per_batch=(50, 70, 40), d=40)
    W = glfs.similarity_graph(X, n_neighbors=6, kernel="binary", n_pcs=8, method="exact", batches=b)
    Z = np.asarray(_pca_in_memory(X, 8, 0), dtype=np.float64)
    assert _edges(W) == _brute_within(Z, b, 6)


def test_similarity_graph_with_one_batch_is_the_graph_without_exactly():
    X, _ = _data()
    for kw in ({}, {"n_pcs": 10, "method": "exact"}, {"kernel": "snf"}, {"method": "approx"}):
        plain = glfs.similarity_graph(X, n_neighbors=7, **kw)
        one = glfs.similarity_graph(X, n_neighbors=7, batches=np.zeros(X.shape[0], int), **kw)
        assert (plain != one).nnz == 0, kw


def test_similarity_graph_on_all_genes_gives_each_batch_its_own_graph_exactly():
    # no PCA (all genes): each batch's block is the batch's own graph, the heat width each batch's own
    X, b = _data()
    W = glfs.similarity_graph(X, n_neighbors=5, batches=b)
    for label in np.unique(b):
        rows = np.flatnonzero(b == label)
        assert (W[rows][:, rows] != glfs.similarity_graph(X[rows], n_neighbors=5)).nnz == 0
        assert W[rows][:, np.flatnonzero(b != label)].nnz == 0


def test_similarity_graph_joins_a_batch_smaller_than_the_neighbours_within_itself(caplog):
    X, b = _data(per_batch=(40, 3, 1))
    with caplog.at_level(logging.WARNING, logger="glfs"):
        W = glfs.similarity_graph(X, n_neighbors=5, kernel="binary", batches=b)
    three, one = np.flatnonzero(b == "b1"), np.flatnonzero(b == "b2")
    assert W[three][:, three].nnz == 6 and W[three].nnz == 6  # all 3 pairs, both ways, nothing outside
    assert W[one].nnz == 0
    assert "3 samples: 2 neighbours" in caplog.text


@pytest.mark.parametrize("kw", [{}, {"graph_genes": 10}, {"graph_genes": 10, "batch_rule": "median_rank"}])
def test_graph_moran_with_one_batch_is_the_plain_result_exactly_refined_or_not(kw):
    X, _ = _data()
    rule = kw.pop("batch_rule", "nbatches")
    plain = _quiet(glfs.select, X, "graph_moran", n_features_to_select=5, **kw)
    from glfs.api import method_info
    from glfs.scores._batches import run_by_batch

    one = _quiet(run_by_batch, method_info("graph_moran"), X, np.zeros(X.shape[0], int), n_features=5, rule=rule, **kw)
    _same(one, plain)
    assert (one.extra["graph"] != plain.extra["graph"]).nnz == 0
    assert one.params["graph_built"] == plain.params["graph_built"] == ("self" if kw else "all_genes")


def test_graph_moran_refines_its_graph_on_the_genes_the_batches_select_together():
    X, b = _data()
    sel = _quiet(glfs.select, X, "graph_moran", n_features_to_select=5, graph_genes=9, batches=b)
    assert sel.params["graph_built"] == "self"
    # the first pass: each batch's Moran's I on the graph of all genes; its top 9 combined by rank
    first = _quiet(glfs.select, X, "graph_moran", n_features_to_select=9, graph_from="all_genes", batches=b)
    W = cell_graph(X, first.ranking[:9], batches=b)
    assert (sel.extra["graph"] != W).nnz == 0


def test_between_batch_share_is_the_one_way_anova_r2_written_out():
    from glfs.scores._batches import between_batch_share

    X, b = _data(per_batch=(20, 35, 25))
    X[:, 3] = 2.0  # constant: NaN
    codes = np.unique(b, return_inverse=True)[1]
    expected = np.empty(X.shape[1])
    for j in range(X.shape[1]):
        x = X[:, j]
        between = sum((codes == k).sum() * (x[codes == k].mean() - x.mean()) ** 2 for k in range(3))
        expected[j] = between / ((x - x.mean()) ** 2).sum() if j != 3 else np.nan
    np.testing.assert_allclose(between_batch_share(X, codes), expected, rtol=1e-10)
    np.testing.assert_allclose(between_batch_share(sp.csr_matrix(X), codes), expected, rtol=1e-10)
    left = np.where(codes == 1, -1, codes)  # a batch left out: the share over the other cells
    keep = codes != 1
    np.testing.assert_allclose(between_batch_share(X, left), between_batch_share(X[keep], codes[keep]), rtol=1e-12)
    one = between_batch_share(X, np.zeros(X.shape[0], int))
    assert np.isnan(one[3]) and np.all(np.delete(one, 3) == 0)
    assert expected[SHIFT] > 0.9  # the planted batch gene


def _run(X, b, rule, n=9):
    from glfs.api import method_info
    from glfs.scores._batches import run_by_batch

    return _quiet(run_by_batch, method_info("graph_moran"), X, b, n_features=n, rule=rule)


def test_minus_batch_share_with_one_batch_is_the_plain_result_exactly():
    X, _ = _data()
    plain = _quiet(glfs.select, X, "graph_moran", n_features_to_select=5)
    one = _run(X, np.zeros(X.shape[0], int), "minus_batch_share", n=5)
    _same(one, plain)
    assert one.params["batch_rule"] == "minus_batch_share"


def test_minus_batch_share_keeps_out_a_type_marker_that_shifts_more_with_the_batch():
    # gene 0 marks a type within every batch (as genes 1-8) and also moves with the batch, more than it varies by type
    X, b = _data()
    codes = np.unique(b, return_inverse=True)[1]
    X[:, 0] += 12.0 * codes
    ranks = _run(X, b, "nbatches")
    share = _run(X, b, "minus_batch_share")
    assert ranks.selected[0] and ranks.extra["nbatches"][0] == 3  # within each batch it is a marker
    assert not share.selected[0] and share.extra["between_batch_share"][0] > 0.5
    assert set(share.indices) == set(range(1, 9)) | {int(share.ranking[8])} and share.ranking[8] != 0
    np.testing.assert_allclose(share.scores, share.extra["mean_moran_i"] - share.extra["between_batch_share"])


def test_minus_batch_share_through_select_and_its_refusals():
    X, b = _data()
    via_select = _quiet(
        glfs.select, X, "graph_moran", n_features_to_select=9, batches=b, batch_rule="minus_batch_share"
    )
    _same(via_select, _run(X, b, "minus_batch_share"))
    # graph_moran's default with batches (glfs.scores._moran.BATCH_RULE); the rank rule on request
    default = _quiet(glfs.select, X, "graph_moran", n_features_to_select=9, batches=b)
    _same(default, _run(X, b, "minus_global_local_share"))
    assert default.params["batch_rule"] == "minus_global_local_share"
    ranks = _quiet(glfs.select, X, "graph_moran", n_features_to_select=9, batches=b, batch_rule="nbatches")
    _same(ranks, _run(X, b, "nbatches"))
    assert ranks.params["batch_rule"] == "nbatches" and "between_batch_share" not in ranks.extra
    with pytest.raises(ValueError, match="batch_rule must be one of"):
        _run(X, b, "mean")
    for rule in ("minus_batch_share", "nbatches"):
        with pytest.raises(ValueError, match="combines batches: pass batches"):
            glfs.select(X, "graph_moran", n_features_to_select=9, batch_rule=rule)


@pytest.mark.parametrize("rule", [None, "minus_batch_share", "nbatches"])
def test_graph_morans_batch_rule_applies_on_a_given_graph(rule):
    # scored within each batch on the given graph's block (brute force: graph_autocorrelation of the block),
    # combined by the rule asked for, or by the default rule when none is asked for, as with its own graph
    from glfs.scores import graph_autocorrelation
    from glfs.scores._moran import BATCH_RULE

    X, b = _data()
    codes = np.unique(b, return_inverse=True)[1]
    X[:, 0] += 12.0 * codes  # a type marker shifted by the batch: the share rules keep it out
    W = glfs.similarity_graph(X, n_neighbors=8, kernel="binary")
    kw = {} if rule is None else {"batch_rule": rule}
    sel = _quiet(glfs.select, X, "graph_moran", graph=W, n_features_to_select=9, batches=b, **kw)
    assert sel.params["batch_rule"] == (rule or BATCH_RULE) and sel.params["graph"] == "given, cut to each batch"
    assert sel.params["graph_built"] == "given"
    for k, label in enumerate(sel.extra["batches"]):
        rows = np.flatnonzero(b == label)
        Wb = W[rows][:, rows]
        keep = np.asarray(Wb.sum(axis=1)).ravel() > 0
        expected = _quiet(graph_autocorrelation, X[rows][keep], Wb[keep][:, keep]).moran_i
        np.testing.assert_allclose(sel.extra["batch_scores"][k], expected, rtol=1e-10)
    if rule == "nbatches":
        assert sel.selected[0]
    else:
        mean = np.nanmean(sel.extra["batch_scores"], axis=0)
        share = sel.extra["between_batch_share"] + np.nan_to_num(sel.extra["local_batch_share"] if rule is None else 0)
        np.testing.assert_allclose(sel.scores, mean - share, rtol=1e-10)
        assert not sel.selected[0]


def test_a_given_graph_is_cut_to_each_batch():
    X, b = _data()
    W = glfs.similarity_graph(X, n_neighbors=8)
    sel = _quiet(glfs.select, X, "laplacian_score", graph=W, n_features_to_select=5, batches=b)
    assert sel.params["graph"] == "given, cut to each batch"
    for k, label in enumerate(sel.extra["batches"]):
        rows = np.flatnonzero(b == label)
        Wb = W[rows][:, rows]
        keep = np.asarray(Wb.sum(axis=1)).ravel() > 0  # cells without an edge inside the batch are left out
        expected = _quiet(glfs.laplacian_score, X[rows][keep], Wb[keep][:, keep])
        np.testing.assert_allclose(sel.extra["batch_scores"][k], expected, rtol=1e-12)


def test_moran_is_never_infinite_on_genes_constant_or_nearly_so_within_a_batch():
    # rapids-singlecell #422: Moran's I infinite on near-constant genes
    X, b = _data()
    X[b == "b0", 0] = 1.0  # constant in one batch
    X[b == "b1", 1] = 1.0
    X[np.flatnonzero(b == "b1")[0], 1] = 1.0 + 1e-12  # nearly constant in another
    X[:, 2] = 3.0 + 1e-300 * (b == "b2")
    sel = _quiet(glfs.select, X, "graph_moran", n_features_to_select=5, batches=b)
    assert not np.isinf(sel.scores).any() and not np.isinf(sel.extra["batch_scores"]).any()


# ---- refusals ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "kw", "match"),
    [
        ("lapaofs", {"batches": "b"}, r"does not take batches.*batch-aware methods are \['laplacian_score'"),
        ("laplacian_score", {"batches": "short"}, r"batches must have length 180"),
        ("laplacian_score", {"batches": "missing"}, r"batches must not contain missing values"),
        ("glfs_exact", {"batches": "b", "n_features_to_select": None}, r"does not take batches"),
    ],
)
def test_bad_batches_are_refused(method, kw, match):
    X, b = _data()
    given = {"b": b, "short": b[:10], "missing": np.where(np.arange(b.size) == 3, None, b).astype(object)}
    kw = {"n_features_to_select": 5, **kw, "batches": given[kw["batches"]]}
    with pytest.raises(ValueError, match=match):
        glfs.select(X, method, **kw)


def test_select_by_batch_names_the_batches_left_out_in_its_result():
    X, b = _data(per_batch=(50, 2, 50))

    def one(rows):
        return glfs.select(X[rows], "variance", n_features_to_select=4), None, rows

    sel = select_by_batch(one, b, method="variance", n_features=4, higher_is_better=True, min_cells=10, why_min="test")
    assert list(sel.extra["left_out"]) == ["b1"] and "2 cells, fewer than 10 (test)" in sel.extra["left_out"]["b1"]
    assert sel.extra["batches"] == ["b0", "b2"] and "graph" not in sel.extra


# ---- scanpy's flavours: scanpy's batch_key --------------------------------------------------------------

HVG = ["hvg_seurat", "hvg_cell_ranger", "hvg_seurat_v3", "hvg_pearson_residuals"]


def _scanpy_call(method, X, b, n):
    sc = pytest.importorskip("scanpy")
    ad = pytest.importorskip("anndata")
    a = ad.AnnData(X=X.astype(np.float32))
    a.obs["batch"] = np.asarray(b).astype(str)
    a.obs["batch"] = a.obs["batch"].astype("category")
    if method == "hvg_pearson_residuals":
        return sc.experimental.pp.highly_variable_genes(a, n_top_genes=n, batch_key="batch", inplace=False)
    flavor = method.removeprefix("hvg_")
    return sc.pp.highly_variable_genes(a, flavor=flavor, n_top_genes=n, batch_key="batch", inplace=False)


@pytest.mark.parametrize("method", HVG)
def test_scanpy_flavours_select_what_scanpy_selects_with_batch_key(method):
    # scanpy #4370, #3027: with batch_key (and subset=True) the genes kept were not the top ones
    pytest.importorskip("scanpy")
    C, b = _data(d=300, per_batch=(150, 150, 150), counts=True, seed=3)
    X = C if method in ("hvg_seurat_v3", "hvg_pearson_residuals") else np.log1p(C)
    sel = _quiet(glfs.select, X, method, n_features_to_select=40, batches=b)
    df = _quiet(_scanpy_call, method, X, b, 40)
    expected = df["highly_variable"].to_numpy(dtype=bool)
    np.testing.assert_array_equal(sel.selected, expected)
    assert set(sel.ranking[:40]) == set(np.flatnonzero(expected))  # the top of the ranking is the selection
    np.testing.assert_array_equal(sel.extra["nbatches"], df["highly_variable_nbatches"].to_numpy())
    if "highly_variable_rank" in df:  # scanpy's median rank counts from 0
        np.testing.assert_array_equal(sel.extra["median_rank"], df["highly_variable_rank"].to_numpy() + 1)
    assert sel.params["batches"] == ["b0", "b1", "b2"]


def test_seurat_v3_refuses_a_batch_its_loess_cannot_fit():
    # scanpy #2669, #1825: the loess fit fails on small batches; scanpy raises (without naming the batch),
    # and so does hvg_seurat_v3, naming the batch, its size and the fixes; no batch is dropped
    pytest.importorskip("skmisc")
    C, b = _data(d=300, per_batch=(150, 150, 3), counts=True, seed=3)
    with pytest.raises(ValueError, match=r"cannot fit 1 of 3 batches: \{'b2': 3\}.*larger span"):
        _quiet(glfs.select, C, "hvg_seurat_v3", n_features_to_select=40, batches=b)
    with pytest.raises(ValueError):  # scanpy itself refuses the same call
        _quiet(_scanpy_call, "hvg_seurat_v3", C, b, 40)
    keep = b != "b2"
    sel = _quiet(glfs.select, C[keep], "hvg_seurat_v3", n_features_to_select=40, batches=b[keep])
    assert sel.params["batches"] == ["b0", "b1"] and "batches_left_out" not in sel.params


# ---- adapters ------------------------------------------------------------------------------------------


def test_feature_selector_takes_batches_in_fit_and_in_a_pipeline():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    from glfs.sklearn import FeatureSelector

    X, b = _data()
    expected = glfs.select(X, "variance", n_features_to_select=9, batches=b).selected
    fs = FeatureSelector(method="variance", n_features_to_select=9).fit(X, batches=b)
    np.testing.assert_array_equal(fs.get_support(), expected)
    assert not fs.get_support()[SHIFT]
    y = (X[:, 0] > np.median(X[:, 0])).astype(int)
    pipe = Pipeline(
        [("select", FeatureSelector(method="variance", n_features_to_select=9)), ("clf", LogisticRegression())]
    )
    pipe.fit(X, y, select__batches=b)
    np.testing.assert_array_equal(pipe.named_steps["select"].get_support(), expected)


@pytest.mark.parametrize("launch_values", [None, 1])
def test_deviance_scores_every_batch_in_one_pass_as_each_batch_alone(monkeypatch, launch_values):
    # interleaved batches of unequal size (one of 3 cells, one of 1 cell left out), sparse counts with a stored zero
    from glfs.scores import _genewise as genewise

    if launch_values:  # one batch per kernel launch
        monkeypatch.setattr(genewise, "BATCH_PART_VALUES", launch_values)
    rng = np.random.default_rng(3)
    n, d = 140, 25
    C = sp.csr_matrix(rng.poisson(rng.gamma(0.5, 2.0, d), size=(n, d)).astype(np.float32))
    C.data[0] = 0.0  # an explicitly stored zero
    codes = rng.choice([0, 1, 2], n, p=[0.5, 0.3, 0.2])
    codes[rng.choice(n, 3, replace=False)] = 3
    codes[np.flatnonzero(codes == 2)[0]] = -1  # left out
    got = genewise.deviance_by_batch(C, codes, 4)
    for k in range(4):
        np.testing.assert_array_equal(got[k], genewise.deviance_score(C[codes == k]))
    np.testing.assert_array_equal(genewise.deviance_by_batch(C.toarray(), codes, 4), got)  # dense = sparse


def test_deviance_with_batches_never_scores_a_batch_alone(monkeypatch):
    # glfs.select(..., batches=) scores the batches in one pass: the Selection of the batches scored one by one
    from dataclasses import replace

    from glfs.api import method_info
    from glfs.scores._batches import run_by_batch

    X, b = _data(counts=True)
    one_by_one = _quiet(run_by_batch, replace(method_info("deviance"), batch_fn=None), X, b, n_features=5, counts=X)

    def alone(*a, **kw):
        raise AssertionError("a batch scored alone")

    monkeypatch.setattr(glfs.api, "deviance_score", alone)
    one_pass = _quiet(glfs.select, X, "deviance", n_features_to_select=5, batches=b)
    _same(one_pass, one_by_one)
    for key in ("batch_scores", "batch_ranks", "nbatches", "median_rank"):
        np.testing.assert_array_equal(one_pass.extra[key], one_by_one.extra[key])
    assert one_pass.params == one_by_one.params


# ---- the batch-balanced neighbourhoods of the local share: the library's search against a written-out brute force ----
def _groups_written_out(Z, codes, k):
    """{(i, b): sorted cells}: i's group in batch b, by brute force in float64 (ties: the smaller index first)."""
    K = int(codes.max()) + 1
    out = {}
    for i in range(Z.shape[0]):
        for b in range(K):
            ref = np.flatnonzero(codes == b)
            if ref.size <= k:
                g = ref
            else:
                others = ref[ref != i]
                dist = np.sqrt(((Z[others] - Z[i]) ** 2).sum(axis=1))
                near = others[np.lexsort((others, dist))]
                g = np.r_[i, near[: k - 1]] if codes[i] == b else near[:k]
            out[(i, b)] = np.sort(g)
    return out


def _share_written_out(X, codes, Z, k, centres=None):
    """local_batch_share by its definition: a one-way ANOVA by batch in each neighbourhood, pooled, less the null
    (the neighbourhoods of ``centres``, indices among the scored cells, or of every scored cell)."""
    keep = np.flatnonzero(codes >= 0)
    X, Z = X[keep], Z[keep]
    c = np.unique(codes[keep], return_inverse=True)[1]
    K, d = int(c.max()) + 1, X.shape[1]
    centres = np.arange(keep.size) if centres is None else centres
    n = len(centres)
    groups = _groups_written_out(Z, c, k)
    ss_b, ss_t, df_w = np.zeros(d), np.zeros(d), 0
    for i in centres:
        gs = [groups[(i, b)] for b in range(K)]
        cells = np.concatenate(gs)
        m = X[cells].mean(axis=0)
        ss_t += ((X[cells] - m) ** 2).sum(axis=0)
        ss_b += sum(len(g) * (X[g].mean(axis=0) - m) ** 2 for g in gs)
        df_w += cells.size - K
    df_b = n * (K - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ss_t > 1e-9, (ss_b - df_b / df_w * (ss_t - ss_b)) / ss_t, np.nan)


def _as_groups(rows, cols, n, K):
    out = {}
    for i in range(n):
        for b in range(K):
            out[(i, b)] = np.sort(cols[rows == i * K + b])
    return out


def _tied_data(seed=0):
    """40 cells in 3 batches (12, 25, 3 cells): every position held by two cells (ties at distance 0 and
    between pairs), the third batch smaller than n_per_batch."""
    rng = np.random.default_rng(seed)
    base = rng.integers(-3, 4, size=(20, 3)).astype(float)  # integers: equal distances are equal in float32 too
    Z = np.repeat(base, 2, axis=0)[rng.permutation(40)]
    codes = np.repeat([0, 1, 2], [12, 25, 3])[rng.permutation(40)]
    X = rng.normal(size=(40, 6))
    X[:, 5] = 2.0  # constant: NaN
    return X, codes, Z


@pytest.mark.parametrize("backend", ["faiss", "sklearn"])
def test_neighbourhoods_equal_the_brute_force_with_ties_and_a_small_batch(monkeypatch, backend):
    if backend == "faiss":
        pytest.importorskip("faiss")
    monkeypatch.setattr(nb, "exact_backend", lambda: backend)
    X, codes, Z = _tied_data()
    for k in (1, 2, 4):
        rows, cols = batch_neighbourhoods(Z, codes, k)
        got, want = _as_groups(rows, cols, 40, 3), _groups_written_out(Z, codes, k)
        for key in want:
            np.testing.assert_array_equal(got[key], want[key], err_msg=f"k={k}, (cell, batch)={key}")
    np.testing.assert_allclose(
        local_batch_share(X, codes, Z, 4), _share_written_out(X, codes, Z, 4), rtol=1e-9, atol=1e-12
    )


def test_share_with_cells_left_out_and_one_batch_equals_the_brute_force():
    X, codes, Z = _tied_data(1)
    left = np.where(codes == 2, -1, codes)  # the small batch left out: two batches remain
    got = local_batch_share(sp.csr_matrix(X), left, Z, 3)
    np.testing.assert_allclose(got, _share_written_out(X, left, Z, 3), rtol=1e-9, atol=1e-12)
    assert np.isnan(got[5])
    one = local_batch_share(X, np.where(codes == 1, 0, -1), Z, 3)  # one batch scored: 0, NaN for the constant
    assert np.isnan(one[5]) and np.all(one[:5] == 0)


@pytest.mark.parametrize("backend", ["faiss", "sklearn"])
def test_share_on_a_draw_of_centres_equals_the_brute_force_on_those_centres(monkeypatch, backend):
    # above LOCAL_SHARE_CENTRES scored cells the sums run over a seeded uniform draw of that many centres; every
    # cell stays a possible neighbour.  Written out: the draw (numpy's seeded choice, sorted) and the ANOVA on it
    if backend == "faiss":
        pytest.importorskip("faiss")
    monkeypatch.setattr(nb, "exact_backend", lambda: backend)
    X, codes, Z = _tied_data(2)
    left = np.where(np.arange(40) % 7 == 0, -1, codes)  # cells left out too
    m = 15
    centres = np.sort(np.random.default_rng(5).choice(int(np.sum(left >= 0)), m, replace=False))
    got = local_batch_share(X, left, Z, 3, random_state=5, max_centres=m)
    np.testing.assert_allclose(got, _share_written_out(X, left, Z, 3, centres), rtol=1e-9, atol=1e-12)
    c = np.unique(left[left >= 0], return_inverse=True)[1]
    rows, cols = batch_neighbourhoods(Z[left >= 0], c, 3, centres=centres)
    want = _groups_written_out(Z[left >= 0], c, 3)
    K = int(c.max()) + 1
    for j, cell in enumerate(centres):
        for b in range(K):
            np.testing.assert_array_equal(np.sort(cols[rows == j * K + b]), want[(cell, b)])
    assert not np.allclose(np.nan_to_num(got), np.nan_to_num(local_batch_share(X, left, Z, 3)))  # not every centre


def test_ivf_probing_every_list_gives_the_exact_neighbourhoods():
    # method="approx" on 300 cells: batches of 100 cells, 10 lists each, every list probed (ivf_nprobe on 16
    # components: 32 x 16 / 50 up, 11, at most the 10 lists): the candidates are the exact ones, so the neighbourhoods are too
    pytest.importorskip("faiss")
    assert nb.ivf_nprobe(10, 16) == 10
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(300, 16))
    codes = rng.permutation(np.repeat([0, 1, 2], 100))
    exact = _as_groups(*batch_neighbourhoods(Z, codes, 5, method="exact"), 300, 3)
    approx = _as_groups(*batch_neighbourhoods(Z, codes, 5, method="approx", random_state=3), 300, 3)
    want = _groups_written_out(Z, codes, 5)
    for key in want:
        np.testing.assert_array_equal(exact[key], want[key])
        np.testing.assert_array_equal(approx[key], want[key])


def test_auto_is_exact_below_the_index_threshold_and_the_index_above(monkeypatch):
    pytest.importorskip("faiss")
    seen = []
    real = nb._ivf_index
    monkeypatch.setattr(nb, "_ivf_index", lambda *a, **k: seen.append(a[0].shape[0]) or real(*a, **k))
    rng = np.random.default_rng(4)
    Z, codes = rng.normal(size=(600, 4)), rng.integers(0, 2, 600)
    batch_neighbourhoods(Z, codes, 3)
    assert seen == []
    monkeypatch.setattr(nb, "AUTO_INDEX_MIN_SAMPLES", 500)
    monkeypatch.setattr(nb, "AUTO_APPROX_MIN_SAMPLES", 500)
    batch_neighbourhoods(Z, codes, 3)
    assert sorted(seen) == sorted(np.bincount(codes).tolist())


def test_local_batch_share_is_the_neighbourhood_anova_written_out():
    # brute force: each cell's k nearest (Euclidean on Z) in every batch, one-way ANOVA by batch pooled over the
    # neighbourhoods, the between part less its expectation without a batch effect (_share_written_out)
    rng = np.random.default_rng(3)
    n, d, k = 40, 5, 3
    codes = np.repeat([0, 1, 2], [12, 15, 13])
    Z = rng.normal(size=(n, 2))
    X = rng.normal(size=(n, d))
    X[:, 4] = 1.5  # constant: NaN
    expected = _share_written_out(X, codes, Z, k)
    got = local_batch_share(X, codes, Z, k)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(local_batch_share(sp.csr_matrix(X), codes, Z, k), expected, rtol=1e-9, atol=1e-12)
    assert np.isnan(got[4])
    left = np.where(codes == 1, -1, codes)  # a batch left out: the share over the other cells, codes 0 and 2
    keep = codes != 1
    np.testing.assert_allclose(
        local_batch_share(X, left, Z, k),
        local_batch_share(X[keep], np.where(codes[keep] == 2, 1, 0), Z[keep], k),
        rtol=1e-12,
    )
    one = local_batch_share(X, np.zeros(n, int), Z, k)
    assert np.isnan(one[4]) and np.all(np.delete(one, 4) == 0)


def test_local_batch_share_sees_a_shift_within_one_type_and_not_composition():
    # gene 0 moves with the batch inside type 0 only; gene 1 marks type 0, whose share of the cells differs between
    # the batches (composition); gene 2 is noise.  The global share counts composition, the local one does not.
    from glfs.scores._batches import between_batch_share, local_batch_share

    rng = np.random.default_rng(0)
    codes = np.repeat([0, 1], 300)
    types = np.where(codes == 0, rng.random(600) < 0.8, rng.random(600) < 0.2).astype(int)
    X = rng.normal(size=(600, 3))
    X[:, 0] += 2.0 * codes * (types == 1)
    X[:, 1] += 4.0 * types
    Z = np.column_stack([4.0 * types + rng.normal(scale=0.3, size=600), rng.normal(size=600)])
    local = local_batch_share(X, codes, Z, 5)
    glob = between_batch_share(X, codes)
    assert local[0] > 0.2 and abs(local[1]) < 0.05 and abs(local[2]) < 0.05
    assert glob[1] > 0.2  # composition: between the batches over all cells


def test_minus_global_local_share_adds_the_local_share_and_is_plain_with_one_batch():
    X, b = _data()
    plain = _quiet(glfs.select, X, "graph_moran", n_features_to_select=5)
    one = _run(X, np.zeros(X.shape[0], int), "minus_global_local_share", n=5)
    _same(one, plain)
    sel = _run(X, b, "minus_global_local_share")
    assert sel.params["batch_rule"] == "minus_global_local_share"
    penalty = np.nan_to_num(sel.extra["between_batch_share"]) + np.nan_to_num(sel.extra["local_batch_share"])
    np.testing.assert_allclose(sel.scores, sel.extra["mean_moran_i"] - penalty)
    assert not sel.selected[SHIFT] and sel.extra["local_batch_share"][SHIFT] > 0.5


def test_minus_global_local_share_builds_the_same_first_graph_on_its_components():
    # the first graph is searched on the components the local share was computed on: the graph cell_graph builds
    X, b = _data()
    sel = _quiet(
        glfs.select,
        X,
        "graph_moran",
        n_features_to_select=5,
        graph_from="all_genes",
        batches=b,
        batch_rule="minus_global_local_share",
    )
    assert (sel.extra["graph"] != cell_graph(X, batches=b)).nnz == 0
    left = np.array(b, dtype=object)
    left[:3] = "tiny"  # a batch of 3 cells, left out: the components of the other cells
    sel = _quiet(
        glfs.select,
        X,
        "graph_moran",
        n_features_to_select=5,
        graph_from="all_genes",
        batches=left,
        batch_rule="minus_global_local_share",
    )
    keep = np.flatnonzero(left != "tiny")
    W = cell_graph(X[keep], batches=left[keep])
    assert sel.params["batches_left_out"] == ["tiny"]
    assert (sel.extra["graph"][keep][:, keep] != W).nnz == 0
