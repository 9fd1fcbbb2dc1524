"""Sample-similarity graphs and the nearest-neighbour search behind them.

X is (n_samples, n_features); every graph is a sparse CSR (n_samples, n_samples) matrix.  The names below
are the public face (the ``__all__`` of the implementation module ``_similarity``, listed there once); the
search itself (``_neighbors``, ``_sharded``, ``_ivf_blocks``) is the library's own.
"""

from glfs.graph import _similarity
from glfs.graph._similarity import *  # noqa: F403  (the names of _similarity.__all__, listed there once)

__all__ = list(_similarity.__all__)
