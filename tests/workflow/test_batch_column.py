"""The workflow's ``batch_column`` (issue 29): read from an .h5ad's obs into prepared.h5ad's obs['batch'], checked
like ``label_column`` (a missing column or cells without a batch are errors naming them)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

ad = pytest.importorskip("anndata")

from glfs_workflow import datasets  # noqa: E402
from glfs_workflow.readers import DataError  # noqa: E402


def _h5ad(path, obs, n=12, d=6):
    rng = np.random.default_rng(0)
    X = rng.poisson(3.0, size=(n, d)).astype(np.float32)
    obs = pd.DataFrame(obs, index=[f"c{i}" for i in range(n)])
    ad.AnnData(X=X, obs=obs, var=pd.DataFrame(index=[f"g{j}" for j in range(d)])).write_h5ad(path)
    return path


def _prepare(path, **cfg):
    cfg = {"expression": str(path), "label_column": "cell_type", "preprocess": "normalize_log1p", **cfg}
    return datasets.prepare_dataset("cells", cfg, {"expression": path})


def test_batch_column_gives_obs_batch_and_the_dataset_record(tmp_path):
    donors = ["d1", "d2", "d3"] * 4
    p = _h5ad(tmp_path / "a.h5ad", {"cell_type": ["t0", "t1"] * 6, "donor": donors})
    a = _prepare(p, batch_column="donor")
    assert list(a.obs["batch"]) == donors and isinstance(a.obs["batch"].dtype, pd.CategoricalDtype)
    assert a.uns["dataset"]["batch_column"] == "donor" and a.uns["dataset"]["n_batches"] == 3
    b = _prepare(p)  # without batch_column: one batch, no obs['batch']
    assert "batch" not in b.obs and b.uns["dataset"]["n_batches"] == 0


@pytest.mark.parametrize(
    ("obs", "match"),
    [
        (
            {"cell_type": ["t0", "t1"] * 6},
            r"a\.h5ad: obs column 'donor' \(config key datasets\.cells\.batch_column\) "
            r"not found; obs columns are \['cell_type'",
        ),
        (
            {"cell_type": ["t0", "t1"] * 6, "donor": ["d1", None, "d2", "NA"] + ["d1"] * 8},
            r"obs column 'donor' \(config key datasets\.cells\.batch_column\): no batch for 2 of 12 samples: \['c1', 'c3'\]",
        ),
    ],
)
def test_bad_batch_columns_are_refused_naming_them(tmp_path, obs, match):
    p = _h5ad(tmp_path / "a.h5ad", obs)
    with pytest.raises(DataError, match=match):
        _prepare(p, batch_column="donor")


def test_the_select_step_selects_within_the_batches_and_its_sidecar_is_json(tmp_path):
    import json

    import glfs
    from glfs_workflow.tables import dataset_batches, selection_graph, selection_meta

    donors = np.repeat(["d1", "d2", "d3"], 40)
    p = _h5ad(tmp_path / "a.h5ad", {"cell_type": ["t0", "t1"] * 60, "donor": donors}, n=120, d=30)
    a = _prepare(p, batch_column="donor")
    np.testing.assert_array_equal(dataset_batches(a), donors)
    assert dataset_batches(_prepare(p)) is None
    W = glfs.similarity_graph(a.X, n_neighbors=5)  # the dataset's graph over all cells: not used within batches
    sel = glfs.tl.selection(a, "laplacian_score", 10, default_graph=W, batch_key="batch", random_state=0)
    expected = glfs.select(a.X, "laplacian_score", n_features_to_select=10, batches=donors)
    np.testing.assert_array_equal(sel.selected, expected.selected)
    assert selection_graph(sel, "results/cells/graph.npz") == "own: built within each batch"
    meta = json.loads(json.dumps(selection_meta(sel, n_features=10, graph="x")))
    assert meta["params"]["batches"] == ["d1", "d2", "d3"] and len(meta["extra"]["nbatches"]) == 30
