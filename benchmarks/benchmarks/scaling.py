"""Scaling by cells and by genes: the Laplacian score on a given graph, the whole selection with the
library's own graph (``glfs.select``), and scanpy's seurat_v3 highly-variable genes on the same counts.

Data: ``common.dataset``, made once at the largest size of the profile; each size is its first cells
(``by_cells``, at the profile's ``genes``) or its first genes (``by_genes``, at the profile's
``cells``).  The given graph of each size is built in ``setup_cache`` (not timed).
"""

from __future__ import annotations

import glfs

from .common import N_NEIGHBORS, SEED, SIZES, TIMEOUT, dataset, n_top, warm_up


def _given_graph(X):
    return glfs.similarity_graph(X, n_neighbors=N_NEIGHBORS, random_state=SEED)


def _hvg_seurat_v3(counts, k):
    """scanpy's seurat_v3 flavour on raw counts (the single-cell peer; scikit-misc's loess)."""
    import anndata
    import scanpy as sc

    return sc.pp.highly_variable_genes(anndata.AnnData(counts), flavor="seurat_v3", n_top_genes=k, inplace=False)


class ByCells:
    """The profile's ``by_cells`` sizes at its ``genes``."""

    params = SIZES["by_cells"]
    param_names = ["n_cells"]
    timeout = TIMEOUT

    def setup_cache(self):
        counts, X = dataset(max(self.params), SIZES["genes"])
        graphs = {n: _given_graph(X[:n]) for n in self.params}
        return {"counts": counts, "X": X, "W": graphs}

    def setup(self, data, n_cells):
        warm_up()
        self.counts = data["counts"][:n_cells]
        self.X = data["X"][:n_cells]
        self.W = data["W"][n_cells]
        self.k = n_top(self.X.shape[1])

    def time_laplacian_score(self, data, n_cells):
        glfs.laplacian_score(self.X, self.W)

    def peakmem_laplacian_score(self, data, n_cells):
        glfs.laplacian_score(self.X, self.W)

    def time_select_own_graph(self, data, n_cells):
        """The own graph (the library's default search at this size) and the score: ``glfs.select``'s default."""
        glfs.select(self.X, "laplacian_score", n_features_to_select=self.k, random_state=SEED)

    def peakmem_select_own_graph(self, data, n_cells):
        glfs.select(self.X, "laplacian_score", n_features_to_select=self.k, random_state=SEED)

    def time_hvg_seurat_v3(self, data, n_cells):
        _hvg_seurat_v3(self.counts, self.k)


class ByGenes:
    """The profile's ``by_genes`` sizes at its ``cells``; the given graph is that of all genes."""

    params = SIZES["by_genes"]
    param_names = ["n_genes"]
    timeout = TIMEOUT

    def setup_cache(self):
        counts, X = dataset(SIZES["cells"], max(self.params))
        return {"counts": counts, "X": X, "W": _given_graph(X)}

    def setup(self, data, n_genes):
        warm_up()
        self.counts = data["counts"][:, :n_genes]
        self.X = data["X"][:, :n_genes]
        self.W = data["W"]
        self.k = n_top(n_genes)

    def time_laplacian_score(self, data, n_genes):
        glfs.laplacian_score(self.X, self.W)

    def peakmem_laplacian_score(self, data, n_genes):
        glfs.laplacian_score(self.X, self.W)

    def time_select_own_graph(self, data, n_genes):
        glfs.select(self.X, "laplacian_score", n_features_to_select=self.k, random_state=SEED)

    def time_hvg_seurat_v3(self, data, n_genes):
        _hvg_seurat_v3(self.counts, self.k)
