"""Sample-similarity graphs (:mod:`glfs.graph.similarity`) and the nearest-neighbour search
behind them (:mod:`glfs.graph.neighbors`).  X is (n_samples, n_features); every graph is a
sparse CSR (n_samples, n_samples) matrix.  The public names of ``similarity`` (its ``__all__``) are
re-exported here, so ``glfs.graph.similarity_graph`` keeps working.
"""

from glfs.graph import similarity
from glfs.graph.similarity import *  # noqa: F403  (the names of similarity.__all__, listed there once)

__all__ = list(similarity.__all__)
