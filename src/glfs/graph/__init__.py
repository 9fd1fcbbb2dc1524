"""Sample-similarity graphs (:mod:`glfs.graph.similarity`) and the nearest-neighbour search
behind them (:mod:`glfs.graph.neighbors`).  X is (n_samples, n_features); every graph is a
sparse CSR (n_samples, n_samples) matrix.  The public names of ``similarity`` are re-exported
here, so ``glfs.graph.similarity_graph`` keeps working.
"""

from glfs.graph.similarity import (
    APPROX_N_PCS,
    AUTO_APPROX_MIN_SAMPLES,
    AUTO_INDEX_MIN_SAMPLES,
    AUTO_NNDESCENT_MIN_SAMPLES,
    DEFAULT_GRAPH_PARAMS,
    KERNELS,
    approx_backend,
    choose_neighbor_method,
    label_graph,
    laplacian,
    nearest_neighbors,
    similarity_graph,
)

__all__ = [
    "similarity_graph",
    "nearest_neighbors",
    "choose_neighbor_method",
    "label_graph",
    "laplacian",
    "KERNELS",
    "AUTO_APPROX_MIN_SAMPLES",
    "APPROX_N_PCS",
    "AUTO_INDEX_MIN_SAMPLES",
    "AUTO_NNDESCENT_MIN_SAMPLES",
    "approx_backend",
    "DEFAULT_GRAPH_PARAMS",
]
