"""Gene-wise scores: one number per gene, genes ranked by it.

- the Laplacian score, Fisher score, variance and the binomial deviance, dense, sparse (CSR/CSC) and out of
  core (:func:`laplacian_score`, :func:`fisher_score`, :func:`variance_score`, :func:`deviance_score`);
- Moran's I on a cell graph, behind the single-cell selection ``graph_moran`` (:func:`graph_autocorrelation`);
- the LKR score (:func:`lkr_score`); sparse PCA and Q-alpha (:func:`spca_score`, :func:`q_alpha`).

scanpy's highly-variable-gene flavours and the batch-aware selection are reached through
:func:`glfs.select` and :func:`glfs.tl.select` by method name.  The implementation modules (``_genewise``,
``_moran``, ``_binned``, ``_hvg``, ``_lkr``, ``_baselines``, ``_batches``) are the library's own.
"""

from glfs.scores._baselines import q_alpha, spca_score
from glfs.scores._genewise import deviance_score, fisher_score, laplacian_score, sparse_stats, variance_score
from glfs.scores._lkr import lkr_score
from glfs.scores._moran import GraphAutocorrelation, graph_autocorrelation

__all__ = [
    "laplacian_score",
    "fisher_score",
    "variance_score",
    "deviance_score",
    "sparse_stats",
    "graph_autocorrelation",
    "GraphAutocorrelation",
    "lkr_score",
    "spca_score",
    "q_alpha",
]
