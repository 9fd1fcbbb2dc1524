"""Issue 41, low items on the AnnData face and glfs.select: subset=True on a backed AnnData (10), batch labels that
cannot be HDF5 keys (12), X of text, structured or masked values (15, 18), label and batch columns of mixed types,
tuples or NaN (16 and the "also seen" cases).  Each refusal is checked to name what it refuses and to leave the
AnnData as it was."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import glfs

ad = pytest.importorskip("anndata")
pd = pytest.importorskip("pandas")


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def _counts(n=40, d=12, seed=0):
    return np.random.default_rng(seed).poisson(3.0, (n, d)).astype(np.float64)


# ---- 10: subset=True on a backed AnnData ------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["r", "r+"])
def test_subset_on_a_backed_anndata_is_refused_before_anything_is_written(tmp_path, mode):
    path = tmp_path / "b.h5ad"
    ad.AnnData(sp.csr_matrix(_counts())).write_h5ad(path)
    a = ad.read_h5ad(path, backed=mode)
    try:
        columns, uns = list(a.var.columns), list(a.uns.keys())
        with pytest.raises(
            ValueError, match=re.escape(f"subset=True cannot subset a backed AnnData (backed mode '{mode}'")
        ):
            _quiet(glfs.tl.select, a, "variance", 4, subset=True)
        assert list(a.var.columns) == columns and list(a.uns.keys()) == uns
        table = _quiet(glfs.tl.select, a, "variance", 4, subset=True, inplace=False)  # nothing written: allowed
        assert len(table) == 4
    finally:
        a.file.close()
    back = ad.read_h5ad(path)
    assert "variance" not in back.var and "variance" not in back.uns


# ---- 12: any batch label survives write_h5ad / read_h5ad ---------------------------------------------------
@pytest.mark.parametrize(
    "labels",
    [[".", "a"], ["", "a"], ["P1", "P1/rep2"], ["..", "x/"], [3, 7]],
    ids=["dot", "empty", "slash", "dots", "ints"],
)
def test_batch_labels_round_trip_through_h5ad(tmp_path, labels):
    X = np.log1p(_counts(n=40, d=12))
    a = ad.AnnData(X)
    a.obs["b"] = np.repeat(np.array(labels), 20)
    _quiet(glfs.tl.select, a, "variance", 4, batch_key="b")
    path = tmp_path / "a.h5ad"
    a.write_h5ad(path)
    back = ad.read_h5ad(path)
    assert [str(b) for b in back.uns["variance"]["params"]["batches"]] == [str(b) for b in labels]
    # brute force: each batch's variance ranking, best first (1 = highest variance)
    for k, label in enumerate(labels):
        var = X[a.obs["b"].to_numpy() == label].var(axis=0)
        rank = np.empty(X.shape[1], np.int64)
        rank[np.argsort(-var, kind="stable")] = np.arange(1, X.shape[1] + 1)
        np.testing.assert_array_equal(np.asarray(back.varm["variance_batch_ranks"])[:, k], rank)
    np.testing.assert_array_equal(back.var["variance"].to_numpy(), a.var["variance"].to_numpy())


# ---- 15, 18: X of complex, text, structured or masked values: one refusal on both faces ----------------------
def _bad_x():
    X = _counts(n=20, d=5)  # integer values: the counts check read them first on the AnnData face
    record = np.zeros((20, 5), dtype=[("a", "f8"), ("b", "f8")])
    return {
        "complex": (X.astype(np.complex128), r"X must be real; got complex values \(dtype complex128\)"),
        "bytes": (X.astype("S8"), r"X must be numeric .*got text \(dtype \|S8\).*X\.astype\(float\)"),
        "text": (X.astype("U8"), r"X must be numeric .*got text \(dtype <U8\)"),
        "structured": (record, r"X must be numeric .*got a structured dtype .*fields \['a', 'b'\].*X\['a'\]"),
        "masked": (
            np.ma.array(X, mask=X > 4),
            r"X is a masked array \(numpy\.ma\) with \d+ masked entries, first at sample \d+, feature \d+.*X\.filled",
        ),
    }


@pytest.mark.parametrize("case", list(_bad_x()))
@pytest.mark.parametrize("method", ["variance", "deviance", "laplacian_score"])
def test_x_without_plain_numbers_is_refused_alike_by_select_and_tl(case, method):
    X, pattern = _bad_x()[case]
    with pytest.raises(ValueError, match=pattern):
        _quiet(glfs.select, X, method, n_features_to_select=2)
    a = ad.AnnData(np.zeros(X.shape))
    a.X = X
    with pytest.raises(ValueError, match=pattern):
        _quiet(glfs.tl.select, a, method, 2)
    assert list(a.var.columns) == [] and method not in a.uns


def test_a_masked_array_without_masked_entries_is_scored_as_its_values():
    X = np.log1p(_counts(n=20, d=5))
    got = _quiet(glfs.select, np.ma.array(X), "variance", n_features_to_select=2).scores
    np.testing.assert_allclose(got, X.var(axis=0))


# ---- 16 and "also seen": label and batch columns of mixed types, tuples, NaN: the column named ----------------
def _two_d_codes(tmp_path):
    """An .h5ad whose categorical obs column 'c' has 2-D codes: anndata reads them into tuples ('x', 'x')."""
    h5py = pytest.importorskip("h5py")
    a = ad.AnnData(np.log1p(_counts()))
    a.obs["c"] = pd.Categorical(["x", "y"] * 20)
    path = tmp_path / "codes.h5ad"
    a.write_h5ad(path)
    with h5py.File(path, "r+") as f:
        codes = f["obs/c/codes"][()]
        del f["obs/c/codes"]
        f["obs/c/codes"] = np.stack([codes, codes], axis=1)
    return ad.read_h5ad(path)


@pytest.mark.parametrize(
    ("column", "pattern"),
    [
        ([1] * 20 + ["a"] * 20, r"got a mix of \['int', 'str'\]"),
        ([2.5] * 20 + ["a"] * 20, r"got a mix of \['float', 'str'\]"),
        ([np.nan] + ["a"] * 19 + ["b"] * 20, r"must not contain missing values; got 1 missing \(samples \[0\]\)"),
        ([(1, 2)] * 20 + [(3, 4)] * 20, r"must hold one label per sample .*got 40 tuple values, e.g. \(1, 2\)"),
        ("two_d_codes", r"must hold one label per sample .*got 40 tuple values, e.g. \('x', 'x'\)"),
    ],
    ids=["int_str", "float_str", "nan", "tuples", "two_d_codes"],
)
@pytest.mark.parametrize(("key", "method"), [("batch_key", "variance"), ("labels_key", "fisher_score")])
def test_a_bad_label_or_batch_column_is_named(tmp_path, column, pattern, key, method):
    if isinstance(column, str):
        a = _two_d_codes(tmp_path)
    else:
        a = ad.AnnData(np.log1p(_counts()))
        a.obs["c"] = pd.Series(column, index=a.obs_names, dtype=object)
    with pytest.raises(ValueError, match=rf"adata\.obs\['c'\] \({key}\) ") as info:
        _quiet(glfs.tl.select, a, method, 3, **{key: "c"})
    assert re.search(pattern, str(info.value))
    assert method not in a.var and method not in a.uns
