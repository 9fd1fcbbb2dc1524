"""Per-gene filter scores: Laplacian score, Fisher score, variance.

X has shape (n_samples, n_features).  Graphs are sparse (n_samples, n_samples).
All scores are computed for every gene at once: nothing n x n is densified.
Dense X: sparse products in column blocks, O(nnz(W) d + n d) time, O(n block)
memory beyond X.  Sparse X (CSR or CSC, float32 or float64): sums over the
non-zeros only, O(nnz(X) + nnz(W) nnz(X) / n) time and O(d) memory beyond X
(no dense copy, no float64 copy of X; see "Sparse X" below).  Out-of-core X
(an AnnData backed sparse matrix, a dask array; :class:`glfs.core._out_of_core.OutOfCore`):
the same sums in gene blocks streamed from the file, so the memory is one block.

Sparse X
--------
The centred quantities of the scores come from sums over the non-zeros, with
the zeros added in closed form, so no centred (dense) copy is formed and no
cancellation occurs: for a gene x with weighted mean m (weights w_i),

    sum_i w_i (x_i - m)^2 = sum_{x_i != 0} w_i (x_i - m)^2 + m^2 (sum_i w_i - sum_{x_i != 0} w_i),

a sum of non-negative terms (two passes over the non-zeros: the first for m).
The graph term uses L 1 = 0 (centring does not change it):
f~' L f~ = sum_i (D_ii - W_ii) x_i^2 - 2 sum_{i<j} W_ij x_i x_j, where only pairs of
non-zeros enter the second sum (:func:`cross_sums`).  This difference loses no
accuracy when the gene's non-zeros carry at most 90 % of the degree weight
(then f' D f <= 10 f~' D f~, by Cauchy-Schwarz); the few genes above that
share (:data:`DENSE_SHARE`) are centred and scored on their dense columns, as
for a dense X.  Each gene is divided by its largest absolute value on the fly
(the scores are scale-free).
The kernels are compiled with numba (installed with pynndescent, a dependency)
on first use and cached on disk.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from glfs.core import limits
from glfs.core._cluster import as_current, map_chunks, map_gene_blocks
from glfs.core._cluster_memory import worker_block_values
from glfs.core._graph_shards import graph_shards
from glfs.core._out_of_core import OutOfCore, cluster_client, gene_parts
from glfs.core._sparse_kernels import _kernel, dense_columns
from glfs.core._validation import check_graph, check_int, check_labels, check_X, warn_constant

log = logging.getLogger(__name__)

__all__ = ["laplacian_score", "fisher_score", "variance_score", "deviance_score", "deviance_by_batch"]


#: Laplacian score: float64 values per column block (``laplacian_score``'s default ``block_size`` is
#: this many values divided by n_samples): 2**23 values = 64 MB per temporary block.
LS_BLOCK_VALUES = 2**23

#: Row (CSR) partitions of the sparse kernels: each has its own accumulators, and the partition does
#: not depend on the number of threads, so the sums (and the scores) do not either.
N_PARTS = 8

#: :func:`deviance_by_batch`: float64 accumulators of one kernel launch (N_PARTS x 2 per batch and gene): at most
#: 2**23 values = 64 MB; more batches than fit are scored in several launches.
BATCH_PART_VALUES = 2**23


def _csr(B):
    """B as CSR, without a copy when it already is one (the kernels take a row's indices in any order)."""
    return B if B.format == "csr" else B.tocsr()


def _csr_or_csc(B):
    """B as it is when it is CSR or CSC (the kernels take both), else as CSR; a CSC's indices sorted
    (each gene's sum then runs in row order, as for CSR), a CSR's taken in any order within a row."""
    if B.format not in ("csr", "csc"):
        B = B.tocsr()
    return B if B.format == "csr" or B.has_sorted_indices else B.sorted_indices()


def sparse_stats(B):
    """(largest ``|value|``, constant mask, stored entries) of each column of a sparse (n, b) matrix, O(nnz).

    The largest ``|value|`` is 1 for all-zero columns (a divisor); a column is constant when its
    smallest and largest value (implicit zeros included) are equal.
    """
    B = _csr_or_csc(B)
    n, b = B.shape
    if B.format == "csc":
        cnt, lo, hi = _kernel("stats_csc")(B.indptr, B.data)
    else:
        cnt, lo, hi = _kernel("stats")(B.indices, B.data, b)
    has_zero = cnt < n
    lo = np.where(has_zero, np.minimum(lo, 0.0), lo)
    hi = np.where(has_zero, np.maximum(hi, 0.0), hi)
    scale = np.maximum(np.abs(lo), np.abs(hi))
    scale[~(scale > 0)] = 1.0
    return scale, lo == hi, cnt


def centred_sums(B, inv, w, m, codes=None, *, fourth=False):
    """Sums over the non-zeros of a sparse (n, b) matrix: out[k, p, g] = sum w_i (x_ig inv_g - m[k, g])^p.

    ``p`` = 0..2 (p = 0: the weight of the non-zeros), and 3, 4 with ``fourth`` (else 0),
    over the samples i of class ``k``
    (``codes`` (n,) int, default one class) where gene g is stored.  The zeros' share of a
    centred sum is added by the caller: (-m)^p (sum of the class's weights - out[k, 0, g]).
    O(nnz) time, O(K b) memory per row part (:data:`N_PARTS`).
    """
    B = _csr_or_csc(B)
    n, b = B.shape
    m = np.ascontiguousarray(
        np.broadcast_to(np.atleast_2d(m), (1 if codes is None else int(np.max(codes)) + 1, b)), dtype=np.float64
    )
    # one class: a zero-stride view, not n zeros (at 10^7 cells 80 MB a call)
    codes = np.broadcast_to(np.int64(0), (n,)) if codes is None else np.ascontiguousarray(codes, dtype=np.int64)
    if not (isinstance(w, np.ndarray) and w.dtype == np.float64 and w.ndim == 1):  # a zero-stride view stays one
        w = np.ascontiguousarray(w, dtype=np.float64)
    inv = np.ascontiguousarray(inv, dtype=np.float64)
    kernel = _kernel("sums_csc" if B.format == "csc" else "sums")
    return kernel(B.indptr, B.indices, B.data, inv, w, codes, m, N_PARTS, bool(fourth))


def cross_sums(B, U, inv, r0: int = 0):
    """sum_{(i, j) in U} U_ij x_i x_j for every column x of the sparse (n, b) matrix B (values times ``inv``).

    With U the strict upper triangle of a symmetric graph W, x' W x = 2 cross_sums(B, U) +
    sum_i W_ii x_i^2.  Only pairs of non-zeros contribute: O(nnz(U) nnz(B) / n) time, O(b)
    memory per row part.  Shared by the Laplacian score and Moran's I (``glfs.scores._moran``).
    U may be a row shard of the graph: its rows are the samples ``r0, r0 + 1, ...`` (all n columns), and
    the sums over the shards of a graph add up to the graph's.
    """
    B = _csr_or_csc(B)
    U = sp.csr_matrix(U)
    if U.shape[1] != B.shape[0] or not 0 <= r0 <= B.shape[0] - U.shape[0]:
        msg = f"U's rows {r0}..{r0 + U.shape[0]} and {U.shape[1]} columns do not fit a block of {B.shape[0]} samples"
        raise ValueError(msg)
    inv = np.ascontiguousarray(inv, dtype=np.float64)
    r0 = int(r0)
    if B.format == "csc":
        return _kernel("cross_csc")(
            B.indptr, B.indices, B.data, inv, U.indptr, U.indices, U.data, r0, B.shape[0], N_PARTS
        )
    return _kernel("cross")(B.indptr, B.indices, B.data, inv, U.indptr, U.indices, U.data, r0, N_PARTS)


def sparse_blocks(X, dense_genes: int):
    """(column slice, block) pairs over the genes of X (n_samples, n_features), each block in memory.

    In-memory CSR X: the whole of it (no copy).  In-memory CSC X: column slices of at most
    :data:`glfs.core.limits.STREAM_VALUES` non-zeros, kept CSC (the kernels read either).  Out-of-core X: the
    gene blocks of :meth:`~glfs.core._out_of_core.OutOfCore.column_blocks` (CSR, or dense arrays of a
    dense source).  Dense X: column slices of ``dense_genes`` genes.
    """
    n, d = X.shape
    if isinstance(X, OutOfCore):
        for cols, B in X.column_blocks(dense_genes=dense_genes):
            yield cols, (_csr_or_csc(B) if sp.issparse(B) else B)
    elif sp.issparse(X) and X.format == "csr":
        yield slice(0, d), X
    elif sp.issparse(X):
        X = X.tocsc()
        csum = np.diff(X.indptr).cumsum()
        j0 = 0
        while j0 < d:
            base = csum[j0 - 1] if j0 else 0
            j1 = min(d, max(j0 + 1, int(np.searchsorted(csum, base + limits.STREAM_VALUES, side="right"))))
            yield slice(j0, j1), X[:, j0:j1]
            j0 = j1
    else:
        for j0 in range(0, d, dense_genes):
            cols = slice(j0, min(d, j0 + dense_genes))
            yield cols, X[:, cols]


def gene_block_results(X, fn, shared, *, block_size: int, client=None, what: str = "scores", split=None):
    """``fn(block, **shared)`` over the gene blocks of X (:func:`sparse_blocks`), combined over the genes.

    ``fn`` returns a tuple of per-gene arrays (last axis: the block's genes); the result is the same
    tuple over all genes.  A dask X with a dask.distributed client active (or ``client``) is scored
    as dask tasks, one per gene block, with ``shared`` scattered to every worker once
    (:func:`glfs.core._cluster.map_gene_blocks`); otherwise the blocks are read here, one at a time.
    ``split``: ``(local, finish)`` of a graph score whose ``fn(B, U=U, **rest)`` is ``finish(partial,
    graph_term(B, U, plan))`` with ``partial, plan = local(B, **rest)``: on a cluster the graph ``shared["U"]``
    is then given to the tasks in row shards, not to every worker whole.
    """
    n, d = X.shape
    cl = cluster_client(X, client)
    if cl is not None:
        graph = None
        if split is not None:
            shared = dict(shared)
            graph = (graph_shards(shared.pop("U")), split[0], graph_term, split[1])
        shards = [rows for _, rows in graph[0]] if graph else None
        most = limits.STREAM_VALUES if X.format != "dense" else block_size * n
        # sized by the workers' memory limit (MemoryError if none fit)
        fits = worker_block_values(cl, X, shared, what, graph=shards)
        parts = gene_parts(X, most if fits is None else min(most, fits), cl)
        results = zip(parts, map_gene_blocks(X, parts, fn, shared, cl, what, graph=graph))
    else:
        results = ((cols, fn(B, **shared)) for cols, B in sparse_blocks(X, block_size))
    outs = None
    for cols, res in results:
        if outs is None:
            outs = [np.empty(np.shape(a)[:-1] + (d,), dtype=np.asarray(a).dtype) for a in res]
        for o, a in zip(outs, res):
            o[..., cols] = a
    return outs


def row_sums(X, client=None):
    """Float64 sum of every row of X (n_samples, n_features): in memory, streamed, or as dask tasks."""
    n = X.shape[0]
    if not isinstance(X, OutOfCore):
        return np.asarray(X.sum(axis=1, dtype=np.float64)).ravel()
    out = np.zeros(n)
    cl = cluster_client(X, client)
    if cl is not None:
        for rows, _, part in map_chunks(X, _chunk_row_sums, {}, cl, "row sums"):
            out[rows] += part
        return out
    for axis, sl, blk in X._natural_blocks():
        part = np.asarray(blk.sum(axis=1, dtype=np.float64)).ravel()
        if axis == 0:
            out[sl] = part
        else:
            out += part
    return out


def _chunk_row_sums(blk, rows, cols):
    return np.asarray(blk.sum(axis=1, dtype=np.float64)).ravel()


def _dense_parts(B, genes, n_genes):
    """The columns ``genes`` of the sparse block B as new dense float64 arrays (the caller scales and centres them
    in place), ``n_genes`` at a time: (positions, array); 8 bytes a cell and gene (:func:`dense_columns`)."""
    for k in range(0, genes.size, n_genes):
        idx = genes[k : k + n_genes]
        yield idx, dense_columns(B, idx)


#: A gene of a sparse X whose non-zeros carry more than this share of the (degree) weight is scored
#: on its dense column (centred first); below it the sums over the non-zeros lose no accuracy (the
#: uncentred f' D f is then at most 1 / (1 - share) = 10 times the centred one, so the difference
#: f' D f - f' W f loses at most a factor 10 of float64's 1e-16).
DENSE_SHARE = 0.9


def laplacian_score(X, W, *, block_size: int | None = None, client=None):
    """Laplacian score of every feature (He, Cai & Niyogi, NIPS 2005, Eq. 1 / Algorithm step 4).

    L_r = f~' L f~ / f~' D f~,  f~ = f - (f' D 1 / 1' D 1) 1,  L = D - W.

    Parameters
    ----------
    X : array-like, sparse, or out-of-core matrix of shape (n_samples, n_features)
        Samples in rows, genes in columns.  Sparse X (CSR or CSC, float32 or
        float64) is read as it is, without a dense or float64 copy; an AnnData
        backed sparse matrix or a dask array is streamed in gene blocks
        (:class:`glfs.core._out_of_core.OutOfCore`).
    W : sparse of shape (n_samples, n_samples)
        Symmetric non-negative similarity graph (e.g. :func:`glfs.similarity_graph`).
    block_size : int, optional
        Genes per column block of a dense X (see Notes).  Default: about
        2**23 / n_samples (64 MB float64 blocks), at least 1.  Only speed and
        memory depend on it.  A sparse X is scored over its non-zeros (its
        denser genes, if any, in dense blocks of this size).
    client : dask.distributed.Client, optional
        For a dask X: the cluster to score it on, in gene blocks as dask tasks
        (:mod:`glfs.core._cluster`).  Default: the client in use, if any; without
        one the blocks stream through this process.

    Returns
    -------
    scores : ndarray of shape (n_features,)
        In [0, 2] for non-negative W; **lower is better** (the feature respects
        the graph).  Invariant to f -> a f + b (a != 0).  Constant features get
        NaN and a single :class:`~glfs.ConstantFeatureWarning` (no magic number).

    Notes
    -----
    Dense X: f~' D f~ = sum_i D_ii f~_i^2 and f~' L f~ = f~' D f~ - f~' W f~, with
    f~' W f~ = 2 f~' U f~ + sum_i W_ii f~_i^2 (U the strict upper triangle of
    the symmetric W): one sparse-dense product with U, O(nnz(W) d / 2) time.
    The genes are processed in column blocks: each block is copied to
    float64, each gene divided by its largest absolute value (the score is
    scale-free; so the squares neither overflow for values near 1e200 nor
    underflow for values near 1e-200, and a X scores as X for any a != 0),
    centred with its D-weighted mean (He et al. 2005, Eq. 1's f~; centring
    first keeps f~' D f~ accurate for genes with a large mean and a small
    variance) and multiplied by U, so the temporaries are
    O(n block_size).  A dense float32 or float64 X is read in place (no
    copy of X: float32 values are scored in float64 block by block), so the
    memory beyond X and W is O(n block_size).

    Sparse X (module docstring): f~' D f~ from two passes over the non-zeros
    (:func:`centred_sums`), f~' L f~ from the pairs of non-zeros joined by an
    edge (:func:`cross_sums`), genes on more than :data:`DENSE_SHARE` (90 %) of the degree
    weight on their dense columns; O(nnz(X) + nnz(W) nnz(X) / n) time, O(d) memory
    beyond X (``studies/atlas-scale.md``).
    """
    with as_current(client):
        X = check_X(X, read_only=True, lazy=True)
        n, d = X.shape
        W = check_graph(W, n, name="W")
        if block_size is None:
            block_size = max(1, LS_BLOCK_VALUES // n)
        else:
            block_size = check_int(block_size, "block_size", 1)
        deg = np.asarray(W.sum(axis=1)).ravel()
        if np.any(deg <= 0):
            msg = f"W must give every sample a positive degree; got {int(np.sum(deg <= 0))} isolated sample(s)"
            raise ValueError(msg)
        w_diag = W.diagonal()
        shared = {
            "deg": deg,
            "total": deg.sum(),
            "U": sp.triu(W, k=1, format="csr"),
            "w_diag": w_diag if np.any(w_diag) else None,  # a graph without self-loops: no n zeros to send
            "block_size": block_size,
        }
        num, denom, const = gene_block_results(
            X,
            _laplacian_block,
            shared,
            block_size=block_size,
            what="laplacian_score",
            split=(_laplacian_local, _laplacian_finish),
        )
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = num / denom
    scores[const] = np.nan
    warn_constant(const, "laplacian_score")
    return scores


def _laplacian_block(B, *, deg, total, U, w_diag, block_size):
    """(f~'Lf~, f~'Df~, constant) of the genes of one block B (n, b), dense or sparse, on the whole graph."""
    partial, plan = _laplacian_local(B, deg=deg, total=total, w_diag=w_diag, block_size=block_size)
    return _laplacian_finish(partial, graph_term(B, U, plan))


def _laplacian_local(B, *, deg, total, w_diag, block_size):
    """Everything of :func:`_laplacian_block` but the graph term (a task on a cluster): ``(partial, plan)``,
    ``plan`` saying how :func:`graph_term` forms each gene's values; ``w_diag`` None for a graph without
    self-loops."""
    b = B.shape[1]
    if not sp.issparse(B):
        Xc, const, top, mean = _centred_dense(B, deg, total)
        denom = np.einsum("i,ij,ij->j", deg, Xc, Xc)
        diag = np.einsum("i,ij,ij->j", w_diag, Xc, Xc) if w_diag is not None else None
        dense = np.arange(b)
        plan = {"inv": None, "dense": dense, "top": top, "mean": mean, "block_size": b}
        return (np.zeros(b), denom, const, dense, diag), plan
    scale, const, _ = sparse_stats(B)
    inv = 1.0 / scale
    first = centred_sums(B, inv, deg, np.zeros(b))[0]
    mean = first[1] / total
    c = centred_sums(B, inv, deg, mean)[0]
    # f~'Df~ exactly (non-negative terms); f'Lf = sum_i (d_i - W_ii) x_i^2 - 2 sum_{i<j} W_ij x_i x_j
    denom = c[2] + mean * mean * (total - c[0])
    sq = centred_sums(B, inv, deg - w_diag, np.zeros(b))[0, 2] if w_diag is not None else first[2]
    dense = np.flatnonzero(first[0] > DENSE_SHARE * total)  # genes on most of the degree: centred densely
    tops, means, diags = [], [], []
    for idx, A in _dense_parts(B, dense, block_size):
        Xc, _, top, mu = _centred_dense(A, deg, total, copy=False)
        denom[idx] = np.einsum("i,ij,ij->j", deg, Xc, Xc)
        tops.append(top)
        means.append(mu)
        if w_diag is not None:
            diags.append(np.einsum("i,ij,ij->j", w_diag, Xc, Xc))
    cat = lambda parts: np.concatenate(parts) if parts else np.zeros(0)  # noqa: E731
    plan = {"inv": inv, "dense": dense, "top": cat(tops), "mean": cat(means), "block_size": block_size}
    return (sq, denom, const, dense, cat(diags) if diags else None), plan


def _laplacian_finish(partial, t):
    """(f~'Lf~, f~'Df~, constant) from :func:`_laplacian_local`'s ``partial`` and the graph term ``t``
    (:func:`graph_term`, summed over the graph's row shards)."""
    sq, denom, const, dense, diag = partial
    num = sq - 2.0 * t
    quad_w = 2.0 * t[dense]
    if diag is not None:  # the supervised graph keeps its diagonal (label_graph)
        quad_w += diag
    num[dense] = denom[dense] - quad_w
    return num, denom, const


def _centred_dense(B, deg, total, *, copy=True):
    """(the dense columns B scaled and centred with the degree-weighted mean, constant, each column's divisor, each
    column's mean after scaling): the values whose graph term :func:`graph_term` takes.  A float64 copy of B, or
    B itself (a new float64 array of the caller's, C-ordered) scaled and centred in place when not ``copy``; no
    other temporary of B's size (the largest |value| is max(max, -min))."""
    Xc = np.array(B, dtype=np.float64, order="C") if copy else np.ascontiguousarray(B)  # a CSC block's are F
    hi, lo = Xc.max(axis=0), Xc.min(axis=0)
    const = hi - lo == 0
    top = np.maximum(hi, -lo)
    top[top == 0] = 1.0
    Xc /= top
    mean = (deg @ Xc) / total
    Xc -= mean
    return Xc, const, top, mean


def graph_term(B, U, plan, r0: int = 0):
    """t_g = sum_{(i, j) in U} U_ij z_ig z_jg for every gene g of the block B (n, b) (a task on a cluster).

    U is the strict upper triangle of the graph, or the row shard of it whose rows are the samples ``r0, r0 + 1,
    ...``: the terms of a graph's shards add up to its term.  ``plan`` (from a score's local step) says what z is:
    the gene's values times ``plan["inv"]`` for a sparse B's genes (only pairs of non-zeros enter:
    :func:`cross_sums`), and for the genes ``plan["dense"]`` (all of a dense B) the dense column divided by
    ``plan["top"]`` and centred by ``plan["mean"]``, taken ``plan["block_size"]`` genes at a time.
    """
    b = B.shape[1]
    rows = slice(int(r0), int(r0) + U.shape[0])
    dense = plan["dense"]
    if sp.issparse(B):
        t = cross_sums(B, U, plan["inv"], r0=r0)
        parts = _dense_parts(B, dense, plan["block_size"])  # new arrays: scaled and centred in place
    else:
        t = np.zeros(b)
        parts = [(dense, np.array(B, dtype=np.float64, order="C"))]
    k = 0
    for idx, Xc in parts:
        Xc = np.ascontiguousarray(Xc)
        Xc /= plan["top"][k : k + idx.size]
        Xc -= plan["mean"][k : k + idx.size]
        t[idx] = np.einsum("ij,ij->j", Xc[rows], U @ Xc)
        k += idx.size
    return t


def fisher_score(X, labels, *, client=None):
    """Fisher score of every feature (He et al. 2005, Sec. 4; Bishop 1995).

    F_r = sum_l n_l (mu_l - mu)^2 / sum_l n_l sigma_l^2, with mu_l, sigma_l^2
    the class mean and (biased) variance.  **Higher is better**.  With the
    supervised graph :func:`glfs.label_graph` the Laplacian score equals
    1 / (1 + F_r).  Constant features: NaN and one warning; a feature with zero
    within-class variance but distinct class means scores +inf.  Labels with
    one sample in every class are refused (every gene would score +inf).
    Scale-free: each gene is divided by its largest absolute value first, so
    values near 1e200 or 1e-200 score as values near 1 do.

    X has shape (n_samples, n_features) (dense, sparse CSR/CSC, or out-of-core
    as :func:`laplacian_score`); labels has length n_samples.  Cost O(n d)
    dense; sparse X: two passes over the non-zeros (class sums, then the sums of
    squares about the class means, the zeros added in closed form), O(nnz + K d),
    no dense or float64 copy of X.
    """
    with as_current(client):
        X = check_X(X, read_only=True, lazy=True)
        n, d = X.shape
        _, codes = check_labels(labels, n)
        sizes = np.bincount(codes)
        if sizes.max() < 2:
            msg = (
                f"labels must have a class with at least 2 samples for the Fisher score; got {sizes.size} classes "
                "of 1 sample each (the within-class variance would be 0 for every gene)"
            )
            raise ValueError(msg)
        block_size = max(1, LS_BLOCK_VALUES // n)
        between, within, const = gene_block_results(
            X, _fisher_block, {"codes": codes, "sizes": sizes}, block_size=block_size, what="fisher_score"
        )
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = between / within
    scores[const] = np.nan
    warn_constant(const, "fisher_score")
    return scores


def _fisher_block(B, *, codes, sizes):
    """(between-class, within-class sums of squares, constant) of the genes of one block B (n, b)."""
    n, b = B.shape
    K = sizes.size
    if sp.issparse(B):
        scale, const, _ = sparse_stats(B)
        inv = 1.0 / scale
        ones = np.ones(n)
        s = centred_sums(B, inv, ones, np.zeros((K, b)), codes)
        mk = s[:, 1, :] / sizes[:, None]  # class means (the zeros add nothing)
        c = centred_sums(B, inv, ones, mk, codes)
        within = np.sum(c[:, 2, :] + mk * mk * (sizes[:, None] - c[:, 0, :]), axis=0)
        mu = (sizes @ mk) / n
        return sizes @ (mk - mu) ** 2, within, const
    Xb = np.array(B, dtype=np.float64)  # a copy: scaled in place
    const = np.ptp(Xb, axis=0) == 0
    _scale_columns(Xb)
    mu = Xb.mean(axis=0)
    between, within = np.zeros(b), np.zeros(b)
    for c in range(K):
        Xk = Xb[codes == c]
        mk = Xk.mean(axis=0)
        between += sizes[c] * (mk - mu) ** 2
        within += sizes[c] * Xk.var(axis=0)
    return between, within, const


def _scale_columns(A):
    """Divide each column of the float64 array A in place by its largest absolute value (0 -> 1).

    For the scale-free scores: a gene's squares then neither overflow nor underflow.
    """
    top = np.abs(A).max(axis=0)
    top[top == 0] = 1.0
    A /= top


def variance_score(X, *, client=None):
    """Per-feature variance (ddof=0); **higher is better**.  Constant features score 0.

    X has shape (n_samples, n_features): dense, sparse (CSR/CSC, float32 or
    float64: two passes over the non-zeros, the zeros added in closed form, no
    dense or float64 copy), or out-of-core as :func:`laplacian_score` (``client``: as there).
    """
    with as_current(client):
        X = check_X(X, read_only=True, lazy=True)
        n, d = X.shape
        if isinstance(X, np.ndarray):
            return np.ascontiguousarray(X, dtype=np.float64).var(axis=0)  # C order: the same sums as a copy of X
        (out,) = gene_block_results(X, _variance_block, {}, block_size=max(1, LS_BLOCK_VALUES // n), what="variance")
    return np.maximum(out, 0.0)


def _variance_block(B):
    """(variance,) of the genes of one block B (n, b), ddof=0."""
    n, b = B.shape
    if not sp.issparse(B):
        return (np.asarray(B, dtype=np.float64).var(axis=0),)
    inv, ones = np.ones(b), np.ones(n)
    mean = centred_sums(B, inv, ones, np.zeros(b))[0, 1] / n
    c = centred_sums(B, inv, ones, mean)[0]
    return ((c[2] + mean * mean * (n - c[0])) / n,)


def deviance_score(counts, *, client=None):
    """Binomial deviance of every gene (Townes, Hicks, Aryee & Irizarry, Genome Biol 2019, "Feature selection").

    The deviance of a null model in which every cell draws its counts of gene
    j from its own total with one common proportion:

        D_j = 2 sum_i [ y_ij log(y_ij / mu_ij) + (n_i - y_ij) log((n_i - y_ij) / (n_i - mu_ij)) ],
        mu_ij = n_i pi_j,  pi_j = sum_i y_ij / sum_i n_i,  n_i = sum_j y_ij,

    with 0 log 0 = 0 (the statistic of R's ``scry::devianceFeatureSelection``,
    binomial family).  **Higher is better** (the gene departs more from
    constant expression).  Genes without a count score 0.

    Parameters
    ----------
    counts : array-like or sparse of shape (n_samples, n_features)
        Raw counts (non-negative integers), cells in rows.  Sparse input is
        used as it is (CSR, float32 kept): a zero count contributes
        -n_i log(1 - pi_j), summed for all zeros of a gene at once, and the
        stored counts are summed in one pass (numba), so the cost is
        O(nnz + n + d) time and O(n + d) memory beyond X; nothing dense is formed.
        An out-of-core X (as :func:`laplacian_score`) is read twice: the
        cells' totals, then the genes in blocks (as dask tasks with ``client``).

    Returns
    -------
    ndarray of shape (n_features,)
    """
    msg = "counts must be raw counts (non-negative integers); got negative or non-integer values"
    with as_current(client):
        X = check_X(counts, name="counts", read_only=True, lazy=True)
        if isinstance(X, OutOfCore):
            if not X.counts:
                raise ValueError(msg + f" in {X.describe()}")
            n_cell = row_sums(X)
            shared = {"n_cell": n_cell, "total": _total_counts(n_cell)}
            return gene_block_results(
                X, _deviance_block, shared, block_size=max(1, LS_BLOCK_VALUES // X.shape[0]), what="deviance"
            )[0]
    C = _csr(X) if sp.issparse(X) else sp.csr_matrix(X)
    if C.nnz and not _whole_nonnegative(C.data):
        raise ValueError(msg)
    n_cell = np.asarray(C.sum(axis=1, dtype=np.float64)).ravel()
    return _deviance_block(C, n_cell=n_cell, total=_total_counts(n_cell))[0]


def _total_counts(n_cell) -> float:
    total = float(n_cell.sum())
    if total <= 0:
        msg = "counts must hold at least one count; got an all-zero matrix"
        raise ValueError(msg)
    return total


def _deviance_block(C, *, n_cell, total):
    """(deviance,) of the genes of one block C (n, b) of counts, given every cell's total."""
    C = _csr(sp.csr_matrix(C)) if not sp.issparse(C) else _csr(C)
    gene_total = np.asarray(C.sum(axis=0, dtype=np.float64)).ravel()
    n = C.shape[0]
    rows, starts = np.arange(n, dtype=np.int64), np.array([0, n], dtype=np.int64)
    return (_deviance_terms(C, n_cell, (gene_total / total)[None, :], np.array([total]), rows, starts)[0],)


def _deviance_terms(C, n_cell, pi, totals, rows, starts):
    """(K, b) deviances of the K batches of cells ``rows[starts[k]:starts[k + 1]]`` of the CSR counts C, given
    each batch's gene proportions ``pi`` (K, b) and total count ``totals`` (K,)."""
    # one pass over the non-zeros (numba): sum of the non-zero terms, and of the totals of the cells where the gene is stored
    nonzero_part, n_at_nonzero = _kernel("deviance")(C.indptr, C.indices, C.data, n_cell, pi, rows, starts, N_PARTS)
    # zero counts: n_i log(n_i / (n_i - mu_ij)) = -n_i log(1 - pi_j), over the cells where gene j is 0
    with np.errstate(divide="ignore"):
        zero_part = -np.log1p(-pi) * (totals[:, None] - n_at_nonzero)
    zero_part[pi >= 1] = 0.0  # a gene holding every count: no zero cell has a total, so nothing to add
    return 2.0 * (nonzero_part + zero_part)


def deviance_by_batch(counts, codes, n_batches: int) -> np.ndarray:
    """:func:`deviance_score` of each batch, all batches in one pass over the counts (batch-aware selection).

    counts : (n_samples, n_features) raw counts in memory (dense or sparse); ``codes`` one batch code
    0 .. n_batches - 1 per cell, -1 for a cell left out.  Row k of the (n_batches, n_features) answer
    equals ``deviance_score(counts[codes == k])`` exactly (the same sums in the same order: each batch's
    rows are cut into the same :data:`N_PARTS` parts as when it is scored alone); one kernel launch
    instead of one per batch.  A ValueError as :func:`deviance_score` (not counts, or a batch without a count).
    """
    C = check_X(counts, name="counts", read_only=True)
    C = _csr(C) if sp.issparse(C) else sp.csr_matrix(C)
    if C.nnz and not _whole_nonnegative(C.data):
        msg = "counts must be raw counts (non-negative integers); got negative or non-integer values"
        raise ValueError(msg)
    codes = np.asarray(codes, dtype=np.int64)
    rows = np.argsort(codes, kind="stable")  # each batch's cells in their order in X
    rows = rows[codes[rows] >= 0]
    starts = np.searchsorted(codes[rows], np.arange(n_batches + 1)).astype(np.int64)
    n_cell = np.asarray(C.sum(axis=1, dtype=np.float64)).ravel()
    # integer counts: every sum below is exact in float64 whatever its order, as in each batch alone
    G = sp.csr_matrix((np.ones(rows.size), (codes[rows], rows)), shape=(n_batches, C.shape[0]))
    gene_total = np.asarray((G @ C).toarray(), dtype=np.float64)
    totals = np.array([_total_counts(n_cell[rows[starts[k] : starts[k + 1]]]) for k in range(n_batches)])
    out = np.empty((n_batches, C.shape[1]))
    group = max(1, BATCH_PART_VALUES // (N_PARTS * 2 * max(C.shape[1], 1)))  # batches per launch
    for k0 in range(0, n_batches, group):
        k1 = min(n_batches, k0 + group)
        sub = starts[k0 : k1 + 1]
        out[k0:k1] = _deviance_terms(
            C, n_cell, gene_total[k0:k1] / totals[k0:k1, None], totals[k0:k1], rows[sub[0] : sub[-1]], sub - sub[0]
        )
    return out


def _whole_nonnegative(v) -> bool:
    """All values >= 0 and integers, checked in slices (no temporary of the matrix's size)."""
    for i in range(0, v.size, 2**24):
        part = v[i : i + 2**24]
        if part.min() < 0 or not np.array_equal(part, np.floor(part)):
            return False
    return True
