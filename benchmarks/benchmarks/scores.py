"""The gene-wise scores on a given graph, each beside the peer it is compared with, in the same run.

- the Laplacian score (``glfs.laplacian_score``) on sparse and on dense X, against the naive dense
  formula (He et al. 2005, Eq. 1 with dense D and L) and scikit-feature's ``lap_score``;
- ``graph_moran`` (``glfs.select(..., "graph_moran", graph=W)``) against Moran's I with a dense W;
- the variance (``glfs.variance_score``) on sparse X against numpy's on a dense copy.

Data: ``common.dataset`` at the profile's ``cells`` x ``genes``; the graph is given (the library's
5-NN heat-kernel graph, built once in ``setup_cache``, as a user passes scanpy's connectivities).
The ``track_*`` benchmarks record how far each implementation's scores are from the naive formula's.
"""

from __future__ import annotations

import numpy as np

import glfs

from .common import (
    N_NEIGHBORS,
    SEED,
    SIZES,
    TIMEOUT,
    dataset,
    n_top,
    naive_laplacian_score,
    naive_moran_i,
    naive_variance,
    skip_dense_peer,
    warm_up,
)


def _skfeature_lap_score():
    """scikit-feature's Laplacian score (``skfeature-chappers``, the bench extra)."""
    from skfeature.function.similarity_based.lap_score import lap_score

    return lap_score


class _GivenGraph:
    """The data and the given graph, made once for every suite of this module (one shared setup_cache)."""

    timeout = TIMEOUT

    def setup_cache(self):
        _, X = dataset(SIZES["cells"], SIZES["genes"])
        W = glfs.similarity_graph(X, n_neighbors=N_NEIGHBORS, random_state=SEED)
        return {"X": X, "W": W}

    def _inputs(self, data, impl):
        self.X, self.W = data["X"], data["W"]
        self.k = n_top(self.X.shape[1])
        # the dense peers and glfs on dense X read the same values as float64
        self.Xd = None if impl.endswith("sparse") else self.X.toarray().astype(np.float64)
        if impl in ("naive_dense", "skfeature"):
            skip_dense_peer(self.X.shape[0])
        else:
            warm_up()


class LaplacianScore(_GivenGraph):
    """The Laplacian score of every gene on a given graph: glfs against the naive formula and scikit-feature."""

    params = ["glfs_sparse", "glfs_dense", "naive_dense", "skfeature"]
    param_names = ["impl"]

    def setup(self, data, impl):
        self._inputs(data, impl)
        self.lap_score = _skfeature_lap_score() if impl == "skfeature" else None

    def _scores(self, impl):
        if impl == "glfs_sparse":
            return glfs.laplacian_score(self.X, self.W)
        if impl == "glfs_dense":
            return glfs.laplacian_score(self.Xd, self.W)
        if impl == "naive_dense":
            return naive_laplacian_score(self.Xd, self.W)
        # scikit-feature returns ranks by default; its scores are f~'Lf~ / f~'Df~ as well
        return self.lap_score(self.Xd, W=self.W, mode="index")

    def time_laplacian_score(self, data, impl):
        self._scores(impl)

    def peakmem_laplacian_score(self, data, impl):
        self._scores(impl)

    def track_max_abs_diff_to_naive(self, data, impl):
        """Largest |score - naive score| over the genes (scikit-feature: of the ranks' top genes, 0 or 1)."""
        if impl == "skfeature":  # lap_score(mode="index") gives the genes best first: share of the top k that differ
            naive = np.argsort(naive_laplacian_score(self.Xd, self.W), kind="stable")[: self.k]
            got = np.asarray(self._scores(impl)).ravel()[: self.k]
            return float(1.0 - np.intersect1d(naive, got).size / self.k)
        Xd = self.Xd if self.Xd is not None else self.X.toarray().astype(np.float64)
        return float(np.nanmax(np.abs(self._scores(impl) - naive_laplacian_score(Xd, self.W))))

    track_max_abs_diff_to_naive.unit = "score"


class GraphMoran(_GivenGraph):
    """``graph_moran`` on a given graph (Moran's I and its permutation z-score) against Moran's I with a dense W."""

    params = ["glfs_sparse", "naive_dense"]
    param_names = ["impl"]

    def setup(self, data, impl):
        self._inputs(data, impl)

    def _run(self, impl):
        if impl == "glfs_sparse":
            return glfs.select(self.X, "graph_moran", graph=self.W, n_features_to_select=self.k).scores
        return naive_moran_i(self.Xd, self.W)

    def time_graph_moran(self, data, impl):
        self._run(impl)

    def peakmem_graph_moran(self, data, impl):
        self._run(impl)

    def track_max_abs_diff_to_naive(self, data, impl):
        """Largest |Moran's I - naive Moran's I| over the genes."""
        Xd = self.Xd if self.Xd is not None else self.X.toarray().astype(np.float64)
        return float(np.nanmax(np.abs(self._run(impl) - naive_moran_i(Xd, self.W))))

    track_max_abs_diff_to_naive.unit = "I"


class Variance(_GivenGraph):
    """The variance of every gene: glfs on sparse X against numpy on a dense copy."""

    params = ["glfs_sparse", "naive_dense"]
    param_names = ["impl"]

    def setup(self, data, impl):
        self._inputs(data, impl)

    def time_variance(self, data, impl):
        if impl == "glfs_sparse":
            glfs.variance_score(self.X)
        else:
            naive_variance(self.Xd)

    def peakmem_variance(self, data, impl):
        self.time_variance(data, impl)
