"""The spectral embedding of the spectral-clustering protocol and its eigensolvers.

scikit-learn's ``spectral_embedding`` / ``SpectralClustering`` on a precomputed
sparse affinity, with the eigensolver chosen by size (:func:`resolve_eigen_solver`),
LOBPCG's missed tolerance reported, and a dense symmetric eigensolver where ARPACK
cannot be trusted: a disconnected graph whose repeated zero eigenvalue the
embedding keeps whole (:func:`needs_exact_embedding`).  Used by
:mod:`glfs.evaluate._clustering`; docs/methods/evaluation.md, "Evaluation protocols".
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.linalg import eigh
from scipy.sparse.csgraph import connected_components, laplacian
from sklearn.cluster import SpectralClustering, k_means
from sklearn.exceptions import ConvergenceWarning
from sklearn.manifold import spectral_embedding

log = logging.getLogger(__name__)

# Spectral embedding solver of eigen_solver="auto": ARPACK (scikit-learn's default,
# shift-invert) below this many samples, LOBPCG from it.  Shift-invert factorises the
# n x n Laplacian, and on kNN graphs the sparse LU fills in towards dense: measured
# 0.3 s at 1,000 samples, 3-10 s at 3,000 and 27-288 s at 10,000 (2 cores), where
# LOBPCG to EIGEN_TOL takes 0.6-4.2 s and gives the same subspace to 1e-5 degrees
# (studies/spectral-solvers.md; docs/methods/evaluation.md, "Evaluation protocols").  The same bound as GLFS's dense forms.
ARPACK_MAX_SAMPLES = 2000
EIGEN_TOL = 1e-8
EIGEN_SOLVERS = ("auto", "arpack", "lobpcg")


def resolve_eigen_solver(eigen_solver: str, n_samples: int) -> str:
    """The spectral embedding's eigensolver: "arpack" or "lobpcg" ("auto": ARPACK below
    ``ARPACK_MAX_SAMPLES`` samples, LOBPCG from there; see the constant's comment)."""
    if eigen_solver not in EIGEN_SOLVERS:
        msg = f"eigen_solver must be one of {EIGEN_SOLVERS}; got {eigen_solver!r}"
        raise ValueError(msg)
    if eigen_solver == "auto":
        return "arpack" if n_samples < ARPACK_MAX_SAMPLES else "lobpcg"
    return eigen_solver


def _solver_kwargs(solver: str) -> dict:
    """Keyword arguments of scikit-learn's spectral embedding for a resolved solver."""
    return {"eigen_solver": solver, "eigen_tol": EIGEN_TOL if solver == "lobpcg" else "auto"}


class _EigenWarnings(warnings.catch_warnings):
    """Silence the disconnected-graph note; turn LOBPCG's missed tolerance into one ConvergenceWarning."""

    def __enter__(self):
        self._log = super().__enter__()
        warnings.simplefilter("always")
        return self._log

    def __exit__(self, *exc):
        super().__exit__(*exc)
        missed = []
        for w in self._log:
            text = str(w.message)
            if "Graph is not fully connected" in text:
                continue  # a kNN graph on very few genes may be disconnected; the embedding is still defined
            if "not reaching the requested tolerance" in text:
                missed.append(text)
                continue
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if missed:
            msg = f"spectral embedding: LOBPCG did not reach eigen_tol={EIGEN_TOL:g}: {missed[-1]}"
            log.warning(msg)
            warnings.warn(msg, ConvergenceWarning, stacklevel=2)
        return False


def needs_exact_embedding(affinity, n_clusters: int, solver: str, n_components: int | None = None) -> bool:
    """Whether ARPACK would be asked for a repeated zero eigenvalue that the embedding keeps whole.

    A graph of c connected components has the eigenvalue 0 of the normalised
    Laplacian c times.  ARPACK's Lanczos iteration grows a Krylov space from one
    start vector, which in exact arithmetic holds a single vector of each
    eigenspace; the others appear only through rounding, and older ARPACK builds
    (scipy 1.10 here) then return nearly collinear vectors (correlation -0.996
    measured on three separated blobs, spectral clustering ACC 0.78 instead of
    1).  For 2 <= c <= n_clusters the whole null space belongs in the embedding,
    so :func:`exact_embedding` solves it densely instead (n < ARPACK_MAX_SAMPLES
    under "auto"); LOBPCG is a block method and keeps its own path.
    """
    if solver != "arpack":
        return False
    if n_components is None:
        n_components = connected_components(affinity, directed=False)[0]
    return 1 < n_components <= n_clusters


def exact_embedding(affinity, n_clusters: int) -> np.ndarray:
    """scikit-learn's spectral embedding (drop_first=False) from a dense symmetric eigensolver.

    The same normalised Laplacian (unit diagonal, scikit-learn's ``_set_diag``),
    the same U = D^-1/2 V and the same sign rule (each column's largest-magnitude
    entry positive), with V from LAPACK's ``eigh`` (subset of the ``n_clusters``
    smallest eigenvalues), which resolves repeated eigenvalues.  Dense n x n,
    used only below ``ARPACK_MAX_SAMPLES`` samples (32 MB at 2,000).
    """
    L, dd = laplacian(sp.csr_matrix(affinity, dtype=np.float64), normed=True, return_diag=True)
    L = L.toarray()
    np.fill_diagonal(L, 1.0)
    V = eigh(L, subset_by_index=[0, int(n_clusters) - 1])[1]
    U = V / dd[:, None]
    signs = np.sign(U[np.argmax(np.abs(U), axis=0), np.arange(U.shape[1])])
    return U * np.where(signs == 0, 1.0, signs)


def _spectral_labels(affinity, n_clusters: int, random_state, n_init: int = 10, solver: str = "arpack") -> np.ndarray:
    """scikit-learn SpectralClustering on a precomputed affinity (embedding and k-means seeded alike)."""
    if needs_exact_embedding(affinity, n_clusters, solver):
        rng = np.random.RandomState(int(random_state))  # SpectralClustering's one stream: v0 first, then k-means
        rng.uniform(-1, 1, affinity.shape[0])
        return k_means(exact_embedding(affinity, n_clusters), int(n_clusters), random_state=rng, n_init=int(n_init))[
            1
        ].astype(np.int64)
    model = SpectralClustering(
        n_clusters=int(n_clusters),
        affinity="precomputed",
        assign_labels="kmeans",
        random_state=int(random_state),
        n_init=int(n_init),
        **_solver_kwargs(solver),
    )
    with _EigenWarnings(record=True):
        return model.fit_predict(affinity).astype(np.int64)


def shared_embedding(affinity, n_clusters: int, seed: int, solver: str, n_components: int | None = None) -> np.ndarray:
    """The (n_samples, n_clusters) spectral embedding, eigensolver start from ``seed`` (``n_components``:
    the affinity's connected components, when the caller has counted them)."""
    if needs_exact_embedding(affinity, n_clusters, solver, n_components):
        return exact_embedding(affinity, n_clusters)
    with _EigenWarnings(record=True):
        return spectral_embedding(
            affinity, n_components=int(n_clusters), random_state=int(seed), drop_first=False, **_solver_kwargs(solver)
        )
