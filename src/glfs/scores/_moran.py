"""Graph autocorrelation of every gene, standardised by its exact permutation null.

X is (n_samples, n_features) = (cells, genes), dense or sparse; W is a sparse
(n_samples, n_samples) similarity graph.  For each gene f (a column of X),
Moran's I on the graph (Moran 1950; Cliff & Ord 1981, Spatial Processes, Eq. 1.32):

    I = (n / S0) z'Wz / z'z,   z = f - mean(f),   S0 = sum_ij W_ij  (diagonal left out),

and its z-score under the randomisation null, in which the gene's values are
randomly permuted over the cells (no structure, same values):

    E[I]   = -1 / (n - 1)
    E[I^2] = { n [(n^2 - 3n + 3) S1 - n S2 + 3 S0^2] - b2 [(n^2 - n) S1 - 2n S2 + 6 S0^2] }
             / ((n - 1)(n - 2)(n - 3) S0^2)
    z      = (I - E[I]) / sqrt(E[I^2] - E[I]^2)

with S1 = 1/2 sum_ij (W_ij + W_ji)^2, S2 = sum_i (W_i. + W_.i)^2 and b2 = n sum z^4 /
(sum z^2)^2 the gene's kurtosis (Cliff & Ord 1981, Eqs. 1.37-1.38).  The
kurtosis term is what makes the z-score fair across genes: a gene with a few
counts in a few cells (large b2) has a wide null and a small z even when those
cells are neighbours, while the Laplacian score (He et al. 2005), like I
itself, is scale-free and ranks it high.  tests/scores/test_moran.py checks the two
moments against brute-force permutations.

Cost: one sparse product W X per column block, O(nnz(W) d) for dense X and
O(nnz(W) nnz(X)/n) for sparse X, plus O(nnz(X)) power sums; nothing n x n is
dense; the temporaries are one column block.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from glfs.core._cluster import as_current
from glfs.core._out_of_core import OutOfCore
from glfs.core._result import Selection, make_selection, ranking_from_scores
from glfs.core._validation import ConstantFeatureWarning, check_graph, check_int, check_X, warn_constant
from glfs.graph._neighbors import _pca_in_memory
from glfs.graph._similarity import similarity_graph
from glfs.scores._batches import (
    between_batch_share,
    combine_batch_ranks,
    graph_min_cells,
    local_batch_share,
    plan_batches,
    scored_codes,
    select_by_batch,
    within_batches,
)
from glfs.scores._genewise import (
    DENSE_SHARE,
    _dense_parts,
    centred_sums,
    gene_block_results,
    graph_term,
    sparse_stats,
)

log = logging.getLogger(__name__)

__all__ = ["GraphAutocorrelation", "graph_autocorrelation", "pearson_residual_autocorrelation"]

#: Values per column block (float64): 2**23 = 64 MB temporaries, as the Laplacian score.
BLOCK_VALUES = 2**23


@dataclass(frozen=True)
class GraphAutocorrelation:
    """Per-gene Moran's I on a graph and its z-score under the randomisation null (higher = more structure).

    ``moran_i``, ``z`` and ``kurtosis`` have shape (n_features,); constant genes are NaN.
    ``expected`` is E[I] = -1/(n-1) (the same for every gene).
    """

    moran_i: np.ndarray
    z: np.ndarray
    kurtosis: np.ndarray
    expected: float


def _graph_sums(W):
    """(W without its diagonal, S0, S1, S2) of Cliff & Ord."""
    W = W.tocsr(copy=True)
    W.setdiag(0)
    W.eliminate_zeros()
    S0 = float(W.sum())
    Ws = W + W.T
    S1 = 0.5 * float(Ws.multiply(Ws).sum())
    S2 = float(np.sum((np.asarray(W.sum(axis=1)).ravel() + np.asarray(W.sum(axis=0)).ravel()) ** 2))
    return W, S0, S1, S2


def _dense_block(X, cols, W):
    """(z'Wz, sum z^2, sum z^4) of a block of dense columns, centred exactly."""
    Z = np.array(X[:, cols], dtype=np.float64)
    Z -= Z.mean(axis=0)
    z2 = Z * Z
    return np.einsum("ij,ij->j", Z, W @ Z), z2.sum(axis=0), (z2 * z2).sum(axis=0)


def _moran_local(B, *, w_row, block_size):
    """Everything of a block's (z'Wz, sum z^2, sum z^4, constant) but the graph term (a task on a cluster):
    ``(partial, plan)``, ``plan`` saying how :func:`glfs.scores._genewise.graph_term` forms each gene's values.

    Sparse B: the kernels of the Laplacian score (glfs.scores._genewise: ``centred_sums``, ``cross_sums``): each
    gene scaled by its largest |value| (the statistics are scale-free), the centred moments summed over the
    non-zeros with the zeros added in closed form (no cancellation), z'Wz = x'Wx - 2 m (W1)'x + m^2 1'W1 with
    x'Wx = 2 x'Ux from the pairs of non-zeros joined by an edge.  Genes stored in more than DENSE_SHARE (90 %)
    of the cells (where that difference could cancel), and every gene of a dense B, are centred on their dense
    columns: z'Wz = 2 z'Uz (W has no diagonal).
    """
    n, b = B.shape
    if not sp.issparse(B):
        Z, m2, m4, mean = _centred_moments(B)
        plan = {"inv": None, "dense": np.arange(b), "top": np.ones(b), "mean": mean, "block_size": b}
        zero = np.zeros(b)
        return (zero, zero, 0.0, m2, m4, np.ptp(B, axis=0) == 0, np.arange(b)), plan
    scale, const, stored = sparse_stats(B)
    inv = 1.0 / scale
    ones = np.broadcast_to(1.0, (n,))  # a zero-stride view, not n ones (80 MB a task at 10^7 cells)
    m = centred_sums(B, inv, ones, np.zeros(b))[0, 1] / n
    c = centred_sums(B, inv, ones, m, fourth=True)[0]
    zeros = n - c[0]
    m2, m4 = c[2] + zeros * m**2, c[4] + zeros * m**4
    xw = centred_sums(B, inv, w_row, np.zeros(b))[0, 1]  # (W 1)' x = sum_i x_i sum_k W_ik
    dense = np.flatnonzero(stored > DENSE_SHARE * n)
    means = []
    for idx, A in _dense_parts(B, dense, block_size):
        _, m2[idx], m4[idx], mu = _centred_moments(A, copy=False)
        means.append(mu)
    mean = np.concatenate(means) if means else np.zeros(0)
    plan = {"inv": inv, "dense": dense, "top": np.ones(dense.size), "mean": mean, "block_size": block_size}
    return (m, xw, float(w_row.sum()), m2, m4, const, dense), plan


def _moran_finish(partial, t):
    """(z'Wz, sum z^2, sum z^4, constant) from :func:`_moran_local`'s ``partial`` and the graph term ``t``
    (``graph_term``, summed over the graph's row shards)."""
    m, xw, w_tot, m2, m4, const, dense = partial
    zwz = 2.0 * t - 2.0 * m * xw + m * m * w_tot
    zwz[dense] = 2.0 * t[dense]
    return zwz, m2, m4, const


def _centred_moments(A, *, copy=True):
    """(the dense columns A centred, sum z^2, sum z^4, the columns' means): a float64 copy of A, or A itself (a new
    float64 array of the caller's) centred in place when not ``copy``; one temporary of A's size (z^2, squared in
    place for z^4)."""
    Z = np.array(A, dtype=np.float64) if copy else A
    mean = Z.mean(axis=0)
    Z -= mean
    z2 = Z * Z
    m2 = z2.sum(axis=0)
    np.square(z2, out=z2)
    return Z, m2, z2.sum(axis=0), mean


def _finish(zwz, m2, m4, const, n, S0, S1, S2, method):
    """Moran's I, z and kurtosis from the per-gene sums (NaN for constant genes)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        moran_i = (n / S0) * zwz / m2
        b2 = n * m4 / (m2 * m2)
    expected = -1.0 / (n - 1)
    second = (
        n * ((n * n - 3 * n + 3) * S1 - n * S2 + 3 * S0 * S0) - b2 * ((n * n - n) * S1 - 2 * n * S2 + 6 * S0 * S0)
    ) / ((n - 1) * (n - 2) * (n - 3) * S0 * S0)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (moran_i - expected) / np.sqrt(second - expected**2)
    for a in (moran_i, z, b2):
        a[const] = np.nan
    warn_constant(const, method)
    return GraphAutocorrelation(moran_i=moran_i, z=z, kurtosis=b2, expected=expected)


def pearson_residual_autocorrelation(
    counts, W, *, theta: float = 100.0, clip: float | None = None, block_size: int | None = None
) -> GraphAutocorrelation:
    """:func:`graph_autocorrelation` of the analytic Pearson residuals of raw counts (Lause et al. 2021).

    r_ij = clip((y_ij - mu_ij) / sqrt(mu_ij + mu_ij^2 / theta), -clip, clip), mu_ij = n_i p_j with
    n_i the cell's total and p_j the gene's share of all counts (scanpy's
    ``experimental.pp.normalize_pearson_residuals``; theta 100, clip sqrt(n) by default).  The
    residuals are formed one gene block at a time from the sparse counts, so the memory beyond
    the counts is O(n block_size), where scanpy forms the dense n x d residual matrix.

    counts : array-like or sparse (n_samples, n_features), raw counts; W as :func:`graph_autocorrelation`.
    Cost O(n d) time (the residuals are dense) plus O(nnz(W) d).
    """
    C = check_X(counts, name="counts", read_only=True)  # float32 counts stay float32: no float64 copy
    n, d = C.shape
    if n < 4:
        msg = f"counts must have at least 4 samples for the permutation moments of Moran's I; got {n}"
        raise ValueError(msg)
    if not theta > 0:
        msg = f"theta must be > 0; got {theta!r}"
        raise ValueError(msg)
    clip = float(np.sqrt(n)) if clip is None else float(clip)
    W = check_graph(W, n, name="W")
    block_size = max(1, BLOCK_VALUES // n) if block_size is None else check_int(block_size, "block_size", 1)
    W, S0, S1, S2 = _graph_sums(W)
    Cc = C.tocsc() if sp.issparse(C) else np.asarray(C)
    cell = np.asarray(C.sum(axis=1, dtype=np.float64)).ravel()  # float64 sums of float32 counts: exact totals
    gene = np.asarray(C.sum(axis=0, dtype=np.float64)).ravel()
    total = float(gene.sum())
    if total <= 0:
        msg = "counts must hold at least one count; got an all-zero matrix"
        raise ValueError(msg)
    zwz, m2, m4 = np.empty(d), np.empty(d), np.empty(d)
    for j0 in range(0, d, block_size):
        cols = slice(j0, min(d, j0 + block_size))
        Y = Cc[:, cols].toarray() if sp.issparse(Cc) else np.asarray(Cc[:, cols], dtype=np.float64)
        mu = np.outer(cell, gene[cols] / total)
        with np.errstate(invalid="ignore", divide="ignore"):
            R = np.clip((Y - mu) / np.sqrt(mu + mu * mu / theta), -clip, clip)
        R[:, gene[cols] == 0] = 0.0  # genes without a count: constant
        zwz[cols], m2[cols], m4[cols] = _dense_block(R, slice(None), W)
    return _finish(zwz, m2, m4, gene == 0, n, S0, S1, S2, "pearson_residual_autocorrelation")


def graph_autocorrelation(X, W, *, block_size: int | None = None, client=None) -> GraphAutocorrelation:
    """Moran's I of every gene on the graph W and its z-score under random permutation of the cells.

    Parameters
    ----------
    X : array-like, sparse or out-of-core of shape (n_samples, n_features)
        Cells in rows, genes in columns, e.g. log-normalised expression.
        Sparse input (CSR or CSC, float32 or float64) is read as it is, no
        dense or float64 copy; an AnnData backed sparse matrix or a dask
        array is streamed in gene blocks (as :func:`glfs.laplacian_score`).
    W : sparse of shape (n_samples, n_samples)
        Symmetric non-negative graph (scanpy's ``connectivities``, or
        :func:`glfs.similarity_graph`); its diagonal is ignored.  At least 4 samples.
    block_size : int, optional
        Genes per column block; default 2**23 / n_samples.  Only speed and memory depend on it.
    client : dask.distributed.Client, optional
        For a dask X: score it in gene blocks as dask tasks on this cluster (default: the
        client in use, if any), as :func:`glfs.laplacian_score`.

    Returns
    -------
    GraphAutocorrelation
        ``moran_i`` and ``z`` (higher = the gene follows the graph more than
        its permuted values would), ``kurtosis`` b2, ``expected`` = E[I].
        Constant genes: NaN and one :class:`~glfs.ConstantFeatureWarning`.

    Notes
    -----
    Moments of the randomisation null from Cliff & Ord (1981), Eqs. 1.37-1.38
    (module docstring).  For large n the null of I is close to normal, so z
    is on the usual scale; it is used here to rank genes, not as a p-value
    (neighbouring cells are not independent).
    """
    with as_current(client):
        X = check_X(X, read_only=True, lazy=True)
        n, d = X.shape
        if n < 4:
            msg = f"X must have at least 4 samples for the permutation moments of Moran's I; got {n}"
            raise ValueError(msg)
        W = check_graph(W, n, name="W")
        block_size = max(1, BLOCK_VALUES // n) if block_size is None else check_int(block_size, "block_size", 1)
        W, S0, S1, S2 = _graph_sums(W)
        if S0 <= 0:
            msg = "W must have at least one edge between different samples; got an empty graph"
            raise ValueError(msg)
        w_row = np.asarray(W.sum(axis=1)).ravel()
        shared = {"U": sp.triu(W, k=1, format="csr"), "w_row": w_row, "block_size": block_size}
        # all of a CSR X at once; gene blocks of a CSC, backed or dask X (as dask tasks on a cluster)
        zwz, m2, m4, const = gene_block_results(
            X,
            _moran_block,
            shared,
            block_size=block_size,
            what="graph_autocorrelation",
            split=(_moran_local, _moran_finish),
        )
    return _finish(zwz, m2, m4, const, n, S0, S1, S2, "graph_autocorrelation")


def _moran_block(B, *, U, w_row, block_size):
    """(z'Wz, sum z^2, sum z^4, constant) of the genes of one block B (n, b), dense or sparse, on the whole graph
    (U: its strict upper triangle)."""
    partial, plan = _moran_local(B, w_row=w_row, block_size=block_size)
    return _moran_finish(partial, graph_term(B, U, plan))


# ---- the graph-based single-cell selection (docs/methods/graph-moran.md, "The graph-based single-cell selection") ----

#: Defaults of the cell graph the method builds when none is given: scanpy's (15 neighbours on 50
#: principal components, connectivity weights 1) and the size of a usual first selection.
CELL_GRAPH_NEIGHBORS = 15
CELL_GRAPH_PCS = 50
GRAPH_GENES = 2000


def cell_graph(
    X, genes=None, *, n_neighbors: int = CELL_GRAPH_NEIGHBORS, n_pcs: int = CELL_GRAPH_PCS, random_state=0, batches=None
):
    """Binary symmetric kNN graph of the cells on the principal components of ``X[:, genes]``.

    X : (n_samples, n_features) log-normalised expression, dense or sparse.  The search is
    :func:`glfs.similarity_graph`'s (exact below 30,000 cells, faiss' IVF index above when
    installed), on min(n_pcs, n_genes - 1) components; W_ij = 1 when i is among the
    ``n_neighbors`` nearest of j or j of i (scanpy's graph with unit weights).  ``genes`` are
    taken in gene order (the components do not depend on the order).  ``batches``: the
    neighbours are searched within each batch, on the components of all cells
    (:func:`glfs.similarity_graph`'s ``batches``).
    """
    Xg = X if genes is None else X[:, np.sort(np.asarray(genes))]
    n, g = Xg.shape
    pcs = min(int(n_pcs), g - 1, n - 1)
    return similarity_graph(
        Xg,
        n_neighbors=min(int(n_neighbors), n - 1),
        kernel="binary",
        n_pcs=pcs if pcs >= 2 else None,
        method="auto",
        random_state=random_state,
        batches=batches,
    )


GRAPH_FROM = ("self", "all_genes")


def select_graph_moran(
    X,
    W=None,
    *,
    n_features,
    labels=None,
    random_state=0,
    counts=None,
    graph_from: str = "self",
    graph_genes: int = GRAPH_GENES,
    n_neighbors: int = CELL_GRAPH_NEIGHBORS,
    n_pcs: int = CELL_GRAPH_PCS,
    residuals: bool = False,
    batches=None,
    batch_rule: str | None = None,
) -> Selection:
    """Graph-based single-cell selection: Moran's I of every gene on a kNN graph of the cells.

    X : (n_samples, n_features) log-normalised expression (cells x genes), dense or sparse.
    W : the cell graph to use (e.g. scanpy's ``obsp["connectivities"]``); when None the method
        builds its own: ``graph_from="self"`` (default) builds a 15-NN graph on the 50 principal
        components of all genes, scores every gene on it, and builds the final graph on the
        principal components of its own top ``graph_genes`` genes (select -> graph -> select once;
        with at most ``graph_genes`` genes the first graph is the final one);
        ``graph_from="all_genes"`` stops after the first graph.
    residuals : score the Pearson residuals of ``counts`` (theta 100) instead of X
        (:func:`pearson_residual_autocorrelation`; needs ``counts``).
    batches : one batch label per cell (scanpy's ``batch_key``).  With W None: each graph is
        one PCA of all cells and the kNN search within each batch (:func:`cell_graph`); every
        gene is scored within each batch on its part of the graph and the batches are combined
        by ``batch_rule`` (docs/methods/batch-aware.md, "Batch-aware selection"); the refined graph is built on
        the combined top ``graph_genes``.  With W given: every gene is scored within each batch on
        W's block of the batch (edges across batches unused), combined by the same ``batch_rule``.
        ``glfs.select(..., batches=)`` calls this.
    batch_rule : {"minus_global_local_share", "minus_batch_share", "nbatches", "median_rank"}, optional
        With ``batches`` only; default :data:`BATCH_RULE` (``"minus_global_local_share"``): the genes
        ranked by their mean within-batch Moran's I less their between-batch share of variance over all
        cells (:func:`glfs.scores._batches.between_batch_share`) and less their between-batch share among
        similar cells (:func:`glfs.scores._batches.local_batch_share`, on the principal components of all
        genes, the graph's neighbours spread over the batches), which keeps out genes whose batch shift,
        over all cells or within a cell state, outweighs their structure within the batches.
        ``"minus_batch_share"``: the first share only.
        ``"nbatches"`` / ``"median_rank"``: the rank rules of
        :func:`glfs.scores._batches.combine_batch_ranks` (Seurat's / scanpy's seurat_v3).
    Scores: Moran's I (higher = more structure); ``extra`` holds the z-scores of the
    randomisation null.  docs/methods/graph-moran.md, "The graph-based single-cell selection", gives the
    simulation evidence for each choice.  Cost: two PCA + kNN graphs and two sparse products
    W X (own graph), or one product (given graph); with ``batches`` and the default rule, plus the local
    share's batch-balanced search (:func:`glfs.scores._batches.batch_neighbourhoods`: exact below 30,000 cells,
    faiss' IVF index of each batch above) and its sparse products.
    """
    if graph_from not in GRAPH_FROM:
        msg = f"graph_from must be one of {GRAPH_FROM}; got {graph_from!r}"
        raise ValueError(msg)
    graph_genes = check_int(graph_genes, "graph_genes", 2)
    if residuals and counts is None:
        msg = "residuals=True scores the Pearson residuals of raw counts: pass counts=... (glfs.tl.select reads them from adata.layers[counts_layer])"
        raise ValueError(msg)
    n, d = X.shape
    if batch_rule is not None and batches is None:
        msg = f"batch_rule={batch_rule!r} combines batches: pass batches=... (glfs.tl.select: batch_key=...)"
        raise ValueError(msg)
    if batches is not None:
        rule = BATCH_RULE if batch_rule is None else batch_rule
        return _graph_moran_batches(
            X,
            counts,
            batches,
            given=W,
            n_features=n_features,
            rule=rule,
            graph_from=graph_from,
            graph_genes=graph_genes,
            n_neighbors=n_neighbors,
            n_pcs=n_pcs,
            residuals=residuals,
            random_state=random_state,
        )

    def score(Wg):
        if residuals:
            return pearson_residual_autocorrelation(counts, Wg)
        return graph_autocorrelation(X, Wg)

    built = "given"
    if W is None:
        log.info("graph_moran: building the cell graph (%d-NN on %d PCs of all %d genes)", n_neighbors, n_pcs, d)
        W = cell_graph(X, None, n_neighbors=n_neighbors, n_pcs=n_pcs, random_state=random_state)
        built = "all_genes"
        if graph_from == "self" and d > graph_genes:
            with warnings.catch_warnings():  # the constant genes are reported once, by the final pass
                warnings.simplefilter("ignore", ConstantFeatureWarning)
                first = score(W).moran_i
            top = ranking_from_scores(first, higher_is_better=True)[:graph_genes]  # constant genes (NaN) last
            log.info("graph_moran: refining the graph on the top %d genes of the first pass", graph_genes)
            W = cell_graph(X, top, n_neighbors=n_neighbors, n_pcs=n_pcs, random_state=random_state)
            built = "self"
    res = score(W)
    params = _graph_params(built, residuals, n_neighbors, n_pcs, graph_genes)
    return make_selection(
        "graph_moran",
        res.moran_i,
        higher_is_better=True,
        n_features=n_features,
        params=params,
        extra={"z": res.z, "graph": W},
    )


def _graph_params(built, residuals, n_neighbors, n_pcs, graph_genes) -> dict:
    """``params`` of graph_moran: which graph, and the settings of a graph it built (a given graph's are not its own)."""
    params = {"graph_built": built, "residuals": bool(residuals)}
    if built != "given":
        params.update(n_neighbors=int(n_neighbors), n_pcs=int(n_pcs))
    if built == "self":
        params["graph_genes"] = int(graph_genes)
    return params


# fmt: off
def _graph_moran_batches(X, counts, batches, *, n_features, rule, graph_from, graph_genes, n_neighbors, n_pcs,
                         residuals, random_state, given=None) -> Selection:
    """graph_moran within batches on graphs of a shared embedding (:func:`select_graph_moran`, ``batches``).

    The batches too small for the graph are left out first (:func:`glfs.scores._batches.graph_min_cells`),
    so their cells take no part in the PCA either; with one batch the result is the plain one exactly.
    ``given``: a graph over all cells (scanpy's ``obsp["connectivities"]``) used instead of building one: each
    batch is scored on its block (its edges across batches unused; a cell without an edge inside its batch is
    left out of that batch's score, logged), and the batches are combined by the same ``rule`` (the shares are
    computed from X, not from the graph).
    """
    if rule not in MORAN_BATCH_RULES:
        msg = f"batch_rule must be one of {MORAN_BATCH_RULES}; got {rule!r}"
        raise ValueError(msg)
    min_cells, why = graph_min_cells(n_neighbors)
    plan = plan_batches(batches, X.shape[0], method="graph_moran", min_cells=min_cells, why_min=why)
    d = X.shape[1]
    share = glob = local = pcs = None
    if rule in SHARE_RULES:
        codes = scored_codes(plan)
        share = glob = _between_share(X, codes)
        if rule == "minus_global_local_share" and len(plan.scored) > 1:
            if isinstance(X, OutOfCore):
                msg = (
                    "graph_moran with batches: batch_rule='minus_global_local_share' needs X in memory (its local "
                    "share is computed on a PCA of X); X is out of core. Load X into memory, or pass "
                    "batch_rule='minus_batch_share' (the between-batch share alone, computed in gene blocks)"
                )
                raise ValueError(msg)
            local, pcs = _local_share(X, codes, len(plan.scored), n_neighbors, n_pcs, random_state)
            share = np.nan_to_num(glob, nan=0.0) + np.nan_to_num(local, nan=0.0)

    def graph(genes):
        if genes is None and pcs is not None:  # the first graph on the components already computed (the same graph)
            return within_batches(plan, lambda keep, codes: similarity_graph(
                pcs, n_neighbors=min(int(n_neighbors), pcs.shape[0] - 1), kernel="binary", n_pcs=pcs.shape[1],
                method="auto", random_state=random_state, batches=codes))
        return within_batches(plan, lambda keep, codes: cell_graph(
            X if keep is None else X[keep], genes, n_neighbors=n_neighbors, n_pcs=n_pcs, random_state=random_state,
            batches=codes))

    def score(Wg, rows):
        Wb = Wg[rows][:, rows]
        if residuals:
            return pearson_residual_autocorrelation(counts[rows], Wb), Wb
        return graph_autocorrelation(X[rows], Wb), Wb

    if given is not None:
        W, built = sp.csr_matrix(given), "given"
        if W.shape != (X.shape[0], X.shape[0]):
            msg = f"W must be a graph over the {X.shape[0]} cells, shape ({X.shape[0]}, {X.shape[0]}); got {W.shape}"
            raise ValueError(msg)
        log.info("graph_moran: the given graph cut to each of %d batches", len(plan.scored))
    else:
        log.info("graph_moran: building the cell graph within %d batches (%d-NN on %d PCs of all %d cells and genes)",
                 len(plan.scored), n_neighbors, n_pcs, d)
        W, built = graph(None), "all_genes"
    if given is None and graph_from == "self" and d > graph_genes:
        with warnings.catch_warnings():  # the constant genes are reported once, by the final pass
            warnings.simplefilter("ignore", ConstantFeatureWarning)
            first = [score(W, rows)[0].moran_i for _, rows in plan.scored]
        if share is not None:
            top = _minus_share(np.stack(first), share)[1][:graph_genes]
        else:
            rankings = [ranking_from_scores(f, higher_is_better=True) for f in first]
            tops = [np.isin(np.arange(d), r[:graph_genes]) & ~np.isnan(f) for r, f in zip(rankings, first)]
            top = combine_batch_ranks(rankings, tops, rule=rule).ranking[:graph_genes]
        log.info("graph_moran: refining the graph on the top %d genes of the first pass, combined over the batches",
                 graph_genes)
        W, built = graph(top), "self"

    def one(rows):
        if given is not None:
            linked = np.asarray((W[rows][:, rows] != 0).sum(axis=1)).ravel() > 0
            if not linked.all():
                log.warning("graph_moran: %d cells of the batch have no edge inside it in the given graph; left out of "
                            "its score", int(np.sum(~linked)))
                rows = rows[linked]
        res, Wb = score(W, rows)
        sel = make_selection("graph_moran", res.moran_i, higher_is_better=True, n_features=n_features,
                             params=_graph_params(built, residuals, n_neighbors, n_pcs, graph_genes), extra={"z": res.z})
        return sel, Wb, rows

    sel = select_by_batch(one, batches, plan=plan, method="graph_moran", n_features=n_features, higher_is_better=True,
                          rule="nbatches" if share is not None else rule,
                          params={"graph": "given, cut to each batch"} if given is not None else
                          {"graph": "built within each batch", "batch_graph": "one PCA of all cells, kNN within each batch"})
    if share is None:
        return sel
    scores, ranking = _minus_share(sel.extra["batch_scores"], share)
    return make_selection("graph_moran", scores, higher_is_better=True, n_features=n_features, ranking=ranking,
                          params={**sel.params, "batch_rule": rule},
                          extra={**sel.extra, "between_batch_share": glob, "local_batch_share": local,
                                 "mean_moran_i": sel.scores})
# fmt: on


def _between_share(X, codes) -> np.ndarray:
    """:func:`glfs.scores._batches.between_batch_share` of X, an out-of-core X in gene blocks (a per-gene
    quantity, so the blocks give exactly the in-memory result)."""
    if not isinstance(X, OutOfCore):
        return between_batch_share(X, codes)
    out = np.empty(X.shape[1], dtype=np.float64)
    for sl, blk in X.column_blocks():
        out[sl] = between_batch_share(blk, codes)
    return out


def _local_share(X, codes, n_batches, n_neighbors, n_pcs, random_state):
    """(:func:`glfs.scores._batches.local_batch_share`, the components) on the principal components of all genes of
    the scored cells, those :func:`cell_graph`'s first graph searches (the same call: the graph is built on them,
    no second PCA; None when it searches the genes themselves), the graph's neighbours spread over the batches
    (at least 2 each)."""
    keep = codes >= 0
    Xk = X if keep.all() else X[keep]
    n, g = Xk.shape
    n_comp = min(int(n_pcs), g - 1, n - 1)
    Z = _pca_in_memory(Xk, n_comp, random_state) if n_comp >= 2 else None
    full = np.zeros((X.shape[0], n_comp if Z is not None else g), dtype=np.float64)
    full[keep] = Z if Z is not None else (Xk.toarray() if sp.issparse(Xk) else np.asarray(Xk))
    per_batch = max(2, -(-int(n_neighbors) // n_batches))
    log.info(
        "graph_moran: local between-batch share on %d dimensions, %d nearest cells per batch", full.shape[1], per_batch
    )
    return local_batch_share(X, codes, full, per_batch, random_state=random_state), Z


#: graph_moran's ways of combining the batches: the rank rules of glfs.scores._batches, "minus_batch_share"
#: (the mean within-batch Moran's I less the gene's between-batch share of variance) and "minus_global_local_share"
#: (less the local between-batch share too; docs/methods/graph-moran.md).
MORAN_BATCH_RULES = ("nbatches", "median_rank", "minus_batch_share", "minus_global_local_share")

#: The rules that take a between-batch share of variance off the mean within-batch Moran's I.
SHARE_RULES = ("minus_batch_share", "minus_global_local_share")

#: graph_moran's default way of combining the batches (docs/methods/batch-aware.md, "Batch-aware selection", "Mixing the
#: donors": chosen on the Kang donors' mixing, agreeing with the simulated batches).
BATCH_RULE = "minus_global_local_share"


def _minus_share(per_batch, share):
    """(score, ranking): the mean over the batches of Moran's I (NaN skipped) less the between-batch share of variance."""
    with warnings.catch_warnings():  # a gene constant in every batch stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        score = np.nanmean(per_batch, axis=0) - np.nan_to_num(share, nan=0.0)
    return score, ranking_from_scores(score, higher_is_better=True)
