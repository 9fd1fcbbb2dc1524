"""A sparse X whose index arrays are corrupt is refused at the door, naming the matrix and the first bad
entry, in memory, backed and in dask blocks (issue 30, item 1); a non-canonical X (duplicate entries,
unsorted indices) scores as the matrix it means, the caller's X untouched (item 5).  Each corrupt case
runs in a forked child: before the check, an index past the last column ended the process with SIGSEGV."""

import numpy as np
import pytest
import scipy.sparse as sp

import glfs


def _good(fmt="csr", n=40, d=12, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.4, format=fmt, random_state=rng, dtype=np.float64)
    X.data[:] = rng.integers(1, 9, X.nnz)
    return X


def _corrupt(X, case):
    """A copy of X with one defect; also the text the error must contain (the first bad entry)."""
    X = X.copy()
    row = {t: next(i for i in range(X.shape[0]) if X.indptr[i] <= t < X.indptr[i + 1]) for t in (5, 7, 9)}
    if case == "index_past_end":
        X.indices[5] = X.shape[1] + 1000
        return X, f"stored value 5 (row {row[5]}) has column index {X.shape[1] + 1000}, outside [0, {X.shape[1]})"
    if case == "index_negative":
        X.indices[7] = -3
        return X, f"stored value 7 (row {row[7]}) has column index -3"
    if case == "indptr_decreasing":
        X.indptr[10] = X.indptr[11] + 2
        return X, f"indptr decreases at row 10 (indptr[10] = {X.indptr[10]}, indptr[11] = {X.indptr[11]})"
    if case == "indptr_last":
        X.indptr[-1] = X.indptr[-1] + 7
        return X, f"end at the {X.indices.size} stored values; got 0 ... {X.indptr[-1]}"
    if case == "indptr_short":
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=X.shape)
        X.indptr = X.indptr[:-4]
        return X, f"indptr must have {X.shape[0] + 1} entries (one per row + 1); got {X.shape[0] - 3}"
    if case == "nan_value":
        X.data[9] = np.nan
        return X, f"first at row {row[9]}, column {X.indices[9]} (value nan)"
    raise AssertionError(case)


CASES = ["index_past_end", "index_negative", "indptr_decreasing", "indptr_last", "indptr_short", "nan_value"]


def _graph(n):
    rng = np.random.default_rng(1)
    return glfs.similarity_graph(rng.normal(size=(n, 3)), n_neighbors=5)


def _entry(where, X, W):
    if where == "select_variance":
        return glfs.select(X, method="variance", n_features_to_select=3).scores
    if where == "laplacian_score":
        return glfs.laplacian_score(X, W)
    if where == "graph_moran":
        return glfs.select(X, graph=W, method="graph_moran", n_features_to_select=3).scores
    if where == "glfs_dense":
        return glfs.select(X, graph=W, method="lapaofs", n_features_to_select=3).scores
    if where == "graph":
        return glfs.similarity_graph(X, n_neighbors=5).toarray()
    if where == "tl_select":
        import anndata as ad

        adata = ad.AnnData(X)
        glfs.tl.select(adata, method="variance", n_top_genes=3)
        return adata.var.to_numpy()
    raise AssertionError(where)


@pytest.mark.parametrize(
    "where", ["select_variance", "laplacian_score", "graph_moran", "glfs_dense", "graph", "tl_select"]
)
@pytest.mark.parametrize("case", CASES)
def test_corrupt_sparse_x_refused_in_memory(in_child, case, where):
    X, first = _corrupt(_good(), case)
    W = _graph(X.shape[0])
    out = in_child(_entry, where, X, W)
    assert out[0] == "error", f"{case} in {where}: {out[:2]}"
    assert out[1] == "ValueError" and first in out[2], out
    assert out[2].startswith("X "), out  # names the matrix


@pytest.mark.parametrize("case", ["index_past_end", "index_negative"])
def test_corrupt_csc_and_coo_refused(case):
    from glfs.core._structure import check_sparse_structure

    X = _good("csc")
    X.indices[4] = 10_000 if case == "index_past_end" else -1
    with pytest.raises(ValueError, match=r"X is not a valid CSC matrix .*stored value 4 \(column 0\) has row index"):
        check_sparse_structure(X)
    C = _good("coo")
    C.col[6] = 10_000 if case == "index_past_end" else -1
    with pytest.raises(ValueError, match=r"X is not a valid COO matrix .*stored value 6 has column index"):
        glfs.select(C, method="variance", n_features_to_select=3)


def _write(tmp_path, case, fmt="csr"):
    """A valid .h5ad and a corrupted copy (the defect written into the file's arrays)."""
    import anndata as ad
    import h5py

    X = _good(fmt)
    path = tmp_path / f"{case}.h5ad"
    ad.AnnData(X).write_h5ad(path)
    with h5py.File(path, "r+") as f:
        idx, ptr, data = f["X/indices"][()], f["X/indptr"][()], f["X/data"][()]
        if case == "index_past_end":
            idx[5] = 10**6
        elif case == "index_negative":
            idx[7] = -3
        elif case == "indptr_decreasing":
            ptr[10] = ptr[11] + 2
        elif case == "indptr_last":
            ptr[-1] += 7
        elif case == "indptr_short":
            ptr = ptr[:-4]
        elif case == "nan_value":
            data[9] = np.nan
        for key, arr in (("indices", idx), ("indptr", ptr), ("data", data)):
            del f[f"X/{key}"]
            f[f"X/{key}"] = arr
    return path


def _backed(path, method):
    import anndata as ad

    a = ad.read_h5ad(path, backed="r")
    W = _graph(a.n_obs)
    return glfs.select(a.X, graph=W, method=method, n_features_to_select=3).scores


def _reader(path):
    from glfs_workflow.readers import read_matrix

    return read_matrix(path).X.toarray()


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("case", CASES)
def test_corrupt_h5ad_refused_backed_and_by_the_workflow_reader(in_child, tmp_path, case, fmt):
    pytest.importorskip("anndata")
    path = _write(tmp_path, case, fmt)
    for method in ("variance", "laplacian_score"):
        out = in_child(_backed, path, method)
        assert out[0] == "error" and out[1] == "ValueError", (case, fmt, method, out[:2])
        assert str(path) in out[2], out  # names the file
    out = in_child(_reader, path)
    assert out[0] == "error" and out[1] == "DataError" and out[2].startswith(f"{path}: "), (case, out)


def _row_block(X, r0, r1):
    """Rows r0:r1 of a CSR X cut from its arrays as stored (scipy's slicing would drop a bad column index)."""
    lo, hi = X.indptr[r0], X.indptr[r1]
    return sp.csr_matrix((X.data[lo:hi], X.indices[lo:hi], X.indptr[r0 : r1 + 1] - lo), shape=(r1 - r0, X.shape[1]))


def _dask_scores(X, n_rows):
    """A dask array whose blocks are the row blocks of X as stored (as a reader of corrupt files would give)."""
    da = pytest.importorskip("dask.array")
    import dask

    n, d = X.shape
    blocks = [
        da.from_delayed(
            dask.delayed(_row_block)(X, r, min(n, r + n_rows)),
            shape=(min(n, r + n_rows) - r, d),
            dtype=X.dtype,
            meta=sp.csr_matrix((0, 0)),
        )
        for r in range(0, n, n_rows)
    ]
    return glfs.select(da.concatenate(blocks, axis=0), method="variance", n_features_to_select=3).scores


@pytest.mark.parametrize("case", ["index_past_end", "index_negative", "nan_value"])
def test_corrupt_dask_block_refused(in_child, case):
    pytest.importorskip("dask.array")  # here, not only in the child: a skip there would read as a wrong error
    X, _ = _corrupt(_good(), case)
    out = in_child(_dask_scores, X, 10)
    assert out[0] == "error" and out[1] == "ValueError", out
    assert "stored value" in out[2] or "first at row" in out[2], out


# ---- item 5: non-canonical CSR --------------------------------------------------------------------


def _duplicated(seed=3):
    """A CSR X whose every row stores some of its entries as two halves, with the indices shuffled within rows;
    and the same matrix in canonical form."""
    rng = np.random.default_rng(seed)
    X = _good(n=60, d=15, seed=seed)
    rows, cols, vals = [], [], []
    for i in range(X.shape[0]):
        lo, hi = X.indptr[i], X.indptr[i + 1]
        for t in rng.permutation(np.arange(lo, hi)):
            if rng.random() < 0.5:
                rows += [i, i]
                cols += [X.indices[t]] * 2
                vals += [X.data[t] * 0.25, X.data[t] * 0.75]
            else:
                rows.append(i)
                cols.append(X.indices[t])
                vals.append(X.data[t])
    indptr = np.zeros(X.shape[0] + 1, np.int64)
    np.add.at(indptr, np.asarray(rows) + 1, 1)
    dup = sp.csr_matrix((np.asarray(vals), np.asarray(cols, np.int32), np.cumsum(indptr)), shape=X.shape)
    assert not dup.has_canonical_format and dup.nnz > X.nnz
    return dup, X


@pytest.mark.parametrize("method", ["variance", "laplacian_score", "graph_moran", "deviance"])
def test_duplicate_entries_score_as_the_matrix_they_mean(method):
    dup, X = _duplicated()
    before = (dup.data.copy(), dup.indices.copy(), dup.indptr.copy())
    W = _graph(X.shape[0]) if method in ("laplacian_score", "graph_moran") else None
    got = glfs.select(dup, graph=W, method=method, n_features_to_select=4)
    want = glfs.select(X, graph=W, method=method, n_features_to_select=4)
    np.testing.assert_allclose(got.scores, want.scores, rtol=1e-9, atol=1e-12, equal_nan=True)
    assert np.array_equal(got.ranking, want.ranking)
    for a, b in zip(before, (dup.data, dup.indices, dup.indptr)):  # the caller's X is not changed
        assert np.array_equal(a, b)


def test_duplicate_entries_give_the_same_graph_and_tl_columns():
    import anndata as ad

    dup, X = _duplicated(seed=5)
    G1, G0 = glfs.similarity_graph(dup, n_neighbors=6), glfs.similarity_graph(X, n_neighbors=6)
    assert (G1 != G0).nnz == 0
    a1, a0 = ad.AnnData(dup.copy()), ad.AnnData(X.copy())
    glfs.tl.select(a1, method="variance", n_top_genes=5)
    glfs.tl.select(a0, method="variance", n_top_genes=5)
    assert a1.var["variance"].equals(a0.var["variance"])
    assert not a1.X.has_canonical_format  # tl.select did not rewrite adata.X


def test_duplicates_backed_and_dask_score_as_canonical(tmp_path):
    import anndata as ad

    dup, X = _duplicated(seed=7)
    path = tmp_path / "dup.h5ad"
    ad.AnnData(dup).write_h5ad(path)
    W = _graph(X.shape[0])
    want = glfs.laplacian_score(X, W)
    backed = ad.read_h5ad(path, backed="r")
    np.testing.assert_allclose(glfs.laplacian_score(backed.X, W), want, rtol=1e-9)
    da = pytest.importorskip("dask.array")
    D = da.from_array(dup, chunks=(20, dup.shape[1]), asarray=False)
    np.testing.assert_allclose(glfs.laplacian_score(D, W), want, rtol=1e-9)


def test_canonical_never_changes_its_input():
    from glfs.core._structure import canonical

    dup, X = _duplicated(seed=11)
    Xc = canonical(dup)
    assert Xc is not dup and Xc.has_canonical_format
    assert (Xc != X).nnz == 0
    assert canonical(X) is X  # already canonical: no copy


# ---- unsorted indices without duplicates (scanpy's normalize_total + log1p, then a gene subset) ---------


def test_scanpy_normalised_panel_set_with_unsorted_rows_is_used_without_copy_or_warning(caplog):
    """The Kang panel set as scanpy users normalise it, its genes taken in another order (as
    graph_moran's refinement and adata[:, ranked] do): rows unsorted, no duplicates.  No warning, no
    copy, the caller's arrays untouched, and every consumer gives bitwise the scores of the sorted matrix."""
    import logging
    from pathlib import Path

    import anndata as ad

    sc = pytest.importorskip("scanpy")
    from glfs.core._structure import canonical
    from glfs.core._validation import check_X

    path = Path(__file__).resolve().parents[2] / "resources/singlecell/kang2018_pbmc_5donors_2511g.h5ad"
    counts = sp.csr_matrix(ad.read_h5ad(path).X, dtype=np.float32)
    a = ad.AnnData(counts.copy())
    sc.pp.normalize_total(a)
    sc.pp.log1p(a)
    genes = np.random.default_rng(0).permutation(counts.shape[1])
    Xu, Cu = sp.csr_matrix(a.X)[:, genes], counts[:, genes]
    assert not Xu.has_sorted_indices  # the case: scipy keeps the new column order within each row
    Xs = Xu.sorted_indices()
    assert Xs.has_canonical_format and Xs.nnz == Xu.nnz  # the same matrix: no duplicates
    with caplog.at_level(logging.DEBUG, logger="glfs.core._structure"):
        assert canonical(Xu) is Xu
        assert check_X(Xu, read_only=True) is Xu  # no copy at the door
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    cells = slice(0, 1500)
    Xu, Xs, Cu = Xu[cells], Xs[cells], Cu[cells]
    before = Xu.indices.copy()
    with caplog.at_level(logging.WARNING):
        for method in ("variance", "laplacian_score", "graph_moran", "deviance"):
            kw = {"counts": Cu} if method == "deviance" else {}
            got = glfs.select(Xu, method=method, n_features_to_select=50, **kw)
            want = glfs.select(
                Xs, method=method, n_features_to_select=50, **({"counts": Cu.sorted_indices()} if kw else {})
            )
            np.testing.assert_array_equal(got.scores, want.scores)
            assert np.array_equal(got.ranking, want.ranking)
        G1, G0 = glfs.similarity_graph(Xu, n_neighbors=10), glfs.similarity_graph(Xs, n_neighbors=10)  # its PCA
    assert (G1 != G0).nnz == 0
    assert not [r for r in caplog.records if "canonical" in r.getMessage()]
    assert not Xu.has_sorted_indices and np.array_equal(Xu.indices, before)  # the caller's X not sorted in place


def test_unsorted_rows_with_a_duplicate_still_get_the_canonical_copy(caplog):
    import logging

    from glfs.core._structure import canonical

    X = sp.csr_matrix(
        (np.array([1.0, 2.0, 3.0, 4.0]), np.array([2, 0, 1, 2], np.int32), np.array([0, 4])), shape=(1, 3)
    )
    assert not X.has_sorted_indices  # column 2 stored twice, not side by side
    with caplog.at_level(logging.WARNING, logger="glfs.core._structure"):
        Xc = canonical(X)
    assert Xc is not X and Xc.has_canonical_format
    np.testing.assert_array_equal(Xc.toarray(), [[2.0, 3.0, 5.0]])
    assert "1 duplicate entries" in caplog.text
    Y = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([2, 0, 1], np.int32), np.array([0, 3])), shape=(1, 3))
    assert canonical(Y) is Y  # unsorted, no duplicate
