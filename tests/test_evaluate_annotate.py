"""Workflow adapters: selection tables round-trip, and precomputed selections written
into AnnData exactly as glfs.tl.select writes them."""

import numpy as np
import pandas as pd
import pytest

import glfs
from glfs._annotate import (
    atomic_path,
    path_table,
    selection_from_table,
    selection_meta,
    selection_table,
    write_graph,
    write_selection,
    write_tsv,
)


def _data(seed=0, n=30, d=12):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, 3] = 1.0  # a constant gene: NaN score, ranked last
    X[: n // 2, 0] += 3.0
    return X


def test_table_round_trip(tmp_path):
    X = _data()
    with pytest.warns(glfs.ConstantFeatureWarning):
        sel = glfs.select(X, "laplacian_score", n_features=4)
    genes = [f"g{i}" for i in range(X.shape[1])]
    t = selection_table(sel, genes)
    assert list(t.columns) == ["gene", "score", "rank", "selected", "weight"]
    write_tsv(t, tmp_path / "s.tsv")
    back = selection_from_table(pd.read_csv(tmp_path / "s.tsv", sep="\t"), selection_meta(sel, n_features=4, graph="knn"))
    assert np.array_equal(back.ranking, sel.ranking)
    assert np.array_equal(back.selected, sel.selected)
    np.testing.assert_array_equal(np.isnan(back.scores), np.isnan(sel.scores))
    np.testing.assert_allclose(back.scores[~np.isnan(sel.scores)], sel.scores[~np.isnan(sel.scores)], rtol=1e-15)
    assert back.weights is None
    assert t.loc[3, "rank"] == X.shape[1]  # constant gene last


def test_write_selection_matches_tl_select():
    anndata = pytest.importorskip("anndata")
    X = _data(1)
    W = glfs.similarity_graph(X, n_neighbors=4)
    a1 = anndata.AnnData(X=X.copy())
    a1.obsp["g"] = W
    with pytest.warns(glfs.ConstantFeatureWarning):
        glfs.tl.select(a1, "laplacian_score", n_features=4, obsp="g")
        sel = glfs.select(X, "laplacian_score", graph=W, n_features=4)
    a2 = anndata.AnnData(X=X.copy())
    write_selection(a2, sel)
    for col in ["laplacian_score", "laplacian_score_rank", "laplacian_score_score"]:
        np.testing.assert_array_equal(a1.var[col].to_numpy(), a2.var[col].to_numpy())
    assert a2.var["laplacian_score"].dtype == bool
    assert a2.uns["laplacian_score"]["params"]["n_selected"] == 4


def test_write_selection_leaves_adata_unchanged_on_mismatch():
    anndata = pytest.importorskip("anndata")
    sel = glfs.select(_data(2, d=5)[:, [0, 1, 2, 4]], "variance", n_features=2)
    a = anndata.AnnData(X=_data(2))
    before = a.var.copy()
    with pytest.raises(ValueError, match="covers 4 genes"):
        write_selection(a, sel)
    pd.testing.assert_frame_equal(a.var, before)
    assert not a.uns
    with pytest.raises(ValueError, match="graph must be"):
        write_graph(a, glfs.similarity_graph(np.zeros((4, 2)) + np.arange(4)[:, None], n_neighbors=1))


def test_weight_key():
    anndata = pytest.importorskip("anndata")
    sel = glfs._result.make_selection("glfs_exact", np.arange(4.0), higher_is_better=True, n_features=2, weights=[0, 0, 1, 2])
    a = anndata.AnnData(X=np.zeros((3, 4)))
    write_selection(a, sel, weight_key="glfs_exact_weight")
    assert "glfs_weight" not in a.var
    np.testing.assert_array_equal(a.var["glfs_exact_weight"], [0, 0, 1, 2])
    write_selection(a, sel)
    assert "glfs_weight" in a.var


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ([[1.0, 2, 0.5], [0.5, 3, 0.4]], [1.0, 0.5]),
        ({"lam": [1.0, 0.5], "n_selected": [2, 3]}, [1.0, 0.5]),
        ([{"lam": 1.0, "n_nonzero": 2, "objective": 0.1}], [1.0]),
    ],
)
def test_path_table_forms(path, expected):
    df = path_table({"extra": {"path": path}})
    assert list(df.columns[:3]) == ["lam", "n_selected", "objective"]
    assert df["lam"].tolist() == expected
    assert path_table({"extra": {}}) is None


def test_atomic_path_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.tsv"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        with open(tmp, "w") as fh:
            fh.write("half")
        raise RuntimeError("writer failed")
    assert list(tmp_path.iterdir()) == []
    with atomic_path(target) as tmp:
        with open(tmp, "w") as fh:
            fh.write("ok")
    assert target.read_text() == "ok"
    assert [p.name for p in tmp_path.iterdir()] == ["out.tsv"]


def test_atomic_outputs_get_umask_permissions(tmp_path):
    import os
    import stat

    import pandas as pd

    from glfs._annotate import write_tsv

    old = os.umask(0o022)
    try:
        write_tsv(pd.DataFrame({"a": [1]}), tmp_path / "t.tsv")
    finally:
        os.umask(old)
    mode = stat.S_IMODE(os.stat(tmp_path / "t.tsv").st_mode)
    assert mode == 0o644, oct(mode)  # mkstemp alone would give 0o600
