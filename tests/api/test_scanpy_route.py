"""The README's scanpy route end to end at single-cell size (issue 17, item 5).

10,000 simulated cells of sparse counts -> ``sc.pp.normalize_total`` ->
``sc.pp.log1p`` -> ``sc.pp.pca`` -> ``sc.pp.neighbors`` (default metric and
``metric="cosine"``) -> ``glfs.tl.select(adata, "laplacian_score", 200,
obsp="connectivities", key_added="ls")`` -> ``sc.pp.pca(adata, mask_var="ls")``.

The regression test for the pinned environment: from 8,192 cells scanpy's
``pp.neighbors`` searches with pynndescent, and pynndescent 0.7.0 returns a
``scipy.sparse.csr_array`` on which scanpy 1.11.5 calls ``getnnz`` and fails
("'csr_array' object has no attribute 'getnnz'"; with ``metric="cosine"``
from about 4,186 cells).  constraints.txt pins pynndescent 0.6.0 for this.
Not marked ``workflow``: it runs in ``pytest`` and ``pytest -m "not workflow"``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import glfs

sc = pytest.importorskip("scanpy")
ad = pytest.importorskip("anndata")

N_CELLS = 10_000
N_GROUPS = 5
MARKERS_PER_GROUP = 40  # genes 0-199: group markers; genes 200-599: pure noise
N_NOISE = 400
N_SELECT = 200
N_PCS = 20
# scanpy's pp.neighbors leaves its exact search for pynndescent from this many cells on
SCANPY_PYNNDESCENT_MIN_CELLS = 8192


def simulate_counts(seed: int = 0):
    """Counts of N_CELLS cells in N_GROUPS planted groups, CSR float32, and the group of each cell.

    Every gene has a baseline mean drawn from a gamma (0.05 to about 2 counts);
    the markers of group g are 6x their baseline in the cells of group g.
    Cells have log-normal library sizes, so normalisation has work to do.
    """
    rng = np.random.default_rng(seed)
    n_genes = N_GROUPS * MARKERS_PER_GROUP + N_NOISE
    groups = rng.integers(0, N_GROUPS, N_CELLS)
    base = rng.gamma(1.0, 0.4, n_genes) + 0.05
    size = rng.lognormal(0.0, 0.3, N_CELLS)
    mean = np.tile(base, (N_GROUPS, 1))
    for g in range(N_GROUPS):
        mean[g, g * MARKERS_PER_GROUP : (g + 1) * MARKERS_PER_GROUP] *= 6.0
    counts = rng.poisson(size[:, None] * mean[groups]).astype(np.float32)
    return sp.csr_matrix(counts), groups


@pytest.fixture(scope="module")
def prepared():
    """The AnnData after normalize_total, log1p and PCA (shared; each test works on a copy)."""
    X, groups = simulate_counts()
    adata = ad.AnnData(X)
    adata.var_names = [f"marker{i}" for i in range(N_GROUPS * MARKERS_PER_GROUP)] + [
        f"noise{i}" for i in range(N_NOISE)
    ]
    adata.obs["group"] = groups.astype(str)
    adata.layers["counts"] = X.copy()
    sc.pp.normalize_total(adata)
    sc.pp.log1p(adata)
    sc.pp.pca(adata, n_comps=N_PCS, random_state=0)
    return adata, groups


def test_the_simulation_is_what_the_route_needs(prepared):
    adata, groups = prepared
    assert adata.n_obs == N_CELLS > SCANPY_PYNNDESCENT_MIN_CELLS  # scanpy's pynndescent path
    assert isinstance(adata.layers["counts"], sp.csr_matrix) and adata.layers["counts"].dtype == np.float32
    assert sp.issparse(adata.X)
    assert np.bincount(groups, minlength=N_GROUPS).min() > N_CELLS // (2 * N_GROUPS)


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_scanpy_route_end_to_end(prepared, metric):
    base, groups = prepared
    adata = base.copy()
    kwargs = {} if metric == "euclidean" else {"metric": metric}  # euclidean: scanpy's default, as users call it
    sc.pp.neighbors(adata, random_state=0, **kwargs)
    n = adata.n_obs

    # the graph scanpy built: (n, n), symmetric, every cell connected, groups found
    C = adata.obsp["connectivities"]
    assert C.shape == (n, n)
    assert adata.obsp["distances"].shape == (n, n)
    assert adata.uns["neighbors"]["params"]["metric"] == metric
    assert abs(C - C.T).max() < 1e-6
    assert (np.diff(C.tocsr().indptr) > 0).all()
    Ccoo = C.tocoo()
    within = Ccoo.data[groups[Ccoo.row] == groups[Ccoo.col]].sum() / Ccoo.data.sum()
    assert within > 0.9, f"{metric}: only {within:.2f} of the graph's weight within the planted groups"

    # glfs on scanpy's graph, as the README shows
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. anndata's implicit-modification warnings; not what is tested
        glfs.tl.select(adata, "laplacian_score", N_SELECT, obsp="connectivities", key_added="ls")
    selected = adata.var["ls"].to_numpy()
    rank = adata.var["ls_rank"].to_numpy()
    assert selected.dtype == bool and selected.sum() == N_SELECT
    assert sorted(rank.tolist()) == list(range(1, adata.n_vars + 1))  # a permutation, 1 = best
    assert set(np.flatnonzero(selected)) == set(np.flatnonzero(rank <= N_SELECT))
    marker = adata.var_names.str.startswith("marker")
    # planted genes rank above noise genes: in most (marker, noise) pairs and in the selection
    above = (rank[marker][:, None] < rank[~marker][None, :]).mean()
    assert above > 0.9, f"{metric}: a marker ranks above a noise gene in only {above:.2f} of pairs"
    assert selected[marker].sum() > N_SELECT // 2
    assert adata.uns["ls"]["params"]["n_top_genes"] == N_SELECT

    # scanpy's PCA on the selection, by the column name glfs wrote
    sc.pp.pca(adata, n_comps=N_PCS, mask_var="ls", random_state=0)
    assert adata.obsm["X_pca"].shape == (n, N_PCS)
    loadings = adata.varm["PCs"]
    assert loadings.shape == (adata.n_vars, N_PCS)
    assert np.abs(loadings[~selected]).max() == 0 and np.abs(loadings[selected]).max() > 0
    # the components on the selected genes keep the groups apart (nearest-centroid accuracy)
    Z = adata.obsm["X_pca"]
    centroids = np.stack([Z[groups == g].mean(axis=0) for g in range(N_GROUPS)])
    nearest = ((Z[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2).argmin(axis=1)
    assert (nearest == groups).mean() > 0.9


def test_readme_single_cell_snippet(prepared):
    """The README's "Single cells in scanpy" snippet, line for line (counts in layers["counts"])."""
    base, groups = prepared
    adata = base.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc.pp.neighbors(adata)  # scanpy's graph
        glfs.tl.select(adata, "laplacian_score", 200, obsp="connectivities", key_added="ls")  # on scanpy's graph
        glfs.tl.select(adata, "hvg_seurat_v3", 200)  # scanpy's HVG flavour, from layers["counts"]
        glfs.tl.select(
            adata, "laplacian_score", 200, obsp="connectivities", key_added="ls_hv", mark_highly_variable=True
        )
        sc.pp.pca(adata, n_comps=N_PCS)  # uses var["highly_variable"]: the glfs selection
    assert adata.uns["hvg_seurat_v3"]["params"]["counts"] == "layers:counts"
    np.testing.assert_array_equal(adata.var["highly_variable"].to_numpy(), adata.var["ls_hv"].to_numpy())
    off = ~adata.var["ls_hv"].to_numpy()
    assert np.abs(adata.varm["PCs"][off]).max() == 0  # PCA on the selection only
    marker = np.asarray(adata.var_names.str.startswith("marker"))
    assert adata.var["hvg_seurat_v3"].to_numpy()[marker].sum() > 150
