"""Workflow adapters: selection tables round-trip, and precomputed selections written
into AnnData exactly as glfs.tl.select writes them."""

import numpy as np
import pandas as pd
import pytest

import glfs
from glfs._anndata_writers import write_graph, write_selection
from glfs_workflow.files import atomic_path, write_tsv
from glfs_workflow.tables import path_table, selection_from_table, selection_meta, selection_table


def _data(seed=0, n=30, d=12):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, 3] = 1.0  # a constant gene: NaN score, ranked last
    X[: n // 2, 0] += 3.0
    return X


def test_table_round_trip(tmp_path):
    X = _data()
    with pytest.warns(glfs.ConstantFeatureWarning):
        sel = glfs.select(X, "laplacian_score", n_features_to_select=4)
    genes = [f"g{i}" for i in range(X.shape[1])]
    t = selection_table(sel, genes)
    assert list(t.columns) == ["gene", "score", "rank", "selected", "weight"]
    write_tsv(t, tmp_path / "s.tsv")
    back = selection_from_table(
        pd.read_csv(tmp_path / "s.tsv", sep="\t"), selection_meta(sel, n_features=4, graph="knn")
    )
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
        glfs.tl.select(a1, "laplacian_score", n_top_genes=4, obsp="g")
        sel = glfs.select(X, "laplacian_score", graph=W, n_features_to_select=4)
    a2 = anndata.AnnData(X=X.copy())
    write_selection(a2, sel)
    for col in ["laplacian_score", "laplacian_score_rank", "laplacian_score_score"]:
        np.testing.assert_array_equal(a1.var[col].to_numpy(), a2.var[col].to_numpy())
    assert a2.var["laplacian_score"].dtype == bool
    assert a2.uns["laplacian_score"]["params"]["n_selected"] == 4


def test_write_selection_leaves_adata_unchanged_on_mismatch():
    anndata = pytest.importorskip("anndata")
    sel = glfs.select(_data(2, d=5)[:, [0, 1, 2, 4]], "variance", n_features_to_select=2)
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
    sel = glfs.core._result.make_selection(
        "glfs_exact", np.arange(4.0), higher_is_better=True, n_features=2, weights=[0, 0, 1, 2]
    )
    a = anndata.AnnData(X=np.zeros((3, 4)))
    write_selection(a, sel, weight_key="glfs_exact_weight")
    assert "glfs_weight" not in a.var
    np.testing.assert_array_equal(a.var["glfs_exact_weight"], [0, 0, 1, 2])
    write_selection(a, sel)  # default: f"{key}_weight", never a shared "glfs_weight" (issue 10's q_alpha bug)
    assert "glfs_weight" not in a.var
    write_selection(a, sel, key="k")
    np.testing.assert_array_equal(a.var["k_weight"], [0, 0, 1, 2])


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

    from glfs_workflow.files import write_tsv

    old = os.umask(0o022)
    try:
        write_tsv(pd.DataFrame({"a": [1]}), tmp_path / "t.tsv")
    finally:
        os.umask(old)
    mode = stat.S_IMODE(os.stat(tmp_path / "t.tsv").st_mode)
    assert mode == 0o644, oct(mode)  # mkstemp alone would give 0o600


# ---------------------------------------------------------------- issue 11: names users really have

ODD_IDS = [
    "NA",
    "007",
    "null",
    "1e3",
    "True",
    "nan",
    "N/A",
    "-nan",
    "",
    "00123",
    "G\tTAB",
    "G\nNL",
    'say "hi"',
    "$\\alpha$",
]


def test_tables_read_back_ids_as_text(tmp_path):
    from glfs_workflow.files import read_tsv

    d = len(ODD_IDS)
    sel = glfs.core._result.make_selection(
        "variance", np.r_[np.nan, np.arange(d - 1.0)], higher_is_better=True, n_features=3
    )
    t = selection_table(sel, ODD_IDS)
    write_tsv(t, tmp_path / "s.tsv")
    back = read_tsv(tmp_path / "s.tsv")
    assert back["gene"].tolist() == ODD_IDS  # not NaN, 7, 1000.0, True, ...
    assert np.isnan(back["score"][0]) and back["score"][1:].tolist() == list(np.arange(d - 1.0))
    assert back["selected"].dtype == bool and back["rank"].dtype.kind == "i"
    assert back["weight"].isna().all()
    # the other tables: method names that look like numbers or NA stay text, numbers stay numbers
    c = pd.DataFrame({"method": ["NA", "1"], "n_features": [5, 10], "nmi": [0.5, np.nan]})
    write_tsv(c, tmp_path / "c.tsv")
    back = read_tsv(tmp_path / "c.tsv")
    assert back["method"].tolist() == ["NA", "1"] and back["n_features"].tolist() == [5, 10]
    assert back["nmi"][0] == 0.5 and np.isnan(back["nmi"][1])


def test_report_figures_draw_names_that_look_like_math_text():
    pytest.importorskip("matplotlib")
    from glfs_workflow.figures import figure_heatmap, figure_nmi, figure_paths

    rng = np.random.default_rng(0)
    genes = ["$\\foo$", "a$b", "$x_{1}$", "G\tTAB"]
    labels = ["$\\unknown$", "$\\unknown$", "b/c", "b/c", "$"]
    png = figure_heatmap(rng.normal(size=(5, 4)), genes, labels, "d$s", "$m$")
    assert png[:4] == b"\x89PNG"
    nmi = pd.DataFrame({"method": ["$\\bad$"] * 2, "n_features": [1, 2], "run": [0, 0], "nmi": [0.1, 0.2]})
    assert figure_nmi(nmi, "$\\bad$")[:4] == b"\x89PNG"
    path = pd.DataFrame({"lam": [1.0, 0.5], "n_selected": [1, 2], "objective": [0.0, 0.0]})
    assert figure_paths({"$\\bad$": path}, "d")[:4] == b"\x89PNG"
