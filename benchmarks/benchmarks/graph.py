"""The library's own graph: the k-nearest-neighbour heat-kernel graph on all genes and on 20 principal
components (``glfs.similarity_graph``), beside scikit-feature's ``construct_W`` (a dense n x n distance
matrix) in the same run.

Data: ``common.dataset`` at the profile's ``graph_cells`` x ``genes``, log-normalised, sparse.
"""

from __future__ import annotations

import numpy as np

import glfs

from .common import N_NEIGHBORS, SEED, SIZES, TIMEOUT, dataset, skip_dense_peer

#: Principal components of the graph on components (the library's default from 8,192 cells on).
N_PCS = 20


class OwnGraph:
    """The graph the library builds when none is given, by the representation it searches."""

    params = ["all_genes", "pcs_20", "skfeature_construct_W"]
    param_names = ["graph"]
    timeout = TIMEOUT

    def setup_cache(self):
        _, X = dataset(SIZES["graph_cells"], SIZES["genes"])
        return X

    def setup(self, X, graph):
        self.X = X
        if graph == "skfeature_construct_W":
            skip_dense_peer(X.shape[0])
            from skfeature.utility.construct_W import construct_W

            self.construct_W = construct_W
            self.Xd = X.toarray().astype(np.float64)

    def _build(self, graph):
        if graph == "all_genes":
            return glfs.similarity_graph(self.X, n_neighbors=N_NEIGHBORS, method="exact", random_state=SEED)
        if graph == "pcs_20":
            return glfs.similarity_graph(
                self.X, n_neighbors=N_NEIGHBORS, n_pcs=N_PCS, method="exact", random_state=SEED
            )
        # scikit-feature's heat kernel exp(-d^2 / (2 t^2)) on the 5 nearest (all genes, Euclidean)
        return self.construct_W(
            self.Xd, metric="euclidean", neighbor_mode="knn", weight_mode="heat_kernel", k=N_NEIGHBORS, t=1.0
        )

    def time_graph(self, X, graph):
        self._build(graph)

    def peakmem_graph(self, X, graph):
        self._build(graph)
