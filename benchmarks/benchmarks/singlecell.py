"""The single-cell peer: scanpy's ``sc.pp.highly_variable_genes`` (seurat_v3 on counts, cell_ranger on
log-normalised values) beside the library's selections through its AnnData face (``glfs.tl.select``, each
building its own graph), timed in the same suite on the same AnnData.

Data: ``common.dataset`` at the profile's ``graph_cells`` x ``genes``: X log-normalised, the counts in
``layers["counts"]``, as a scanpy user holds them.  Every call returns a table (``inplace=False``), so
repeats do not see each other's output.
"""

from __future__ import annotations

import glfs

from .common import SEED, SIZES, TIMEOUT, dataset, n_top, warm_up


class HighlyVariableGenes:
    """Select ``n_top`` genes of one AnnData: glfs' Laplacian score and graph_moran against scanpy's flavours."""

    params = ["glfs_laplacian_score", "glfs_graph_moran", "scanpy_seurat_v3", "scanpy_cell_ranger"]
    param_names = ["selection"]
    timeout = TIMEOUT

    def setup_cache(self):
        return dataset(SIZES["graph_cells"], SIZES["genes"])

    def setup(self, data, selection):
        import anndata
        import scanpy as sc

        counts, X = data
        self.adata = anndata.AnnData(X=X.copy(), layers={"counts": counts.copy()})
        self.adata.var_names = [f"gene{j}" for j in range(X.shape[1])]
        self.k = n_top(X.shape[1])
        self.sc = sc
        if selection.startswith("glfs"):
            warm_up()

    def _select(self, selection):
        if selection == "glfs_laplacian_score":
            return glfs.tl.select(self.adata, "laplacian_score", n_top_genes=self.k, random_state=SEED, inplace=False)
        if selection == "glfs_graph_moran":
            return glfs.tl.select(self.adata, "graph_moran", n_top_genes=self.k, random_state=SEED, inplace=False)
        if selection == "scanpy_seurat_v3":
            return self.sc.pp.highly_variable_genes(
                self.adata, flavor="seurat_v3", layer="counts", n_top_genes=self.k, inplace=False
            )
        return self.sc.pp.highly_variable_genes(self.adata, flavor="cell_ranger", n_top_genes=self.k, inplace=False)

    def time_select(self, data, selection):
        self._select(selection)

    def peakmem_select(self, data, selection):
        self._select(selection)
