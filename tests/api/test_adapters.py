"""AnnData adapter (glfs.tl) and scikit-learn selector."""

import re

import anndata as ad
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import Pipeline

import glfs
from glfs.sklearn import FeatureSelector


@pytest.fixture
def adata(planted):
    X, groups = planted
    a = ad.AnnData(
        X=X.copy(),
        obs=pd.DataFrame(
            {"label": pd.Categorical([f"g{g}" for g in groups])}, index=[f"s{i}" for i in range(X.shape[0])]
        ),
        var=pd.DataFrame(index=[f"gene{j}" for j in range(X.shape[1])]),
    )
    return a


def _snapshot(a):
    return (
        a.X.copy(),
        a.var.copy(),
        dict(a.uns),
        sorted(a.obsp.keys()),
        a.obs.copy(),
    )


def test_tl_select_writes_contract_keys(adata):
    glfs.tl.select(adata, method="laplacian_score", n_top_genes=3)
    v = adata.var
    assert v["laplacian_score_score"].dtype == np.float64
    assert np.issubdtype(v["laplacian_score_rank"].dtype, np.integer)
    assert v["laplacian_score"].dtype == bool
    assert v["laplacian_score"].sum() == 3
    assert set(v.index[v["laplacian_score"]]) == {"gene0", "gene1", "gene2"}
    # rank 1 = lowest Laplacian score (lower is better)
    assert v["laplacian_score_score"].idxmin() == v["laplacian_score_rank"].idxmin()
    params = adata.uns["laplacian_score"]["params"]
    assert params["n_top_genes"] == 3 and params["method"] == "laplacian_score"
    plain = (str, int, float, bool)
    assert all(isinstance(x, plain) for x in params.values() if not isinstance(x, dict))
    assert all(isinstance(x, plain) for x in params["graph_params"].values())
    W = adata.obsp["glfs_connectivities"]
    assert sp.issparse(W) and W.shape == (60, 60)


def test_tl_select_key_added_and_layer(adata):
    adata.layers["scaled"] = adata.X * 2.0
    glfs.tl.select(adata, method="variance", n_top_genes=2, key_added="hv", layer="scaled")
    assert "hv" in adata.var and "hv_score" in adata.var and "hv_rank" in adata.var
    np.testing.assert_allclose(adata.var["hv_score"], np.var(adata.X * 2.0, axis=0))
    assert adata.uns["hv"]["params"]["layer"] == "scaled"


def test_array_path_equals_anndata_path(adata):
    sel = glfs.select(adata.X, "laplacian_score", n_features_to_select=4)
    df = glfs.tl.select(adata, method="laplacian_score", n_top_genes=4, inplace=False)
    np.testing.assert_allclose(df["score"].to_numpy(), sel.scores)
    np.testing.assert_array_equal(df["rank"].to_numpy(), sel.rank)
    np.testing.assert_array_equal(df["selected"].to_numpy(), sel.selected)
    assert list(df.index) == list(adata.var_names)


def test_inplace_false_leaves_adata_unchanged(adata):
    before = _snapshot(adata)
    glfs.tl.select(adata, method="laplacian_score", n_top_genes=2, inplace=False)
    after = _snapshot(adata)
    pd.testing.assert_frame_equal(before[1], after[1])
    assert before[2] == after[2] and before[3] == after[3]


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"method": "laplacian_score", "n_top_genes": 1000}, r"n_top_genes must be an integer in \[1, 40\]"),
        ({"method": "nope", "n_top_genes": 2}, r"method must be one of"),
        ({"method": "laplacian_score", "n_top_genes": 2, "obsp": "connectivities"}, r"sc.pp.neighbors"),
        ({"method": "variance", "n_top_genes": 2, "layer": "counts"}, r"layer must name one of"),
        (
            {"method": "fisher_score", "n_top_genes": 2, "labels_key": "subtype"},
            r"labels_key must name an adata.obs column",
        ),
    ],
)
def test_failed_call_leaves_adata_unchanged(adata, kwargs, match):
    glfs.tl.select(adata, method="variance", n_top_genes=2)  # some pre-existing results
    before = _snapshot(adata)
    with pytest.raises(ValueError, match=match):
        glfs.tl.select(adata, **kwargs)
    after = _snapshot(adata)
    np.testing.assert_array_equal(before[0], after[0])
    pd.testing.assert_frame_equal(before[1], after[1])
    assert before[2].keys() == after[2].keys() and before[3] == after[3]


def test_tl_uses_precomputed_obsp_graph(adata):
    W = glfs.similarity_graph(adata.X, n_neighbors=7, kernel="binary")
    adata.obsp["connectivities"] = W
    glfs.tl.select(adata, method="laplacian_score", n_top_genes=3, obsp="connectivities")
    np.testing.assert_allclose(adata.var["laplacian_score_score"], glfs.laplacian_score(adata.X, W))
    assert "patient_similarity" not in adata.obsp and "glfs_connectivities" not in adata.obsp


def test_tl_supervised_from_obs(adata):
    glfs.tl.select(adata, method="fisher_score", n_top_genes=3, labels_key="label")
    assert set(adata.var_names[adata.var["fisher_score"]]) == {"gene0", "gene1", "gene2"}


def test_scanpy_pca_mask_var(adata):
    sc = pytest.importorskip("scanpy")
    glfs.tl.select(adata, method="laplacian_score", n_top_genes=5)
    sc.pp.pca(adata, n_comps=3, mask_var="laplacian_score")
    assert adata.obsm["X_pca"].shape == (60, 3)


def test_h5ad_roundtrip(adata, tmp_path):
    glfs.tl.select(adata, method="laplacian_score", n_top_genes=5)
    p = tmp_path / "a.h5ad"
    adata.write_h5ad(p)
    b = ad.read_h5ad(p)
    pd.testing.assert_frame_equal(adata.var, b.var)
    assert b.uns["laplacian_score"]["params"]["n_top_genes"] == 5
    assert b.uns["laplacian_score"]["params"]["graph_params"] == adata.uns["laplacian_score"]["params"]["graph_params"]


# ---------------------------------------------------------------- scikit-learn
def test_feature_selector_in_pipeline(planted):
    X, groups = planted
    y = (groups == 0).astype(int)
    pipe = Pipeline(
        [("select", FeatureSelector(method="laplacian_score", n_features_to_select=3)), ("clf", LogisticRegression())]
    )
    pipe.fit(X, y)
    sel = pipe.named_steps["select"]
    assert sel.get_support().sum() == 3
    assert set(np.flatnonzero(sel.get_support())) == {0, 1, 2}
    assert pipe.named_steps["select"].transform(X).shape == (60, 3)
    scores = cross_val_score(pipe, X, y, cv=3)
    assert scores.mean() > 0.9


def test_feature_selector_supervised_uses_y(planted):
    X, groups = planted
    sel = FeatureSelector(method="fisher_score", n_features_to_select=2).fit(X, groups)
    assert set(np.flatnonzero(sel.get_support())) <= {0, 1, 2}
    with pytest.raises(ValueError, match="labels must be given"):
        FeatureSelector(method="fisher_score", n_features_to_select=2).fit(X)


def test_feature_selector_caps_n_features(planted):
    X, _ = planted
    sel = FeatureSelector(method="variance", n_features_to_select=500).fit(X[:, :10])
    assert sel.get_support().sum() == 10


# ---------------------------------------------------------------- issue 11: first days with the API
def test_select_accepts_an_anndata(adata):
    a = glfs.select(adata, "laplacian_score", n_features_to_select=3)
    b = glfs.select(adata.X, "laplacian_score", n_features_to_select=3)
    np.testing.assert_array_equal(a.ranking, b.ranking)
    np.testing.assert_allclose(a.scores, b.scores)
    empty = ad.AnnData(obs=pd.DataFrame(index=["a", "b"]), var=pd.DataFrame(index=["g"]))
    with pytest.raises(
        ValueError,
        match=r"X is an AnnData whose \.X is None; pass adata\.layers\[\.\.\.\], or use glfs\.tl\.select\(adata, layer=\.\.\.\)",
    ):
        glfs.select(empty, "variance", n_features_to_select=1)


@pytest.mark.parametrize("method", ["ufi", "variance", "q_alpha"])
def test_graph_given_to_a_method_without_one_is_warned(planted, method):
    X, _ = planted
    W = glfs.similarity_graph(X, n_neighbors=5)
    with pytest.warns(UserWarning, match=rf"method '{method}' uses no graph; the graph passed is ignored"):
        glfs.select(X, method, graph=W, n_features_to_select=3)


def test_tl_select_obsp_for_ufi_warns(adata):
    adata.obsp["connectivities"] = glfs.similarity_graph(adata.X, n_neighbors=5)
    with pytest.warns(UserWarning, match="method 'ufi' uses no graph"):
        glfs.tl.select(adata, method="ufi", n_top_genes=3, obsp="connectivities")


def test_tl_select_weights_go_under_the_key(adata):
    glfs.tl.select(adata, method="q_alpha", n_top_genes=3)
    assert "q_alpha_weight" in adata.var and "glfs_weight" not in adata.var
    glfs.tl.select(adata, method="q_alpha", n_top_genes=3, key_added="qa")
    assert "qa_weight" in adata.var and "glfs_weight" not in adata.var
    np.testing.assert_array_equal(adata.var["qa_weight"], adata.var["q_alpha_weight"])
    glfs.tl.select(adata, method="glfs_exact", n_top_genes=3)
    assert "glfs_exact_weight" in adata.var and "glfs_weight" not in adata.var  # as the workflow's .h5ad
    glfs.tl.select(adata, method="glfs", n_top_genes=3)
    assert "glfs_weight" in adata.var  # the well-posed GLFS under its plain key


def test_tl_select_says_what_it_does(adata, caplog):
    with caplog.at_level("INFO", logger="glfs"):
        glfs.tl.select(adata, method="laplacian_score", n_top_genes=3)
    text = caplog.text
    assert "tl.select: laplacian_score on 60 samples x 40 genes" in text
    assert "building a kNN patient-similarity graph (n_neighbors=5, kernel='heat')" in text
    assert "scoring 40 genes with laplacian_score" in text
    assert re.search(r"laplacian_score done in \d+\.\d s; wrote var\['laplacian_score'\]", text)


def test_tl_select_warns_on_raw_counts(caplog):
    rng = np.random.default_rng(0)
    counts = rng.negative_binomial(2, 0.5, size=(30, 20)).astype(float)
    counts[:, 0] *= 1000  # one very highly expressed gene
    a = ad.AnnData(counts)
    with caplog.at_level("WARNING", logger="glfs"):
        glfs.tl.select(a, method="variance", n_top_genes=3)
    assert "adata.X looks like raw counts" in caplog.text and "sc.pp.log1p" in caplog.text
    caplog.clear()
    b = ad.AnnData(np.log1p(counts))
    with caplog.at_level("WARNING", logger="glfs"):
        glfs.tl.select(b, method="variance", n_top_genes=3)
    assert "raw counts" not in caplog.text


def test_package_names_resolve_to_their_objects():
    """Every name in glfs.__all__ is the object its module defines (DESIGN's Python API), and the
    package's ``glfs.designs.ufi`` is the function, not its module."""
    import importlib
    import types

    import glfs

    homes = {
        "lapaofs": "designs._optimal",
        "lapdofs": "designs._optimal",
        "glfs_published": "designs._gradient",
        "glfs_objective": "designs._gradient",
        "glfs_path": "designs._gradient",
        "laprls_fit": "designs._gradient",
        "glfs_design": "designs._budgeted",
        "lkr_score": "scores._lkr",
        "spca_score": "scores._baselines",
        "q_alpha": "scores._baselines",
        "laplacian_score": "scores._genewise",
        "similarity_graph": "graph._similarity",
        "GLFSClassifier": "sklearn",
        "FeatureSelector": "sklearn",
    }
    for name, mod in homes.items():
        assert getattr(glfs, name) is getattr(importlib.import_module(f"glfs.{mod}"), name), name
    for name in glfs.__all__:
        assert getattr(glfs, name) is not None, name
    assert callable(glfs.designs.ufi) and glfs.designs.ufi is glfs.designs._ufi.ufi
    assert isinstance(glfs.tl, types.ModuleType) and callable(glfs.tl.select)


@pytest.mark.parametrize("package", ["glfs.graph", "glfs.evaluate", "glfs.scores", "glfs"])
def test_every_name_a_package_exports_is_there(package):
    """``from <package> import *`` works: glfs.graph and glfs.evaluate build their ``__all__`` from their
    modules' (listed once, issue 27), so a name added to a module's ``__all__`` and not imported by the
    package would break the star import; it is caught here."""
    import importlib

    mod = importlib.import_module(package)
    missing = [name for name in mod.__all__ if not hasattr(mod, name)]
    assert missing == [] and len(set(mod.__all__)) == len(mod.__all__), (missing, mod.__all__)
    namespace = {}
    exec(f"from {package} import *", namespace)  # noqa: S102 - the star import a user writes
    assert set(mod.__all__) <= set(namespace)


def test_graph_and_evaluate_export_their_modules_names():
    import glfs.evaluate as ev
    import glfs.graph as gr
    from glfs.evaluate import _classify as classify
    from glfs.evaluate import _clustering as clustering
    from glfs.evaluate import _leiden as leiden
    from glfs.evaluate import _mixing as mixing
    from glfs.graph import _similarity as similarity

    assert gr.__all__ == similarity.__all__ and all(getattr(gr, n) is getattr(similarity, n) for n in gr.__all__)
    for m in (classify, clustering, leiden, mixing):
        assert all(getattr(ev, n) is getattr(m, n) for n in m.__all__), m.__name__
    assert set(ev.__all__) - {n for m in (classify, clustering, leiden, mixing) for n in m.__all__} == {
        "random_gene_orders",
        "evaluate_random_floor",
    }
