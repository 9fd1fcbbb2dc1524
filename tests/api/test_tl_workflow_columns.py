"""glfs.tl.select and the workflow's selection job write the same AnnData keys, for every method.

The workflow path is the one of ``scripts/select_features.py`` (its selections, then its AnnData):
the adapter glfs.tl.selection with a graph built with the same settings as its default_graph, the selection table and JSON sidecar written
to disk and read back, then :func:`glfs_workflow.tables.annotate_selection`.
Also: ``key_added`` names every output of tl.select (scanpy's convention), and a
later call never overwrites an earlier method's columns.
"""

import json
import warnings

import numpy as np
import pytest

import glfs
from glfs._anndata_writers import GRAPH_KEY, write_graph
from glfs.tl import CONNECTIVITIES_KEY
from glfs_workflow.files import read_tsv, write_tsv
from glfs_workflow.tables import annotate_selection, selection_graph, selection_meta, selection_table

anndata = pytest.importorskip("anndata")

K = 4


def _adata(seed=0, n=36, d=14):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    labels = np.repeat(["a", "b"], n // 2)
    X[labels == "a", :3] += 2.5
    a = anndata.AnnData(X=X)
    a.var_names = [f"g{j}" for j in range(d)]
    a.obs_names = [f"s{i}" for i in range(n)]
    a.obs["cls"] = labels
    a.layers["counts"] = rng.poisson(np.exp(X / 2)).astype(np.float64)  # for the methods that score counts
    return a


def _n_genes(info):
    """14 genes; 60 for the count methods (seurat_v3's loess fails on 14: test_hvg.py checks the message)."""
    return 60 if info.needs_counts else 14


def _via_tl(method, **kw):
    info = glfs.METHODS[method]
    a = _adata(d=_n_genes(info))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        glfs.tl.select(a, method, K, labels_key="cls" if info.needs_labels else None, **kw)
    return a


def _via_workflow(method, tmp_path):
    info = glfs.METHODS[method]
    a = _adata(d=_n_genes(info))
    # as scripts/select_features.py: the adapter glfs.tl.selection with the dataset's graph as default_graph
    W = glfs.similarity_graph(np.asarray(a.X), n_neighbors=5, kernel="heat")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sel = glfs.tl.selection(a, method, K, labels_key="cls", default_graph=W)
    write_tsv(selection_table(sel, a.var_names), tmp_path / f"{method}.tsv")
    meta = json.loads(json.dumps(selection_meta(sel, n_features=K, graph=selection_graph(sel, "knn"))))
    if info.needs_graph:
        write_graph(a, sel.extra["graph"] if info.own_graph else W)
    annotate_selection(a, read_tsv(tmp_path / f"{method}.tsv"), meta)
    return a, sel


@pytest.mark.parametrize("method", sorted(glfs.METHODS))
def test_tl_select_and_workflow_write_the_same_columns(method, tmp_path):
    if glfs.METHODS[method].family == "hvg":
        pytest.importorskip("scanpy")  # the singlecell extra
    a1 = _via_tl(method)
    a2, sel = _via_workflow(method, tmp_path)
    new1 = set(a1.var.columns)
    assert new1 == set(a2.var.columns)
    expected = {method, f"{method}_score", f"{method}_rank"} | (
        {f"{method}_weight"} if sel.weights is not None else set()
    )
    assert new1 == expected
    for col in sorted(new1):
        v1, v2 = a1.var[col].to_numpy(), a2.var[col].to_numpy()
        if v1.dtype.kind == "f":
            np.testing.assert_allclose(v1, v2, rtol=1e-12, equal_nan=True, err_msg=col)
        else:
            np.testing.assert_array_equal(v1, v2, err_msg=col)
    # the same graph, under each face's key: the workflow's contract (obsp["patient_similarity"]) and tl.select's
    assert set(a1.obsp.keys()) == ({CONNECTIVITIES_KEY} if GRAPH_KEY in a2.obsp else set())
    assert set(a2.obsp.keys()) <= {GRAPH_KEY}
    if GRAPH_KEY in a2.obsp:
        assert abs(a1.obsp[CONNECTIVITIES_KEY] - a2.obsp[GRAPH_KEY]).max() == 0
    p1, p2 = a1.uns[method]["params"], a2.uns[method]["params"]
    # the gene count: n_top_genes on the AnnData face, n_features in the workflow's contract
    assert set(p1) >= set(p2) - {"layer", "counts", "n_features"}
    assert p1["n_top_genes"] == p2["n_features"] == K
    if glfs.METHODS[method].own_graph:  # tl.select stores the method's own graph; the workflow says it built its own
        assert p1["graph"] == f"obsp:{CONNECTIVITIES_KEY}" and p2["graph"].startswith("own")
    elif glfs.METHODS[method].needs_graph:
        assert p1["graph"] == f"obsp:{CONNECTIVITIES_KEY}" and p2["graph"] == f"obsp:{GRAPH_KEY}"
    else:
        assert p1["graph"] == p2["graph"] == "none"


@pytest.mark.parametrize("method", ["glfs", "q_alpha", "laplacian_score"])
def test_key_added_names_every_output(method):
    a = _adata()
    before = set(a.var.columns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        glfs.tl.select(a, method, K, key_added="mine")
        sel = glfs.select(np.asarray(a.X), method, n_features_to_select=K)
    written = set(a.var.columns) - before
    expected = {"mine", "mine_score", "mine_rank"} | ({"mine_weight"} if sel.weights is not None else set())
    assert written == expected
    assert set(a.uns) == {"mine"}
    needs_graph = glfs.METHODS[method].needs_graph
    assert set(a.obsp.keys()) == ({"mine_connectivities"} if needs_graph else set())
    assert a.uns["mine"]["params"]["graph"] == ("obsp:mine_connectivities" if needs_graph else "none")


def test_q_alpha_then_glfs_keep_their_own_weights():
    """The bug of issue 10: q_alpha's weights went to var["glfs_weight"], which a later GLFS call overwrote."""
    a = _adata()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        glfs.tl.select(a, "q_alpha", K)
        q = a.var["q_alpha_weight"].to_numpy().copy()
        glfs.tl.select(a, "glfs", K)
    assert "glfs_weight" in a.var and "q_alpha_weight" in a.var
    np.testing.assert_array_equal(a.var["q_alpha_weight"].to_numpy(), q)
    assert not np.allclose(a.var["glfs_weight"].to_numpy(), q)


@pytest.mark.parametrize("method", ["variance", "lapaofs"])
def test_the_former_name_n_features_is_refused_on_every_face(method):
    """One name per face (n_features_to_select on arrays, n_top_genes on AnnData); n_features is no alias."""
    a = _adata()
    with pytest.raises(ValueError, match=rf"parameter 'n_features' is not a parameter of method '{method}'"):
        glfs.select(a.X, method, n_features=3)
    with pytest.raises(ValueError, match=rf"parameter 'n_features' is not a parameter of method '{method}'"):
        glfs.tl.select(a, method, n_features=3)
    with pytest.raises(ValueError, match=r"'n_features_to_select' is not a parameter.*n_top_genes in glfs.tl.select"):
        glfs.tl.select(a, method, n_features_to_select=3)
    with pytest.raises(ValueError, match=r"'n_top_genes' is not a parameter.*n_features_to_select in glfs.select"):
        glfs.select(a.X, method, n_top_genes=3)
    assert "n_features" not in a.var and method not in a.uns
    glfs.tl.select(a, "variance", n_top_genes=5)
    assert a.var["variance"].sum() == 5
