"""The AnnData face as a scanpy user expects it (issue 39, item 7), checked against scanpy's own
``sc.pp.highly_variable_genes`` on the same AnnData where it applies.

- ``subset=True`` keeps ``var`` order, as scanpy's ``subset`` does;
- ``mark_highly_variable=True`` writes ``uns["hvg"]`` and the statistics ``sc.pl.highly_variable_genes``
  plots (scanpy's own, computed by scanpy), and the plot renders with the selection highlighted;
- a graph built here is ``obsp["glfs_connectivities"]`` and ``uns[key]["params"]["graph_params"]`` records
  its resolved settings: building the graph again from the record gives the same graph;
- one meaning of "glfs", and unknown method names answered with the name to use.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import glfs

sc = pytest.importorskip("scanpy")
ad = pytest.importorskip("anndata")

N_TOP = 20


def _log_normalised(seed=0, n=300, d=200):
    """Log-normalised counts of n cells in 3 planted groups (markers: genes 0-29), with the counts kept."""
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, 3, n)
    mean = np.tile(rng.gamma(1.0, 0.5, d) + 0.1, (3, 1))
    for g in range(3):
        mean[g, 10 * g : 10 * (g + 1)] *= 6.0
    counts = rng.poisson(mean[groups]).astype(np.float32)
    a = ad.AnnData(X=sp.csr_matrix(counts))
    a.var_names = [f"g{j:03d}" for j in range(d)]
    a.obs_names = [f"c{i}" for i in range(n)]
    a.layers["counts"] = a.X.copy()
    sc.pp.normalize_total(a, target_sum=1e4)
    sc.pp.log1p(a)
    return a


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


# ------------------------------------------------------------------ subset: var order, as scanpy
@pytest.mark.parametrize("flavor", ["seurat", "cell_ranger"])
def test_subset_keeps_the_genes_and_the_var_order_of_scanpys_subset(flavor):
    ours, theirs = _log_normalised(), _log_normalised()
    _quiet(glfs.tl.select, ours, f"hvg_{flavor}", N_TOP, subset=True)
    _quiet(sc.pp.highly_variable_genes, theirs, flavor=flavor, n_top_genes=N_TOP, subset=True)
    assert ours.n_vars == N_TOP
    assert list(ours.var_names) == list(theirs.var_names)


def test_subset_of_a_graph_method_is_in_var_order_and_equals_the_mask():
    full = _log_normalised()
    a = full.copy()
    _quiet(glfs.tl.select, full, "laplacian_score", N_TOP)
    _quiet(glfs.tl.select, a, "laplacian_score", N_TOP, subset=True)
    assert list(a.var_names) == list(full.var_names[full.var["laplacian_score"].to_numpy()])
    ranks = a.var["laplacian_score_rank"].to_numpy()
    assert sorted(ranks) == list(range(1, N_TOP + 1)) and list(ranks) != sorted(ranks)  # var order, not rank order
    table = _quiet(glfs.tl.select, full.copy(), "laplacian_score", N_TOP, subset=True, inplace=False)
    assert list(table.index) == list(a.var_names)


# ------------------------------------------------------------------ uns["hvg"] and sc.pl.highly_variable_genes
def test_mark_highly_variable_writes_scanpys_statistics_and_uns_hvg():
    ours, theirs = _log_normalised(), _log_normalised()
    _quiet(glfs.tl.select, ours, "laplacian_score", N_TOP, mark_highly_variable=True)
    _quiet(sc.pp.highly_variable_genes, theirs, flavor="seurat")  # scanpy's own statistics of the same matrix
    assert ours.uns["hvg"] == {"flavor": "seurat", "selection": "laplacian_score"}
    assert theirs.uns["hvg"]["flavor"] == ours.uns["hvg"]["flavor"]
    for column in ("means", "dispersions", "dispersions_norm"):
        np.testing.assert_allclose(ours.var[column], theirs.var[column], rtol=1e-6, equal_nan=True, err_msg=column)
    np.testing.assert_array_equal(ours.var["highly_variable"], ours.var["laplacian_score"])


def test_the_hvg_flavour_marks_the_genes_scanpy_marks():
    ours, theirs = _log_normalised(), _log_normalised()
    _quiet(glfs.tl.select, ours, "hvg_seurat", N_TOP, mark_highly_variable=True)
    _quiet(sc.pp.highly_variable_genes, theirs, flavor="seurat", n_top_genes=N_TOP)
    np.testing.assert_array_equal(ours.var["highly_variable"], theirs.var["highly_variable"])
    assert ours.uns["hvg"]["flavor"] == theirs.uns["hvg"]["flavor"] == "seurat"


@pytest.mark.parametrize("earlier", [None, "seurat_v3"])
def test_sc_pl_highly_variable_genes_renders_the_selection(earlier):
    """The plot renders (Agg) and highlights exactly the glfs selection: the 'highly variable genes' points of
    the first panel are the N_TOP selected genes, at scanpy's means."""
    if earlier == "seurat_v3":
        pytest.importorskip("skmisc")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    a = _log_normalised()
    if earlier is not None:
        _quiet(sc.pp.highly_variable_genes, a, flavor=earlier, layer="counts", n_top_genes=50)
    _quiet(glfs.tl.select, a, "laplacian_score", N_TOP, mark_highly_variable=True)
    assert a.uns["hvg"]["flavor"] == (earlier or "seurat")
    try:
        ax = sc.pl.highly_variable_genes(a, show=False)
        fig = ax.figure
        first = fig.axes[0]
        highlighted = first.collections[0].get_offsets()
        assert len(highlighted) == N_TOP
        selected = a.var["laplacian_score"].to_numpy()
        np.testing.assert_allclose(np.sort(highlighted[:, 0]), np.sort(a.var["means"].to_numpy()[selected]), rtol=1e-6)
    finally:
        plt.close("all")


# ------------------------------------------------------------------ the graph: its key and its recorded settings
def _rebuilt(X, p):
    """The graph similarity_graph builds from the recorded settings (n_pcs 0 = all genes)."""
    return glfs.similarity_graph(
        X,
        n_neighbors=p["n_neighbors"],
        kernel=p["kernel"],
        metric=p["metric"],
        n_pcs=p["n_pcs"] or None,
        method=p["search"],
        random_state=p["random_state"],
    )


@pytest.mark.parametrize(
    ("graph_params", "expected"),
    [
        (None, {"n_neighbors": 5, "kernel": "heat", "search": "exact", "n_pcs": 0, "out_of_core": False}),
        ({"n_neighbors": 8, "n_pcs": 10}, {"n_neighbors": 8, "kernel": "heat", "search": "exact", "n_pcs": 10}),
        ({"kernel": "binary", "method": "exact"}, {"kernel": "binary", "search": "exact", "n_pcs": 0}),
    ],
)
def test_a_graph_built_here_is_named_and_its_settings_rebuild_it(graph_params, expected):
    a = _log_normalised()
    _quiet(glfs.tl.select, a, "laplacian_score", N_TOP, graph_params=graph_params)
    assert set(a.obsp) == {"glfs_connectivities"}
    p = a.uns["laplacian_score"]["params"]
    assert p["graph"] == "obsp:glfs_connectivities"
    assert expected.items() <= p["graph_params"].items()
    W = a.obsp["glfs_connectivities"]
    assert abs(_rebuilt(a.X, p["graph_params"]) - W).max() == 0


def test_the_settings_follow_the_automatic_search_onto_components(monkeypatch):
    """Past the size where method='auto' searches principal components (lowered here to 100 cells), the record says
    20 components, and those settings rebuild the graph."""
    import glfs.graph._neighbors as nb

    monkeypatch.setattr(nb, "AUTO_APPROX_MIN_SAMPLES", 100)
    a = _log_normalised()
    _quiet(glfs.tl.select, a, "laplacian_score", N_TOP)
    p = a.uns["laplacian_score"]["params"]["graph_params"]
    assert p["n_pcs"] == nb.APPROX_N_PCS and p["search"] == "exact"
    assert abs(_rebuilt(a.X, p) - a.obsp["glfs_connectivities"]).max() == 0


def test_key_added_names_the_graph_as_scanpy_names_its_neighbors_and_it_can_be_reused():
    a = _log_normalised()
    _quiet(glfs.tl.select, a, "laplacian_score", N_TOP, key_added="ls")
    assert set(a.obsp) == {"ls_connectivities"}
    _quiet(glfs.tl.select, a, "laplacian_score", N_TOP, key_added="again", obsp="ls_connectivities")
    np.testing.assert_array_equal(a.var["again_score"], a.var["ls_score"])
    assert "graph_params" not in a.uns["again"]["params"]  # a given graph: nothing is claimed about its settings


def test_the_graph_settings_are_written_to_h5ad(tmp_path):
    a = _log_normalised()
    _quiet(glfs.tl.select, a, "laplacian_score", N_TOP, mark_highly_variable=True)
    a.write_h5ad(tmp_path / "a.h5ad")
    b = ad.read_h5ad(tmp_path / "a.h5ad")
    assert b.uns["laplacian_score"]["params"]["graph_params"] == a.uns["laplacian_score"]["params"]["graph_params"]
    assert b.uns["hvg"]["flavor"] == "seurat"


# ------------------------------------------------------------------ names
@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("seurat_v3", r"scanpy's flavor 'seurat_v3' is method 'hvg_seurat_v3' here.*method='hvg_seurat_v3'"),
        ("seurat", r"method 'hvg_seurat'"),
        ("cell_ranger", r"method 'hvg_cell_ranger'"),
        ("pearson_residuals", r"method 'hvg_pearson_residuals'"),
        ("laplacian", r"Did you mean 'laplacian_score'"),
        ("glfs_exct", r"Did you mean 'glfs_exact'"),
        ("xyz_unheard_of", r"See glfs\.METHODS"),
    ],
)
def test_an_unknown_method_name_gets_the_name_to_use_and_nothing_is_written(given, said):
    a = _log_normalised()
    before = (list(a.var.columns), set(a.uns), set(a.obsp))
    with pytest.raises(ValueError, match=rf"got '{given}'\. .*" + said):
        glfs.tl.select(a, given, N_TOP)
    with pytest.raises(ValueError, match=said):
        glfs.select(a.X, given, n_features_to_select=N_TOP)
    assert (list(a.var.columns), set(a.uns), set(a.obsp)) == before


def test_glfs_means_one_thing():
    """method='glfs' is the well-posed design (glfs.glfs_design); the published readings are glfs_published."""
    assert glfs.METHODS["glfs"].fn.__module__ == glfs.glfs_design.__module__
    assert glfs.METHODS["glfs"].params_from is glfs.glfs_design
    assert {glfs.METHODS[m].params_from for m in ("glfs_exact", "glfs_paper", "glfs_printed")} == {glfs.glfs_published}
    with pytest.raises(AttributeError, match=r"glfs\.glfs_design.*glfs\.glfs_published"):
        glfs.glfs  # noqa: B018
