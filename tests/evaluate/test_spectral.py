"""The spectral embedding's dense path for disconnected graphs (glfs.evaluate._spectral).

ARPACK grows one Krylov space from a single start vector, so on a graph of c
connected components (eigenvalue 0 of the normalised Laplacian repeated c times)
it can return nearly collinear vectors; scipy 1.10's did on three separated blobs.
The dense path must give the analytic null space: U = D^-1/2 V is constant on each
component, one distinct value per component.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from sklearn.cluster import SpectralClustering
from sklearn.manifold import spectral_embedding

from glfs.evaluate._clustering import clustering_accuracy, knn_affinity, spectral_cluster, spectral_cluster_runs
from glfs.evaluate._spectral import _spectral_labels, exact_embedding, needs_exact_embedding


def _blobs(n_per=20, n_blobs=3, sd=0.3, seed=0):
    rng = np.random.default_rng(seed)
    centres = [(10.0 * i, 10.0 * (i % 2)) for i in range(n_blobs)]
    X = np.vstack([rng.normal(c, sd, size=(n_per, 2)) for c in centres])
    return X, np.repeat(np.arange(n_blobs), n_per)


def _disconnected(n_blobs=3, seed=0):
    X, y = _blobs(n_blobs=n_blobs, seed=seed)
    A = knn_affinity(X, 5)
    assert connected_components(A, directed=False)[0] == n_blobs  # the premise: one component per blob
    return A, y


@pytest.mark.parametrize("seed", range(4))
def test_exact_embedding_is_the_analytic_null_space_of_a_disconnected_graph(seed):
    A, y = _disconnected(3, seed)
    U = exact_embedding(A, 3)
    assert U.shape == (A.shape[0], 3)
    for c in range(3):  # constant on each component
        np.testing.assert_allclose(U[y == c], np.broadcast_to(U[y == c][0], U[y == c].shape), atol=1e-10)
    reps = np.vstack([U[y == c][0] for c in range(3)])
    assert np.linalg.matrix_rank(reps, tol=1e-8) == 3  # distinct values: the components are separable


def test_exact_embedding_equals_scikit_learns_on_a_connected_graph():
    """Simple eigenvalues: the same normalisation and sign rule give the same columns."""
    X, _ = _blobs(n_per=40, sd=4.0, seed=5)
    A = knn_affinity(X, 10)
    assert connected_components(A, directed=False)[0] == 1
    ref = spectral_embedding(A, n_components=3, eigen_solver="arpack", random_state=0, drop_first=False)
    got = exact_embedding(A, 3)
    order = np.argsort([np.abs(col).sum() for col in got.T])  # column order may differ: match by column
    ref_order = np.argsort([np.abs(col).sum() for col in ref.T])
    np.testing.assert_allclose(got[:, order], ref[:, ref_order], rtol=1e-6, atol=1e-8)


def test_the_dense_path_is_taken_only_where_arpack_would_meet_a_repeated_zero_eigenvalue():
    A3, _ = _disconnected(3)
    assert needs_exact_embedding(A3, 3, "arpack")
    assert needs_exact_embedding(A3, 4, "arpack")
    assert not needs_exact_embedding(A3, 3, "lobpcg")  # a block method
    assert not needs_exact_embedding(A3, 2, "arpack")  # more components than clusters: the per-run form
    X, _ = _blobs(n_per=40, sd=4.0, seed=5)
    assert not needs_exact_embedding(knn_affinity(X, 10), 3, "arpack")  # connected


@pytest.mark.parametrize("seed", range(5))
def test_spectral_clustering_recovers_disconnected_blobs(seed):
    X, y = _blobs(n_blobs=4, seed=seed)
    assert clustering_accuracy(y, spectral_cluster(X, 4, n_neighbors=5, random_state=seed)) == 1.0
    runs = spectral_cluster_runs(knn_affinity(X, 5), 4, [seed, seed + 1])
    assert all(clustering_accuracy(y, lab) == 1.0 for lab in runs)


@pytest.mark.parametrize("seed", range(3))
def test_the_dense_path_gives_scikit_learns_labels_where_arpack_is_sound(seed):
    """Where ARPACK resolves the null space, the partition equals SpectralClustering's."""
    import scipy.linalg as sla

    A, y = _disconnected(3, seed)
    U = spectral_embedding(A, n_components=3, eigen_solver="arpack", random_state=seed, drop_first=False)
    indicators = np.eye(3)[y]
    if np.degrees(sla.subspace_angles(U, indicators).max()) > 1e-6:
        pytest.skip(
            "this scipy's ARPACK misses the null space of a disconnected graph (the case the dense path is for)"
        )
    ref = SpectralClustering(3, affinity="precomputed", random_state=seed, n_init=10).fit_predict(A)
    assert clustering_accuracy(ref, _spectral_labels(A, 3, seed)) == 1.0


def test_isolated_nodes_keep_scikit_learns_unit_diagonal():
    """A node with no edge: scikit-learn sets its Laplacian diagonal to 1; the embedding stays finite."""
    A, _ = _disconnected(3)
    A = sp.block_diag([A, sp.csr_matrix((1, 1))]).tocsr()
    U = exact_embedding(A, 4)
    assert np.isfinite(U).all()
