"""The graph of an out-of-core X (issue 21, item 2): principal components fitted on a seeded
subsample of the samples (one pass) and every sample projected on them (a second pass), so a backed
.h5ad or a dask array gets its own graph, and glfs.select / glfs.tl.select score it without a graph
given, with memory that does not grow with the matrix."""

import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import glfs
import glfs.core.limits
import glfs.graph._neighbors as nb
from glfs import ConstantFeatureWarning

ad = pytest.importorskip("anndata")
da = pytest.importorskip("dask.array")

N_PCS = 10


def _planted(n, d, seed):
    """Log-like sparse values; three groups of cells, each with 6 genes of its own switched on."""
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, 3, n)
    X = sp.random(n, d, density=0.05, random_state=rng, format="lil", dtype=np.float64)
    for g in range(3):
        X[np.flatnonzero(groups == g)[:, None], np.arange(6 * g, 6 * g + 6)] = 3.0
    X = sp.csr_matrix(X, dtype=np.float32)
    X.data = np.round(X.data, 3)
    return X, groups


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    X, groups = _planted(900, 120, 0)
    d = tmp_path_factory.mktemp("oocg")
    files = {}
    for fmt in ("csr", "csc"):
        files[fmt] = d / f"x_{fmt}.h5ad"
        ad.AnnData(X=X.asformat(fmt)).write_h5ad(files[fmt])
    files["dense"] = d / "x_dense.h5ad"
    ad.AnnData(X=X.toarray()).write_h5ad(files["dense"])
    return X, groups, files


def _sources(X, files):
    yield "backed-csr", ad.read_h5ad(files["csr"], backed="r").X
    yield "backed-csc", ad.read_h5ad(files["csc"], backed="r").X
    yield "backed-dense", ad.read_h5ad(files["dense"], backed="r").X
    yield "dask-sparse", da.from_array(X, chunks=(250, 120))


def _edge_agreement(A, B):
    """Share of A's edges that B has too, and the largest weight difference on the shared edges."""
    a, b = A.tocsr() != 0, B.tocsr() != 0
    common = a.multiply(b)
    diff = abs(A - B).multiply(common)
    return common.nnz / a.nnz, (diff.max() if diff.nnz else 0.0)


def test_streamed_graph_is_the_in_memory_graph(data):
    """With every sample in the PCA fit (n <= PCA_FIT_SAMPLES) the streamed components are the
    in-memory ones: the same edges (float32 rounding may swap a tie) and the same weights."""
    X, groups, files = data
    W = glfs.similarity_graph(X, n_pcs=N_PCS, random_state=0)
    for name, src in _sources(X, files):
        Wo = glfs.similarity_graph(src, n_pcs=N_PCS, random_state=0)
        share, wdiff = _edge_agreement(W, Wo)
        assert share > 0.995 and wdiff < 1e-3, (name, share, wdiff)
        assert Wo.shape == W.shape and (Wo != Wo.T).nnz == 0 and Wo.diagonal().max() == 0


def test_scores_without_a_graph_given(data):
    """glfs.select and glfs.tl.select build the graph of a backed X themselves and give the scores
    of the in-memory X on the same kind of graph; the planted genes come first."""
    X, groups, files = data
    gp = {"n_pcs": N_PCS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantFeatureWarning)
        ref = glfs.select(X, "laplacian_score", n_features_to_select=18, graph_params=gp, random_state=0)
        backed = ad.read_h5ad(files["csr"], backed="r")
        got = glfs.select(backed.X, "laplacian_score", n_features_to_select=18, graph_params=gp, random_state=0)
        np.testing.assert_allclose(got.scores, ref.scores, rtol=1e-3)
        assert set(np.flatnonzero(got.selected)) == set(range(18))
        glfs.tl.select(backed, "laplacian_score", 18, graph_params=gp, random_state=0)
    assert set(np.flatnonzero(backed.var["laplacian_score"].to_numpy())) == set(range(18))
    assert backed.obsp["glfs_connectivities"].shape == (900, 900)
    recorded = backed.uns["laplacian_score"]["params"]["graph_params"]  # the resolved settings of that graph
    assert recorded["out_of_core"] is True and recorded["n_pcs"] == N_PCS and recorded["search"] == "exact"


def test_a_subsample_fit_finds_the_same_structure(data, monkeypatch):
    """Components fitted on a third of the cells: the graph still joins cells of one group (as the
    full fit's does), and the planted genes still score best.  (Which cells of a group are
    neighbours is decided by noise, so the edges themselves need not be the full fit's.)"""
    X, groups, files = data
    r, c = glfs.similarity_graph(X, n_pcs=N_PCS, random_state=0).nonzero()
    assert np.mean(groups[r] == groups[c]) > 0.99
    monkeypatch.setattr(nb, "PCA_FIT_SAMPLES", 300)
    src = ad.read_h5ad(files["csr"], backed="r").X
    Wo = glfs.similarity_graph(src, n_pcs=N_PCS, random_state=0)
    r, c = Wo.nonzero()
    assert np.mean(groups[r] == groups[c]) > 0.99
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantFeatureWarning)
        s = glfs.laplacian_score(X, Wo)
    assert set(np.argsort(s)[:18]) == set(range(18))


def test_in_memory_x_above_the_fit_size_gets_the_same_subsample_components(data, monkeypatch):
    """Above PCA_FIT_SAMPLES an in-memory X (sparse or dense) is fitted on the same seeded draw as a
    backed one: its scores are (x - mean) V with V of scikit-learn's PCA on those rows written out,
    and its graph is the backed graph."""
    from sklearn.decomposition import PCA

    X, groups, files = data
    monkeypatch.setattr(nb, "PCA_FIT_SAMPLES", 300)
    rows = np.sort(np.random.default_rng(0).choice(900, 300, replace=False))
    ref = PCA(n_components=N_PCS, svd_solver="arpack", random_state=0).fit(X[rows].toarray())
    want = (X.toarray() - ref.mean_) @ ref.components_.T
    for Xin in (X, X.toarray()):
        np.testing.assert_allclose(nb._pca_in_memory(Xin, N_PCS, 0), want, rtol=1e-3, atol=1e-3 * np.abs(want).max())
    Wo = glfs.similarity_graph(ad.read_h5ad(files["csr"], backed="r").X, n_pcs=N_PCS, random_state=0)
    for Xin in (X, X.toarray()):
        share, wdiff = _edge_agreement(glfs.similarity_graph(Xin, n_pcs=N_PCS, random_state=0), Wo)
        assert share > 0.995 and wdiff < 1e-3, (type(Xin).__name__, share, wdiff)
    monkeypatch.setattr(nb, "PCA_FIT_SAMPLES", 900)  # every row: one route for every storage, the same scores
    for name, src in _sources(X, files):
        streamed = nb._pca_out_of_core(glfs.core._validation.check_X(src, lazy=True), N_PCS, 0)
        if name in ("backed-csr", "dask-sparse"):  # the same rows in the same order: bit for bit
            np.testing.assert_array_equal(nb._pca_in_memory(X, N_PCS, 0), streamed, err_msg=name)
        else:  # column blocks (CSC) or dense products: summed in another order, float32 rounding apart
            np.testing.assert_allclose(nb._pca_in_memory(X, N_PCS, 0), streamed, rtol=1e-4, atol=1e-4, err_msg=name)


def test_the_subsample_is_the_seeded_uniform_draw(data, monkeypatch):
    """Pass 1 holds exactly the rows of the seeded draw (checked against the draw written out)."""
    X, groups, files = data
    seen = {}
    real_fit_rows = nb._fit_rows

    def spy(src, rows):
        S = real_fit_rows(src, rows)
        seen["rows"], seen["S"] = rows, S
        return S

    monkeypatch.setattr(nb, "_fit_rows", spy)
    for name, src in _sources(X, files):
        nb._pca_out_of_core(glfs.core._validation.check_X(src, lazy=True), N_PCS, 7, max_fit_samples=250)
        rows = np.sort(np.random.default_rng(7).choice(900, 250, replace=False))
        np.testing.assert_array_equal(seen["rows"], rows)
        S = seen["S"].toarray() if sp.issparse(seen["S"]) else np.asarray(seen["S"])
        np.testing.assert_array_equal(S, X[rows].toarray(), err_msg=name)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        # from AUTO_APPROX_MIN_SAMPLES on (set to 500 here) an exact search on all genes cannot stream
        (
            {"method": "exact"},
            r"an out-of-core X \(an AnnData backed CSR matrix 900 x 120, float32\) of 500 samples or more gets its "
            r"graph from principal components .* got n_pcs=None.*pass n_pcs, e.g. 20",
        ),
        ({"n_pcs": N_PCS, "kernel": "cosine", "method": "approx"}, r"got n_pcs=10, metric='cosine'.*use kernel='heat'"),
    ],
)
def test_what_cannot_stream_says_so(data, kwargs, match, monkeypatch):
    X, groups, files = data
    monkeypatch.setattr(nb, "AUTO_APPROX_MIN_SAMPLES", 500)
    with pytest.raises(ValueError, match=match):
        glfs.similarity_graph(ad.read_h5ad(files["csr"], backed="r").X, **kwargs)


def test_peak_memory_of_the_streamed_graph(tmp_path, monkeypatch):
    """Backed CSR files of 2,000 cells x 3,500 and 31,500 genes; a fit on 200 cells and blocks of
    200,000 values: the traced peak is a small fraction of the larger matrix and grows far less than
    it (no dense n x d array, no copy of X)."""
    monkeypatch.setattr(glfs.core.limits, "STREAM_VALUES", 200_000)
    monkeypatch.setattr(nb, "PCA_FIT_SAMPLES", 200)
    monkeypatch.setattr(nb, "AUTO_APPROX_MIN_SAMPLES", 1_000)  # the streamed route (below it X is read whole)
    peaks, sizes = {}, {}
    for d in (3_500, 31_500):
        X, _ = _planted(2_000, d, 4)
        f = tmp_path / f"x{d}.h5ad"
        ad.AnnData(X=X).write_h5ad(f)
        sizes[d] = (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**20
        backed = ad.read_h5ad(f, backed="r")
        tracemalloc.start()
        try:
            glfs.similarity_graph(backed.X, n_pcs=N_PCS, random_state=0)
            peaks[d] = tracemalloc.get_traced_memory()[1] / 2**20
        finally:
            tracemalloc.stop()
    assert peaks[31_500] < 0.35 * sizes[31_500], (peaks, sizes)
    assert peaks[31_500] - peaks[3_500] < 0.35 * (sizes[31_500] - sizes[3_500]), (peaks, sizes)
