"""A corrupt graph is refused with a ValueError naming the argument or file, never a signal (issue 41, items 1
and 19).  Each entry point a graph comes through is run in a forked child (``in_child``), so that a crash in
scipy's C++ routines, which the old code reached, shows as ("signal", n) instead of ending pytest."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import glfs

ad = pytest.importorskip("anndata")

N, D = 24, 6


def _X():
    return np.random.default_rng(0).normal(size=(N, D))


def _good():
    return glfs.similarity_graph(np.random.default_rng(1).normal(size=(N, 3)), n_neighbors=4)


def _corrupt(kind):
    """A CSR graph whose arrays no longer describe its (N, N) shape, built without scipy's checks."""
    W = _good()
    indptr, indices, data = W.indptr.copy(), W.indices.copy(), W.data.copy()
    if kind == "past_end":
        indices[3] = 10**6
    elif kind == "minus_one":
        indices[3] = -1
    elif kind == "indptr_decreasing":
        indptr[5], indptr[6] = indptr[6], indptr[5]
    elif kind == "indptr_short":
        bad = sp.csr_matrix((N, N))
        bad.indptr, bad.indices, bad.data = indptr[:-3], indices, data
        return bad
    elif kind == "csc_past_end":
        C = sp.csc_matrix(W)
        C.indices[2] = N + 7
        return C
    elif kind == "coo_minus_one":
        C = W.tocoo()
        C.col[0] = -1
        return C
    bad = sp.csr_matrix((N, N))
    bad.indptr, bad.indices, bad.data = indptr, indices, data
    return bad


KINDS = ["past_end", "minus_one", "indptr_decreasing", "indptr_short", "csc_past_end", "coo_minus_one"]


def _outcome(fn, *args):
    try:
        fn(*args)
        return ("ok",)
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome
        return ("error", type(exc).__name__, str(exc))


def _via_select(kind):
    return glfs.select(_X(), method="laplacian_score", n_features_to_select=2, graph=_corrupt(kind))


def _via_score(kind):
    return glfs.laplacian_score(_X(), _corrupt(kind))


def _via_moran(kind):
    return glfs.scores.graph_autocorrelation(_X(), _corrupt(kind))


def _via_obsp(kind):
    a = ad.AnnData(_X())
    a.obsp["g"] = _good()
    a.obsp._data["g"] = _corrupt(kind)  # past anndata's own shape check, as a corrupt file is read
    return glfs.tl.select(a, "laplacian_score", 2, obsp="g")


def _all_kinds(route, kinds):
    """The outcome of ``route`` for every kind of corruption, in one child."""
    return [_outcome(route, kind) for kind in kinds]


@pytest.mark.parametrize(
    ("route", "name"),
    [(_via_select, "graph "), (_via_score, "W "), (_via_moran, "W "), (_via_obsp, "adata.obsp['g']")],
)
def test_corrupt_graph_is_a_value_error_naming_the_argument(in_child, route, name):
    kinds = [k for k in KINDS if not (route is _via_obsp and k.startswith("coo"))]  # anndata holds no COO in obsp
    got = in_child(_all_kinds, route, kinds)
    assert got[0] == "ok", f"{route.__name__}: {got}"  # the child ended normally, no signal
    for kind, outcome in zip(kinds, got[1], strict=True):
        assert outcome[:2] == ("error", "ValueError"), (kind, outcome)
        assert outcome[2].startswith(name), (kind, outcome)


FILE_KINDS = ["past_end", "minus_one", "indptr_decreasing", "csc_past_end", "wrong_shape"]


def _read_files(paths):
    from glfs_workflow.readers import read_graph

    return [_outcome(read_graph, path, N) for path in paths]


def test_corrupt_graph_file_names_the_file(in_child, tmp_path):
    paths = []
    for kind in FILE_KINDS:
        path = tmp_path / f"{kind}.npz"
        if kind == "wrong_shape":
            sp.save_npz(path, sp.identity(N + 1, format="csr"))
        else:
            W = _corrupt(kind)
            fmt = W.format.encode()
            np.savez(path, format=fmt, shape=np.array(W.shape), data=W.data, indices=W.indices, indptr=W.indptr)
        paths.append(path)
    got = in_child(_read_files, paths)
    assert got[0] == "ok", got
    for path, outcome in zip(paths, got[1], strict=True):
        assert outcome[:2] == ("error", "DataError") and str(path) in outcome[2], (path.name, outcome)


def test_graph_file_reads_back_the_graph(tmp_path):
    from glfs_workflow.readers import read_graph

    W = _good()
    sp.save_npz(tmp_path / "g.npz", W)
    G = read_graph(tmp_path / "g.npz", N)
    assert (G != W).nnz == 0 and G.dtype == np.float64


def _position(W, i, j):
    row = W.indices[W.indptr[i] : W.indptr[i + 1]]
    return W.indptr[i] + int(np.flatnonzero(row == j)[0])


def test_graph_check_leaves_the_callers_graph_alone():
    """Item 19: explicit zeros were removed from the caller's float64 graph in place."""
    W = _good()
    for i, j in zip(*sp.triu(W, k=1).nonzero(), strict=True):  # the first two edges, both directions, stored as 0
        if np.count_nonzero(W.data == 0) >= 4:
            break
        W.data[_position(W, i, j)] = W.data[_position(W, j, i)] = 0.0
    assert np.count_nonzero(W.data == 0) == 4
    before = [a.copy() for a in (W.indptr, W.indices, W.data)]
    s = glfs.laplacian_score(_X(), W)
    for a, b in zip(before, (W.indptr, W.indices, W.data), strict=True):
        np.testing.assert_array_equal(a, b)
    without = W.copy()
    without.eliminate_zeros()
    np.testing.assert_allclose(s, glfs.laplacian_score(_X(), without))  # explicit zeros are no edges


def test_read_only_graph_is_scored():
    """Item 19: a read-only graph failed with "WRITEBACKIFCOPY base is read-only"."""
    W = _good()
    expected = glfs.laplacian_score(_X(), W)
    for arr in (W.data, W.indices, W.indptr):
        arr.flags.writeable = False
    np.testing.assert_allclose(glfs.laplacian_score(_X(), W), expected)
    sel = glfs.select(_X(), method="laplacian_score", n_features_to_select=2, graph=W)
    np.testing.assert_allclose(sel.scores, expected)
