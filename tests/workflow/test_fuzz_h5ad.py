"""Fuzz: a small valid .h5ad mutated at random never ends a process with a signal (issue 30, goals).

Each seeded case flips bits in ``X/indices``, ``X/indptr`` or ``X/data``, truncates or extends one of
them, or truncates the file, and then reads the file as a user would, in a forked child (so that a
signal is seen): the workflow's reader followed by ``glfs.select`` (variance, Laplacian score), and
AnnData's backed mode handed to ``glfs.select`` (streamed).  The expected outcome comes from a reading
written out here in plain numpy (the arrays from h5py, each structural rule checked, duplicates summed
into a dense matrix): a structurally valid file must give the scores of that clean matrix (or the
library's own refusal of it, e.g. values beyond its range), a corrupt one a Python exception that
names the file.  A second test mutates the elements beyond X (obs, var, uns, obsm and the graph in obsp: bits
flipped, resized, replaced by an external link or a soft link to itself) and reads the file with the workflow's
reader and ``glfs.tl.selection(..., obsp=...)``: the graph's scores must equal those of its clean reading (plain
numpy, as for X) or the case end in an exception naming the file or the argument.  ``GLFS_FUZZ_CASES`` sets the
number of cases (default 240 for X, half as many for the other elements, about a minute each on 2 cores).
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
import scipy.sparse as sp

import glfs

ad = pytest.importorskip("anndata")
h5py = pytest.importorskip("h5py")

N_CASES = int(os.environ.get("GLFS_FUZZ_CASES", "240"))
N, D = 30, 12
PARTS = ("indices", "indptr", "data")


def _valid_file(path):
    rng = np.random.default_rng(0)
    X = sp.random(N, D, density=0.35, format="csr", random_state=rng, dtype=np.float32)
    X.data[:] = rng.integers(1, 20, X.nnz)
    ad.AnnData(X).write_h5ad(path)


def _mutate(path, seed):
    """One random mutation of the file at ``path``; returns a description."""
    rng = np.random.default_rng(seed)
    kind = rng.choice(["flip", "flip", "flip", "resize", "truncate_file"])
    if kind == "truncate_file":
        size = os.path.getsize(path)
        cut = int(rng.integers(size // 2, size))
        with open(path, "r+b") as f:
            f.truncate(cut)
        return f"file truncated to {cut} bytes"
    part = str(rng.choice(PARTS))
    with h5py.File(path, "r+") as f:
        arr = f[f"X/{part}"][()]
        if kind == "flip":
            raw = arr.reshape(-1).view(np.uint8)  # a view of arr (2-D elements too)
            for pos in rng.integers(0, raw.size, size=int(rng.integers(1, 4))):
                raw[pos] ^= np.uint8(1 << int(rng.integers(0, 8)))
            f[f"X/{part}"][...] = arr
            return f"bits flipped in X/{part}"
        m = int(rng.integers(0, arr.size + 5))
        new = np.resize(arr, m) if m > arr.size else arr[:m]
        del f[f"X/{part}"]
        f[f"X/{part}"] = new
        return f"X/{part} resized from {arr.size} to {m}"


def _clean_reading(path):
    """The matrix the file holds, read and checked in plain numpy; None when it is not a valid CSR matrix."""
    try:
        with h5py.File(path, "r") as f:
            indices, indptr, data = (f[f"X/{p}"][()] for p in PARTS)
            n, d = (int(s) for s in f["X"].attrs["shape"])
    except Exception:  # noqa: BLE001 - an unreadable file: no clean reading
        return None
    if (
        (n, d) != (N, D)
        or indptr.size != n + 1
        or indptr[0] != 0
        or indptr[-1] != indices.size
        or indices.size != data.size
    ):
        return None
    if any(indptr[i + 1] < indptr[i] for i in range(n)):
        return None
    dense = np.zeros((n, d))
    for i in range(n):
        for t in range(indptr[i], indptr[i + 1]):
            j = int(indices[t])
            if not 0 <= j < d or not np.isfinite(data[t]):
                return None
            dense[i, j] += float(data[t])
    return dense


def _graph():
    rng = np.random.default_rng(1)
    return glfs.similarity_graph(rng.normal(size=(N, 3)), n_neighbors=5)


def _scores(X, W):
    return np.concatenate(
        [glfs.select(X, method="variance", n_features_to_select=3).scores, glfs.laplacian_score(X, W)]
    )


def _outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome
        return ("error", type(exc).__name__, str(exc))


def _by_reader(path, W):
    from glfs_workflow.readers import read_matrix

    return _scores(read_matrix(path).X, W)


def _by_backed(path, W):
    try:
        a = ad.read_h5ad(path, backed="r")
    except Exception as exc:  # noqa: BLE001 - anndata's (or h5py's) refusal of the file, before glfs sees it
        return ("unreadable", type(exc).__name__, str(exc))
    return _scores(a.X, W)


def test_mutated_h5ad_never_crashes_and_is_read_right_or_refused(tmp_path, in_child):
    import warnings

    warnings.simplefilter("ignore")
    valid = tmp_path / "valid.h5ad"
    _valid_file(valid)
    W = _graph()
    _scores(sp.csr_matrix(np.eye(N, D)), W)  # compile the kernels before the children fork
    seen = {"refused": 0, "read": 0}
    for seed in range(N_CASES):
        path = tmp_path / f"case{seed}.h5ad"
        shutil.copy(valid, path)
        what = _mutate(path, seed)
        clean = _clean_reading(path)
        expected = None if clean is None else _outcome(_scores, sp.csr_matrix(clean), W)
        for route in (_by_reader, _by_backed):
            got = in_child(route, path, W)
            case = f"seed {seed} ({what}), {route.__name__}: {got[:2]}"
            assert got[0] in ("ok", "error"), case  # never a signal or a hang
            if got[0] == "ok" and isinstance(got[1], tuple):  # anndata refused to open it
                assert clean is None, case
                continue
            if got[0] == "error" and str(path) in got[2]:
                seen["refused"] += 1
                continue  # a Python exception naming the file: always acceptable
            assert expected is not None, f"{case}: a corrupt file must be refused naming the file; got {got}"
            assert got[0] == expected[0], f"{case}: clean reading gives {expected[:2]}"
            if got[0] == "ok":
                np.testing.assert_allclose(got[1], expected[1], rtol=1e-6, atol=1e-9, equal_nan=True, err_msg=case)
                seen["read"] += 1
            else:
                assert got[1:] == expected[1:], case
    assert seen["refused"] > N_CASES // 4 and seen["read"] > N_CASES // 10, seen  # both kinds were exercised


# ---- the elements beyond X: obs, var, uns, obsm, obsp (the graph), links (issue 41) ---------------------------
ELEMENTS = (
    "obsp/g/indices",
    "obsp/g/indptr",
    "obsp/g/data",
    "obs/kind/codes",
    "obs/kind/categories",
    "obs/_index",
    "var/note",
    "uns/arr",
    "obsm/emb",
)


def _valid_file_with_elements(path):
    rng = np.random.default_rng(0)
    X = sp.random(N, D, density=0.35, format="csr", random_state=rng, dtype=np.float32)
    X.data[:] = rng.integers(1, 20, X.nnz)
    a = ad.AnnData(X)
    a.obs["kind"] = np.array(["a", "b", "c"])[np.arange(N) % 3]
    a.var["note"] = np.arange(D) * 1.5
    a.uns["arr"] = np.arange(7.0)
    a.obsm["emb"] = rng.normal(size=(N, 2))
    a.obsp["g"] = _graph()
    a.write_h5ad(path)


def _mutate_element(path, seed):
    """One random mutation of an element beyond X (or a link added); returns (description, element)."""
    rng = np.random.default_rng(10_000 + seed)
    kind = rng.choice(["flip", "flip", "resize", "external_link", "soft_link_loop"])
    part = str(rng.choice(ELEMENTS))
    with h5py.File(path, "r+") as f:
        if kind == "external_link":
            del f[part]
            f[part] = h5py.ExternalLink("/nonexistent/elsewhere.h5", "/arr")
            return f"{part} replaced by an external link", part
        if kind == "soft_link_loop":
            del f[part]
            f[part] = h5py.SoftLink("/" + part)
            return f"{part} replaced by a soft link to itself", part
        node = f[part]
        attrs = dict(node.attrs)
        arr = node[()]
        if kind == "flip" and arr.dtype.kind in "iuf":
            raw = arr.reshape(-1).view(np.uint8)  # a view of arr (2-D elements too)
            for pos in rng.integers(0, raw.size, size=int(rng.integers(1, 4))):
                raw[pos] ^= np.uint8(1 << int(rng.integers(0, 8)))
            node[...] = arr
            return f"bits flipped in {part}", part
        m = int(rng.integers(0, len(arr) + 5))
        new = np.resize(arr, (m, *arr.shape[1:])) if m > len(arr) else arr[:m]
        del f[part]
        f[part] = new
        f[part].attrs.update(attrs)
        return f"{part} resized from {len(arr)} to {m}", part


def _clean_graph(path):
    """The graph obsp/g holds, read and checked in plain numpy; None when it is not a valid symmetric graph."""
    try:
        with h5py.File(path, "r") as f:
            g = f["obsp/g"]
            if not isinstance(g, h5py.Group):
                return None
            indices, indptr, data = (g[p][()] for p in PARTS)
            n, d = (int(s) for s in g.attrs["shape"])
    except Exception:  # noqa: BLE001 - an unreadable element: no clean reading
        return None
    if (n, d) != (N, N) or indptr.size != n + 1 or indptr[0] != 0 or indptr[-1] != indices.size:
        return None
    if indices.size != data.size or any(indptr[i + 1] < indptr[i] for i in range(n)):
        return None
    dense = np.zeros((n, n))
    for i in range(n):
        for t in range(indptr[i], indptr[i + 1]):
            j = int(indices[t])
            if not 0 <= j < n or not np.isfinite(data[t]):
                return None
            dense[i, j] += float(data[t])
    return dense


def _graph_scores_by_reader(path):
    """The workflow's reading of X (every element of the file is read or refused), then the file's graph."""
    from glfs_workflow.readers import read_matrix

    X = read_matrix(path).X
    a = ad.read_h5ad(path)
    return _scores_on_obsp(a, X)


def _scores_on_obsp(a, X):
    return np.concatenate(
        [
            glfs.select(X, method="variance", n_features_to_select=3).scores,
            glfs.tl.selection(a, "laplacian_score", 3, obsp="g").scores,
        ]
    )


def test_mutated_elements_beyond_x_never_crash_and_are_read_right_or_refused(tmp_path, in_child):
    import warnings

    warnings.simplefilter("ignore")
    valid = tmp_path / "valid.h5ad"
    _valid_file_with_elements(valid)
    X = ad.read_h5ad(valid).X
    seen = {"refused": 0, "read": 0}
    for seed in range(max(20, N_CASES // 2)):
        path = tmp_path / f"element{seed}.h5ad"
        shutil.copy(valid, path)
        what, part = _mutate_element(path, seed)
        got = in_child(_graph_scores_by_reader, path)
        case = f"seed {seed} ({what}): {got[:2]}"
        assert got[0] in ("ok", "error"), case  # never a signal or a hang
        if got[0] == "error":
            named = str(path) in got[2] or "adata.obsp['g']" in got[2] or "obsp" in got[2]
            assert named, f"{case}: an exception must name the file or the argument; got {got}"
            seen["refused"] += 1
            continue
        W = _clean_graph(path)
        assert W is not None, f"{case}: a corrupt graph was scored"
        a = ad.AnnData(X)
        a.obsp["g"] = sp.csr_matrix(W)
        expected = _outcome(_scores_on_obsp, a, sp.csr_matrix(X))
        assert expected[0] == "ok", f"{case}: read, but the clean reading gives {expected[:2]}"
        np.testing.assert_allclose(got[1], expected[1], rtol=1e-6, atol=1e-9, equal_nan=True, err_msg=case)
        seen["read"] += 1
    assert seen["refused"] and seen["read"], seen  # both kinds were exercised
