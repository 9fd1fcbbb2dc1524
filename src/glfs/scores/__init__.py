"""Gene-wise scores: one number per gene, genes ranked by it.

- :mod:`glfs.scores.genewise`: the Laplacian score, Fisher score, variance and the binomial
  deviance, dense, sparse (CSR/CSC) and out of core;
- :mod:`glfs.scores.moran`: Moran's I on a cell graph and the single-cell selection ``graph_moran``;
- :mod:`glfs.scores.hvg`: scanpy's highly-variable-gene flavours;
- :mod:`glfs.scores.lkr`: the LKR score; :mod:`glfs.scores.baselines`: sparse PCA and Q-alpha.

The public names of ``genewise`` are re-exported here (``glfs.scores.laplacian_score``).
"""

from glfs.scores.genewise import deviance_score, fisher_score, laplacian_score, variance_score

__all__ = ["laplacian_score", "fisher_score", "variance_score", "deviance_score"]
