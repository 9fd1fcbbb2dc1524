"""A zarr store rewritten under the same path is read again (issue 41, item 2).

``da.from_zarr(path)`` names the array by its path, so the array of the rewritten store has the name of the
old one.  The validation of a dask X was cached by that name: the NaN of the new store was not refused (its
gene silently dropped), and ``deviance`` took log values for raw counts.  A fresh process refuses both: the
expected outcome here."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import glfs

da = pytest.importorskip("dask.array")
pytest.importorskip("zarr")


def _store(path, X):
    da.from_array(X, chunks=(20, X.shape[1])).to_zarr(str(path), overwrite=True)
    return da.from_zarr(str(path))


def _counts():
    return np.random.default_rng(0).poisson(2.0, size=(60, 8)).astype(np.float64)


def test_nan_in_a_rewritten_store_is_refused(tmp_path):
    X = _counts()
    W = glfs.similarity_graph(X, n_neighbors=5)
    first = _store(tmp_path / "x.zarr", X)
    glfs.laplacian_score(first, W)
    bad = X.copy()
    bad[7, 3] = np.nan
    second = _store(tmp_path / "x.zarr", bad)
    assert second.name == first.name  # the premise: dask's name does not change with the bytes
    with pytest.raises(ValueError, match="finite"):
        glfs.laplacian_score(second, W)


def test_log_values_in_a_rewritten_store_are_not_taken_for_counts(tmp_path):
    X = _counts()
    first = _store(tmp_path / "x.zarr", X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        glfs.select(first, method="deviance", n_features_to_select=3)
        second = _store(tmp_path / "x.zarr", np.log1p(X))
        with pytest.raises(ValueError, match="count"):  # what a fresh process says of these values
            glfs.select(second, method="deviance", n_features_to_select=3)
