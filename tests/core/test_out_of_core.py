"""Out-of-core X (issue 21, item 2): an AnnData backed .h5ad (CSR or CSC) and a dask array give the
in-memory scores, through the functions, glfs.select and glfs.tl.select, with a peak memory that does
not grow with the matrix; the methods that cannot stream say so."""

import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import glfs
import glfs.core._out_of_core as ooc
import glfs.core.limits
from glfs import ConstantFeatureWarning
from glfs.scores._genewise import deviance_score
from glfs.scores._moran import graph_autocorrelation

ad = pytest.importorskip("anndata")
da = pytest.importorskip("dask.array")


def _counts(n, d, density, seed):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, 3, n)
    X = sp.random(n, d, density=density, random_state=rng, format="csr", dtype=np.float64)
    X.data = np.round(X.data * 10) + 1
    X = X.tolil()
    X[groups == 0, :5] = 8.0  # planted: five genes on the cells of group 0
    return sp.csr_matrix(X, dtype=np.float32), groups


def _graph(n, k, seed):
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), k)
    cols = (rows + rng.integers(1, n, rows.size)) % n
    A = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    return A.maximum(A.T).tocsr()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    X, groups = _counts(600, 150, 0.08, 0)
    W = _graph(600, 8, 1)
    d = tmp_path_factory.mktemp("ooc")
    files = {}
    for fmt in ("csr", "csc"):
        a = ad.AnnData(X=X.asformat(fmt))
        a.obsp["connectivities"] = W
        a.obs["group"] = groups.astype(str)
        files[fmt] = d / f"x_{fmt}.h5ad"
        a.write_h5ad(files[fmt])
    a = ad.AnnData(X=X.toarray())
    files["dense"] = d / "x_dense.h5ad"
    a.write_h5ad(files["dense"])
    return X, W, groups, files


def _all_scores(X, W, groups):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantFeatureWarning)
        g = graph_autocorrelation(X, W)
        return {
            "laplacian_score": glfs.laplacian_score(X, W),
            "variance": glfs.variance_score(X),
            "fisher_score": glfs.fisher_score(X, groups),
            "moran_i": g.moran_i,
            "moran_z": g.z,
            "deviance": deviance_score(X),
        }


def _sources(X, files):
    yield "backed-csr", ad.read_h5ad(files["csr"], backed="r").X
    yield "backed-csc", ad.read_h5ad(files["csc"], backed="r").X
    yield "backed-dense", ad.read_h5ad(files["dense"], backed="r").X
    yield "dask-sparse", da.from_array(X, chunks=(128, 150))
    yield "dask-sparse-2d", da.from_array(X, chunks=(200, 60))
    yield "dask-dense", da.from_array(X.toarray(), chunks=(128, 40))


@pytest.mark.parametrize("small_blocks", [False, True])
def test_out_of_core_equals_in_memory(data, small_blocks, monkeypatch):
    X, W, groups, files = data
    if small_blocks:  # many gene blocks and row blocks: the same sums
        monkeypatch.setattr(glfs.core.limits, "STREAM_VALUES", 1000)
    ref = _all_scores(X, W, groups)
    for name, src in _sources(X, files):
        got = _all_scores(src, W, groups)
        for key, r in ref.items():
            np.testing.assert_allclose(got[key], r, rtol=1e-9, atol=1e-14, equal_nan=True, err_msg=f"{key} {name}")


def test_select_and_tl_select_on_backed_and_dask(data):
    X, W, groups, files = data
    ref = glfs.laplacian_score(X, W)
    backed = ad.read_h5ad(files["csr"], backed="r")
    # the call, with scanpy's graph: it raised "'<' not supported between '_CSRDataset' and 'int'"
    df = glfs.tl.select(backed, "laplacian_score", 5, obsp="connectivities", inplace=False)
    np.testing.assert_allclose(df["score"].to_numpy(), ref, rtol=1e-9)
    assert set(np.flatnonzero(df["selected"])) <= set(range(5)) | set(np.argsort(ref)[:5])
    glfs.tl.select(backed, "variance", 10)
    np.testing.assert_allclose(backed.var["variance_score"].to_numpy(), glfs.variance_score(X), rtol=1e-9)
    glfs.tl.select(backed, "fisher_score", 10, labels_key="group")
    np.testing.assert_allclose(backed.var["fisher_score_score"].to_numpy(), glfs.fisher_score(X, groups), rtol=1e-9)
    for src in (ad.read_h5ad(files["csc"], backed="r").X, da.from_array(X, chunks=(100, 150))):
        sel = glfs.select(src, "laplacian_score", graph=W, n_features_to_select=5)
        np.testing.assert_allclose(sel.scores, ref, rtol=1e-9)
    sel = glfs.select(da.from_array(X, chunks=(100, 150)), "graph_moran", graph=W, n_features_to_select=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantFeatureWarning)
        np.testing.assert_allclose(sel.scores, graph_autocorrelation(X, W).moran_i, rtol=1e-9)


def test_the_planted_genes_come_first(data):
    X, W, groups, files = data
    # a graph that joins cells of the same group: the planted genes are the smoothest
    same = _graph(600, 8, 1).multiply(groups[:, None] == groups[None, :]).tocsr()
    same = same + sp.csr_matrix((np.ones(600), (np.arange(600), (np.arange(600) + 3) % 600)), shape=(600, 600))
    same = same.maximum(same.T).tocsr()
    s = glfs.laplacian_score(ad.read_h5ad(files["csr"], backed="r").X, same)
    assert set(np.argsort(s)[:5]) == set(range(5))


@pytest.mark.parametrize(
    "method, why",
    [
        ("lapaofs", "it needs X in memory"),
        ("hvg_seurat", "it needs X in memory"),
        ("graph_moran", "it builds its own graph in memory: pass graph="),
    ],
)
def test_methods_that_cannot_stream_say_so(data, method, why):
    X, W, groups, files = data
    backed = ad.read_h5ad(files["csr"], backed="r")
    pattern = (
        rf"method '{method}' cannot stream an out-of-core X \(an AnnData backed CSR matrix 600 x 150, "
        rf"float32\): {why}"
    )
    with pytest.raises(ValueError, match=pattern):
        glfs.select(backed.X, method, n_features_to_select=5)
    with pytest.raises(ValueError, match=pattern):
        glfs.tl.select(backed, method, 5)
    assert "laplacian_score" not in backed.var  # a failed call leaves the AnnData unchanged


def test_other_functions_refuse_out_of_core_with_the_way_out(data):
    X, W, groups, files = data
    src = da.from_array(X, chunks=(100, 150))
    with pytest.raises(
        ValueError,
        match=r"X is an out-of-core matrix \(a dask sparse matrix 600 x 150, float32\); "
        r"this function needs it in memory. Load it first .*X.compute\(\)",
    ):
        glfs.lapaofs(src, W, n_features=3)


def test_non_finite_values_are_found_while_streaming(tmp_path):
    X, _ = _counts(50, 20, 0.3, 3)
    X = X.tolil()
    X[30, 4] = np.nan
    src = da.from_array(sp.csr_matrix(X), chunks=(20, 20))
    with pytest.raises(
        ValueError,
        match=r"X must contain only finite values; got 1 NaN or infinite entries, first at row 30, column 4 \(value nan\)",
    ):
        glfs.variance_score(src)


def test_peak_memory_does_not_grow_with_the_matrix(tmp_path, monkeypatch):
    # backed CSR files of 5 and 16 MB (float32 values, int32 indices) streamed in blocks of 200,000 values:
    # the traced peak is the same for both, and a fraction of the larger matrix
    monkeypatch.setattr(glfs.core.limits, "STREAM_VALUES", 200_000)
    W = _graph(2_000, 10, 5)
    glfs.laplacian_score(sp.random(100, 50, density=0.3, format="csr"), W[:100, :100] + sp.eye(100))  # compile first
    peaks, sizes = {}, {}
    for d in (3_500, 10_500):
        X, _ = _counts(2_000, d, 0.1, 4)
        f = tmp_path / f"x{d}.h5ad"
        ad.AnnData(X=X).write_h5ad(f)
        sizes[d] = (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**20
        backed = ad.read_h5ad(f, backed="r")
        for name, fn in (
            ("laplacian_score", lambda backed=backed: glfs.laplacian_score(backed.X, W)),
            ("moran", lambda backed=backed: graph_autocorrelation(backed.X, W)),
        ):
            tracemalloc.start()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConstantFeatureWarning)
                    fn()
                peaks[name, d] = tracemalloc.get_traced_memory()[1] / 2**20
            finally:
                tracemalloc.stop()
    for name in ("laplacian_score", "moran"):
        assert peaks[name, 10_500] < 1.3 * peaks[name, 3_500], (peaks, sizes)
        assert peaks[name, 10_500] < 0.5 * sizes[10_500], (peaks, sizes)


def test_a_row_stored_file_read_many_times_says_how_to_read_it_once(data, monkeypatch, caplog):
    """Without the split (SPILL = False), a CSR file read once per gene block logs the pass count and
    the two ways out; a CSC file, sliced by columns, does not (its gene blocks are separate reads)."""
    import logging

    X, W, groups, files = data
    monkeypatch.setattr(glfs.core.limits, "STREAM_VALUES", 1000)
    monkeypatch.setattr(glfs.core.limits, "SPILL", False)
    n_blocks = len(list(ooc._gene_partition(np.diff(X.tocsc().indptr), 1000)))
    assert n_blocks > 1
    with caplog.at_level(logging.INFO, logger="glfs.core._out_of_core"):
        glfs.variance_score(ad.read_h5ad(files["csr"], backed="r").X)
    said = [r.getMessage() for r in caplog.records if "stored by rows" in r.getMessage()]
    assert said and f"{n_blocks} times" in said[0] and "tocsc()" in said[0] and "STREAM_VALUES" in said[0]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="glfs.core._out_of_core"):
        glfs.variance_score(ad.read_h5ad(files["csc"], backed="r").X)
    assert not [r for r in caplog.records if "stored by rows" in r.getMessage()]


# ---- the split of a row-stored X into its gene blocks through temporary files (SPILL) ----------


def _unsorted(X, seed):
    """X with the stored entries of every row in a random order (a valid, non-canonical CSR)."""
    rng = np.random.default_rng(seed)
    X = X.copy()
    for i in range(X.shape[0]):
        a, b = X.indptr[i], X.indptr[i + 1]
        order = a + rng.permutation(b - a)
        X.indices[a:b], X.data[a:b] = X.indices[order], X.data[order]
    X.has_sorted_indices = False
    return X


@pytest.fixture
def split_dir(tmp_path, monkeypatch):
    """tempfile's directory pointed at an empty folder, so the split's files can be watched."""
    import tempfile

    where = tmp_path / "tmpdir"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    monkeypatch.setattr(glfs.core.limits, "STREAM_VALUES", 1000)
    return where


def _blocks(src, spill, monkeypatch):
    monkeypatch.setattr(glfs.core.limits, "SPILL", spill)
    return list(ooc.OutOfCore(src).validate().column_blocks())


@pytest.mark.parametrize("kind", ["backed-csr", "backed-csr-unsorted", "dask-sparse"])
def test_the_split_gives_the_gene_blocks_of_the_matrix(data, tmp_path, split_dir, monkeypatch, kind, caplog):
    """Each gene block from the split equals scipy's column slice of the in-memory X (values, pattern,
    shape), and the same block read once per gene block; empty rows and all-zero genes included."""
    import logging

    X, *_ = data
    X = sp.hstack([X, sp.csr_matrix((X.shape[0], 40), dtype=X.dtype)]).tocsr()  # 40 all-zero genes at the end
    keep = np.ones(X.shape[0], X.dtype)
    keep[[7, 8, 300]] = 0  # empty rows
    X = sp.csr_matrix(sp.diags(keep) @ X)
    X.eliminate_zeros()
    if kind == "backed-csr-unsorted":
        X = _unsorted(X, 3)
    if kind == "dask-sparse":
        src = da.from_array(X, chunks=(128, X.shape[1]))
    else:
        f = tmp_path / "x.h5ad"
        ad.AnnData(X=X).write_h5ad(f)
        src = ad.read_h5ad(f, backed="r").X
    with caplog.at_level(logging.INFO, logger="glfs.core._out_of_core"):
        split = _blocks(src, True, monkeypatch)
    assert any("splitting it into" in r.getMessage() for r in caplog.records)
    passes = _blocks(src, False, monkeypatch)
    assert len(split) == len(passes) >= 3
    assert [sl for sl, _ in split] == [sl for sl, _ in passes]
    for (sl, A), (_, B) in zip(split, passes):
        ref = X[:, sl]
        assert A.format == "csr" and A.shape == ref.shape and A.dtype == X.dtype
        assert abs(A - ref).max() == 0 and A.nnz == ref.nnz
        assert abs(A - B).max() == 0
    assert not list(split_dir.iterdir())  # the temporary files are gone


def test_the_split_files_are_removed_as_blocks_are_read_and_when_stopped(data, split_dir, monkeypatch):
    X, W, groups, files = data
    monkeypatch.setattr(glfs.core.limits, "SPILL", True)
    src = ooc.OutOfCore(ad.read_h5ad(files["csr"], backed="r").X).validate()
    blocks = src.column_blocks()
    next(blocks)
    (where,) = split_dir.iterdir()
    assert where.name.startswith("glfs-split-")
    n_left = len(list(where.iterdir()))
    next(blocks)
    assert len(list(where.iterdir())) == n_left - 3  # the block read is deleted (values, indices, row lengths)
    blocks.close()  # a caller that stops early
    assert not list(split_dir.iterdir())

    def boom(*a, **k):
        raise RuntimeError("the caller failed")

    with pytest.raises(RuntimeError, match="the caller failed"):
        for _sl, _B in src.column_blocks():
            boom()
    assert not list(split_dir.iterdir())


def test_without_disk_space_x_is_read_once_per_gene_block(data, split_dir, monkeypatch, caplog):
    import collections
    import logging

    X, W, groups, files = data
    monkeypatch.setattr(glfs.core.limits, "SPILL", True)
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(ooc.shutil, "disk_usage", lambda path: usage(2**40, 2**40 - 2**29, 2**29))
    with caplog.at_level(logging.INFO, logger="glfs.core._out_of_core"):
        got = glfs.laplacian_score(ad.read_h5ad(files["csr"], backed="r").X, W)
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "0.5 GiB free in" in said and "set TMPDIR to a larger disk" in said and "read once per gene block" in said
    assert not list(split_dir.iterdir())
    np.testing.assert_allclose(got, glfs.laplacian_score(X, W), rtol=1e-12)


def test_a_failed_write_names_the_space_and_the_ways_out(data, split_dir, monkeypatch):
    X, W, groups, files = data
    monkeypatch.setattr(glfs.core.limits, "SPILL", True)

    def full(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ooc, "open", full, raising=False)  # the module's file writes
    with pytest.raises(
        OSError,
        match=r"writing the split of an AnnData backed CSR matrix 600 x 150, float32 to .*"
        r"No space left on device.*needs 0.0 GiB: set TMPDIR .*SPILL = False",
    ):
        glfs.variance_score(ad.read_h5ad(files["csr"], backed="r").X)
    assert not list(split_dir.iterdir())


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, bool])
def test_the_validation_scan_counts_and_finds_the_largest_value(tmp_path, dtype):
    """The one-scan validation of a CSR file: non-zeros per gene, their total and max |x| (a negative
    value the largest; 1 for a boolean X) as scipy counts them; an infinite value is named by its file, row and column."""
    X, _ = _counts(300, 40, 0.2, 7)
    X = X.astype(dtype).tolil()
    if dtype is not bool:
        X[5, 3] = -50
    X = sp.csr_matrix(X)
    f = tmp_path / "x.h5ad"
    ad.AnnData(X=X).write_h5ad(f)
    got = ooc.OutOfCore(ad.read_h5ad(f, backed="r").X).validate()
    np.testing.assert_array_equal(got.gene_nnz, np.diff(X.tocsc().indptr))
    assert got.nnz == X.nnz and got.max_abs == (1.0 if dtype is bool else 50.0)
    if np.dtype(dtype).kind == "f":
        X.data[X.indptr[299]] = np.inf  # a stored entry of the last row
        ad.AnnData(X=X).write_h5ad(tmp_path / "inf.h5ad")
        with pytest.raises(
            ValueError,
            match=r"inf.h5ad:/X\) must contain only finite values; got 1 NaN or infinite entries, first at row 299, "
            rf"column {X.indices[X.indptr[299]]} \(value inf\)",
        ):
            ooc.OutOfCore(ad.read_h5ad(tmp_path / "inf.h5ad", backed="r").X).validate()


def test_a_boolean_sparse_x_scores_as_its_zero_one_values(tmp_path, monkeypatch):
    """A boolean sparse X, in memory and from a CSR file split into gene blocks, gives the scores of its
    0/1 float form (before, check_X failed on numpy's unary minus of booleans)."""
    monkeypatch.setattr(glfs.core.limits, "STREAM_VALUES", 500)
    X = sp.random(400, 60, density=0.3, format="csr", random_state=0).astype(bool)
    f = tmp_path / "b.h5ad"
    ad.AnnData(X=X).write_h5ad(f)
    W = _graph(400, 6, 2)
    ref = glfs.laplacian_score(X.astype(np.float64).toarray(), W)
    np.testing.assert_allclose(glfs.laplacian_score(X, W), ref, rtol=1e-9)
    np.testing.assert_allclose(glfs.laplacian_score(ad.read_h5ad(f, backed="r").X, W), ref, rtol=1e-9)
