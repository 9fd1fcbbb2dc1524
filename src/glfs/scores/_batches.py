"""Batch-aware selection: a gene-wise score computed within each batch, the batches combined by rank.

X is (n_samples, n_features) = (cells, genes); ``batches`` gives one label per cell (donor,
sample, plate, technology: scanpy's ``batch_key``).  A gene-wise method is run on the cells of
each batch (a graph method on its batch's block of one graph whose edges stay within batches,
below), each batch ranks the genes, and the rankings are combined the way Seurat's ``SelectIntegrationFeatures`` (Stuart
et al., Cell 2019) and scanpy's ``highly_variable_genes(batch_key=...)`` combine theirs
(docs/methods/batch-aware.md, "Batch-aware selection"):

1. ``nbatches``: in how many batches the gene is among the batch's ``n_top`` selected genes
   (scanpy's ``highly_variable_nbatches``); ``intersection``: selected in every scored batch
   (scanpy's ``highly_variable_intersection``);
2. ``median_rank``: the median of the gene's 1-based within-batch ranks over the batches where
   it is selected (NaN where it is selected in none; scanpy's ``highly_variable_rank`` of
   ``seurat_v3`` counts from 0);
3. the combined ranking (rule ``"nbatches"``, the default): more batches first, then the smaller
   median rank, then the smaller median of the within-batch ranks over all scored batches (this
   orders the genes selected in no batch), then gene order.  Rule ``"median_rank"`` puts the
   median rank first and the number of batches second (scanpy's ``seurat_v3`` with ``batch_key``);
4. the combined score: the mean over the scored batches of the per-batch scores, NaN skipped
   (scanpy's ``dispersions_norm`` and ``variances_norm`` with ``batch_key``).

With one batch the result is the plain one exactly (same scores, ranking and selection); when
every batch holds the same cells it is the single batch's ranking.  A batch smaller than the
method's minimum (``min_cells``: more cells than the graph's neighbours for a graph method) is
left out of the combination and named in the log and in ``extra["left_out"]``; when every batch
is too small the call is refused.

A graph method's graph is built once for all the scored cells on a shared embedding: one PCA of
all of them (when the search runs on components) and each cell's neighbours searched within its
batch (:func:`within_batches`, :func:`glfs.similarity_graph`'s ``batches``), so no edge joins two
batches and no batch pays a PCA of its own; each batch is scored on its block of that graph.

Cost: the method's own cost on all cells, less the kNN search (within batches it is cheaper than
one over all cells), plus O(n_batches d log d) for the ranks; the block-diagonal graph has the nnz
of the per-batch graphs' sum.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from glfs.core._progress import Progress
from glfs.core._result import Selection, make_selection
from glfs.core._validation import check_labels
from glfs.graph import _neighbors as nb
from glfs.graph._sharded import flat_index, ivf_search
from glfs.graph._similarity import similarity_graph
from glfs.scores._genewise import variance_score

log = logging.getLogger(__name__)

__all__ = [
    "BatchRanks",
    "BatchPlan",
    "batch_codes",
    "batch_columns",
    "combine_batch_ranks",
    "select_by_batch",
    "run_by_batch",
    "plan_batches",
    "within_batches",
    "min_batch_cells",
    "graph_min_cells",
    "BATCH_RULES",
    "between_batch_share",
    "local_batch_share",
    "batch_neighbourhoods",
    "scored_codes",
    "LOCAL_SHARE_CENTRES",
]

#: Ways of combining the per-batch rankings (module docstring, step 3).
BATCH_RULES = ("nbatches", "median_rank")
#: :func:`local_batch_share` centres its neighbourhoods on every cell up to this many scored cells, above it on a
#: seeded uniform draw of this many (the pooled sums are means over the cells: docs/methods/batch-aware.md, "Batch-aware selection").
LOCAL_SHARE_CENTRES = 100_000


@dataclass(frozen=True)
class BatchRanks:
    """Per-batch ranks of every gene and their combination (module docstring).

    ``ranks`` has shape (n_scored_batches, n_features), 1 = best within the batch; ``selected``
    the same shape, the genes each batch selects; ``nbatches``, ``intersection``, ``median_rank``
    and ``ranking`` (gene indices, best first) have length n_features.
    """

    ranks: np.ndarray
    selected: np.ndarray
    nbatches: np.ndarray
    intersection: np.ndarray
    median_rank: np.ndarray
    ranking: np.ndarray


def batch_codes(batches, n_samples: int):
    """(labels, codes) of the batch labels: one per sample, no missing value; labels sorted (``np.unique``).

    A ValueError names the problem: not 1-D, wrong length, or missing labels.
    """
    return check_labels(batches, n_samples, name="batches", min_classes=1)


def combine_batch_ranks(rankings, selected, *, rule: str = "nbatches") -> BatchRanks:
    """Combine per-batch rankings of the same genes by rank (module docstring, steps 1-3).

    Parameters
    ----------
    rankings : sequence of int arrays of shape (n_features,)
        Each batch's ranking, gene indices best first (``Selection.ranking``).
    selected : sequence of bool arrays of shape (n_features,)
        The genes each batch selects (``Selection.selected``: its top ``n_top``).
    rule : {"nbatches", "median_rank"}
        Which comes first in the combined order (module docstring, step 3).

    Returns
    -------
    BatchRanks
    """
    if rule not in BATCH_RULES:
        msg = f"rule must be one of {BATCH_RULES}; got {rule!r}"
        raise ValueError(msg)
    rankings = [np.asarray(r, dtype=np.int64) for r in rankings]
    if not rankings:
        msg = "rankings must hold at least one batch's ranking; got none"
        raise ValueError(msg)
    d = rankings[0].shape[0]
    ranks = np.empty((len(rankings), d), dtype=np.int64)
    for b, r in enumerate(rankings):
        ranks[b, r] = np.arange(1, d + 1)
    sel = np.asarray(np.stack(selected), dtype=bool).reshape(ranks.shape)
    nbatches = sel.sum(axis=0)
    top = np.where(sel, ranks.astype(np.float64), np.nan)
    with warnings.catch_warnings():  # a gene selected in no batch: NaN, as scanpy's highly_variable_rank
        warnings.simplefilter("ignore", RuntimeWarning)
        median_rank = np.nanmedian(top, axis=0)
    median_all = np.median(ranks, axis=0)
    first = np.where(np.isnan(median_rank), np.inf, median_rank)
    keys = (
        (np.arange(d), median_all, first, -nbatches)
        if rule == "nbatches"
        else (np.arange(d), median_all, -nbatches, first)
    )
    ranking = np.lexsort(keys)  # the last key sorts first
    return BatchRanks(
        ranks=ranks,
        selected=sel,
        nbatches=nbatches,
        intersection=nbatches == len(rankings),
        median_rank=median_rank,
        ranking=ranking,
    )


def select_by_batch(
    select_one: Callable,
    batches,
    *,
    method: str,
    n_features: int,
    higher_is_better: bool,
    min_cells: int = 2,
    why_min: str = "",
    rule: str = "nbatches",
    params: dict | None = None,
    plan: BatchPlan | None = None,
) -> Selection:
    """Run a gene-wise selection within each batch and combine the batches by rank.

    Parameters
    ----------
    select_one : callable
        ``select_one(rows) -> (Selection, W or None, rows used)``: the method on the cells ``rows``
        (int indices into X's rows) of one batch, with the graph it used there (or None) and the
        cells that graph is over (``rows``, or those of them it kept).
    batches : array-like of length n_samples
        One batch label per cell (scanpy's ``adata.obs[batch_key]``).
    method, n_features, higher_is_better
        The method's name, the number of genes to select (each batch's ``n_top``, and the
        combined selection's size) and the direction of its scores.
    min_cells : int, default 2
        The smallest batch the method can score; smaller batches are left out (logged, and in
        ``extra["left_out"]``), and a ValueError is raised when every batch is smaller.
    why_min : str
        Why ``min_cells`` (for the log and the error), e.g. "more cells than the 15 neighbours".
    rule : {"nbatches", "median_rank"}
        :func:`combine_batch_ranks`.
    params : dict, optional
        Added to the result's ``params`` (e.g. which graph was used).
    plan : BatchPlan, optional
        :func:`plan_batches`' answer for these ``batches`` (when the caller needed the scored
        batches first, e.g. to build a graph over their cells); default: made here.

    Returns
    -------
    Selection
        ``scores`` the mean of the per-batch scores (NaN skipped), ``ranking`` and ``selected``
        by the combination (the top ``n_features``, never a gene without a score); ``params``
        those of the first scored batch plus ``batches`` (the scored labels), ``batch_rule``;
        ``extra``: ``nbatches``, ``intersection``, ``median_rank`` (:func:`batch_columns`),
        ``batch_ranks`` (:attr:`BatchRanks.ranks`: (n_scored, n_features), 1 = best in the batch),
        ``batches``, ``batch_scores``
        (n_scored, n_features), ``left_out`` (label -> reason), ``graph`` (the block-diagonal
        graph of the per-batch graphs over all cells, when the method used graphs).
    """
    n_samples = len(batches)
    if plan is None:
        plan = plan_batches(batches, n_samples, method=method, min_cells=min_cells, why_min=why_min)
    scored, sels, graphs = [], [], []
    for label, rows in plan.scored:
        log.info("%s: scoring batch %r (%d cells)", method, label, rows.size)
        sel, W, used_rows = select_one(rows)
        scored.append((label, used_rows))
        sels.append(sel)
        graphs.append(W)
    left_out = dict(plan.left_out)
    comb = combine_batch_ranks([s.ranking for s in sels], [s.selected for s in sels], rule=rule)
    per_batch = np.stack([np.asarray(s.scores, dtype=np.float64) for s in sels])
    with warnings.catch_warnings():  # a gene without a score in every batch stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        scores = np.nanmean(per_batch, axis=0)
    used = [label for label, _ in scored]
    extra = {
        "batch_ranks": comb.ranks,
        "batches": used,
        "batch_scores": per_batch,
        "left_out": left_out,
        **batch_columns(comb.nbatches, comb.intersection, comb.median_rank),
    }
    if any(W is not None for W in graphs):
        extra["graph"] = _block_graph([rows for _, rows in scored], graphs, n_samples)
    params = {
        **dict(sels[0].params),
        **(params or {}),
        "batches": used,
        "batch_rule": rule,
        "batches_left_out": sorted(left_out),
    }
    log.info(
        "%s: %d batches scored, %d left out; %d genes selected in every scored batch",
        method,
        len(sels),
        len(left_out),
        int(np.sum(comb.nbatches == len(sels))),
    )
    return make_selection(
        method,
        scores,
        higher_is_better=higher_is_better,
        n_features=n_features,
        ranking=comb.ranking,
        params=params,
        extra=extra,
    )


@dataclass(frozen=True)
class BatchPlan:
    """Which batches a method scores: ``codes`` (one per cell, into the sorted labels), ``scored``
    [(label, rows)] of the batches with at least ``min_cells`` cells, ``left_out`` {label: reason}."""

    codes: np.ndarray
    scored: list
    left_out: dict


def plan_batches(batches, n_samples: int, *, method: str, min_cells: int = 2, why_min: str = "") -> BatchPlan:
    """The batches a method scores and those it leaves out (smaller than ``min_cells``: a UserWarning and the log
    name each with its size and the reason; the Selection's ``params["batches_left_out"]`` records them).

    A ValueError lists the batch sizes when every batch is too small (:func:`select_by_batch`).
    """
    labels, codes = batch_codes(batches, n_samples)
    scored, left_out = [], {}
    for b, label in enumerate(labels):
        label = plain_label(label)
        rows = np.flatnonzero(codes == b)
        if rows.size < min_cells:
            reason = f"{rows.size} cells, fewer than {min_cells} ({why_min or 'the method minimum'})"
            left_out[str(label)] = reason
        else:
            scored.append((label, rows))
    if left_out and scored:  # never silently: a warning a scanpy session shows, the log, and params["batches_left_out"]
        msg = (
            f"{method}: {len(left_out)} of {len(labels)} batches left out of the selection (their cells take no part "
            f"in it): {left_out}; merge them into larger batches to use their cells"
        )
        log.warning("%s", msg)
        warnings.warn(msg, UserWarning, stacklevel=3)
    if not scored:
        sizes = {plain_label(label): int(np.sum(codes == b)) for b, label in enumerate(labels)}
        msg = (
            f"batches: every batch is too small for method {method!r} (each needs at least {min_cells} cells: "
            f"{why_min or 'the method minimum'}); got batch sizes {sizes}"
        )
        raise ValueError(msg)
    return BatchPlan(codes=codes, scored=scored, left_out=left_out)


def within_batches(plan: BatchPlan, build) -> sp.csr_matrix:
    """A graph over all cells with edges within the scored batches only, from one call ``build(keep, codes)``.

    ``build`` gets the rows of the scored batches' cells (None when that is every cell: no copy of
    X) and their batch codes, and returns the graph over those cells (e.g. :func:`glfs.similarity_graph`
    with ``batches``: one shared PCA of those cells, the kNN search within each batch); the cells of the
    batches left out have no edge.
    """
    n = plan.codes.shape[0]
    keep = np.sort(np.concatenate([rows for _, rows in plan.scored]))
    if keep.size == n:
        return sp.csr_matrix(build(None, plan.codes))
    return _block_graph([keep], [build(keep, plan.codes[keep])], n)


def scored_codes(plan: BatchPlan) -> np.ndarray:
    """One code per cell: k for the cells of the k-th scored batch (``plan.scored``' order), -1 for those left out."""
    codes = np.full(plan.codes.shape[0], -1, dtype=np.int64)
    for k, (_, rows) in enumerate(plan.scored):
        codes[rows] = k
    return codes


def _in_memory(A) -> bool:
    """A numpy array or a scipy sparse matrix (not an out-of-core or dask X, and not None)."""
    return isinstance(A, np.ndarray) or sp.issparse(A)


def between_batch_share(X, codes) -> np.ndarray:
    """Per gene: the variance of its batch means over its total variance (both ddof 0, cells weighted), in [0, 1].

    X : (n_samples, n_features) dense or sparse; ``codes`` one batch code 0 .. K-1 per cell (-1: a cell
    left out).  The share of the gene's variance that separates the batches (the R^2 of a one-way
    analysis of variance by batch); 0 with one batch, NaN for a gene constant over the cells counted.
    Cost O(nnz(X)): the batch sums by one sparse product, the variance by
    :func:`glfs.scores._genewise.variance_score`.
    """
    codes = np.asarray(codes)
    keep = codes >= 0
    Xk, c = (X, codes) if keep.all() else (X[keep], codes[keep])
    n, K = c.size, int(c.max()) + 1
    G = sp.csr_matrix((np.ones(n), (c, np.arange(n))), shape=(K, n))
    size = np.bincount(c, minlength=K).astype(np.float64)[:, None]
    sums = G @ Xk
    sums = sums.toarray() if sp.issparse(sums) else np.asarray(sums, dtype=np.float64)
    mean = sums.sum(axis=0) / n
    between = (size * (sums / np.maximum(size, 1) - mean) ** 2).sum(axis=0) / n
    total = variance_score(Xk)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, np.minimum(between / total, 1.0), np.nan)


def local_batch_share(
    X, codes, Z, n_per_batch: int, *, method: str = "auto", random_state=0, max_centres: int | None = None
) -> np.ndarray:
    """Per gene: the share of its variance among similar cells that separates the batches, less its null expectation.

    Every cell i (``codes[i] >= 0``) gets a neighbourhood N_i of the ``n_per_batch`` cells nearest to it on the
    embedding ``Z`` (Euclidean; e.g. principal components) in each scored batch b, the groups G_ib (its own
    batch's group holds i itself and its ``n_per_batch - 1`` nearest others; a batch of at most ``n_per_batch``
    cells is every cell's group whole): bbknn's batch-balanced neighbourhood (Polanski et al., Bioinformatics 2020).
    Pooled over the cells, a one-way analysis of variance by batch within the neighbourhoods:
    SS_b = sum_i sum_b |G_ib| (m_ib - m_i)^2 and SS_t = sum_i sum_(j in N_i) (x_j - m_i)^2 (m: group and
    neighbourhood means), SS_w = SS_t - SS_b, and the share (SS_b - df_b SS_w / df_w) / SS_t with
    df_b = sum_i (K - 1), df_w = sum_i (|N_i| - K): the part of SS_b beyond what K groups of the same cells give
    without a batch effect (its expectation under exchangeable batches).  0 (to rounding) where the batches do not
    differ among similar cells, whatever their composition; 0 with one batch; NaN for a gene constant on every
    neighbourhood.  docs/methods/batch-aware.md, "Batch-aware selection".

    X : (n_samples, n_features) dense or sparse; ``codes`` one batch code 0 .. K-1 per cell (-1: left out);
    ``Z`` (n_samples, n_components).  ``method`` ("auto", "exact", "approx") and ``random_state``: the search of
    :func:`batch_neighbourhoods`.  ``max_centres`` (default :data:`LOCAL_SHARE_CENTRES`): with more scored cells,
    the sums run over the neighbourhoods of a uniform draw of this many of them (seeded by ``random_state``; every
    cell stays a possible neighbour), an estimate of the same share with error of order 1/sqrt(max_centres).
    Cost: that search of m = min(n, max_centres) cells (with "auto", exact below 30,000 scored cells, else
    O(m sqrt(n K) n_components) with faiss' IVF) and sparse products with m K n_per_batch non-zeros per block.
    """
    codes = np.asarray(codes)
    keep = np.flatnonzero(codes >= 0)
    c, Zk = np.unique(codes[keep], return_inverse=True)[1], np.asarray(Z)[keep]
    n, K = keep.size, int(c.max()) + 1
    if K == 1:
        return np.where(variance_score(X[keep]) > 0, 0.0, np.nan)
    m = LOCAL_SHARE_CENTRES if max_centres is None else int(max_centres)
    centres = None if n <= m else np.sort(np.random.default_rng(random_state).choice(n, m, replace=False))
    if centres is not None:
        log.info("local_batch_share: neighbourhoods of %d of the %d cells (a seeded draw, LOCAL_SHARE_CENTRES)", m, n)
    r, col = batch_neighbourhoods(Zk, c, n_per_batch, method=method, random_state=random_state, centres=centres)
    nc = n if centres is None else m
    G = sp.csr_matrix((np.ones(r.size), (r, col)), shape=(nc * K, n))  # the groups G_ib, row i K + b
    g_size = np.asarray(G.sum(axis=1), dtype=np.float64).ravel()
    u_size = g_size.reshape(nc, K).sum(axis=1)  # the neighbourhoods N_i: the union of i's K disjoint groups
    times = np.bincount(col, minlength=n).astype(np.float64)  # how many neighbourhoods each cell is in
    Xk = X[keep] if keep.size < codes.size else X
    Xk = sp.csc_matrix(Xk, dtype=np.float64) if sp.issparse(Xk) else np.asarray(Xk, dtype=np.float64)
    sq = np.asarray(times @ (Xk.multiply(Xk) if sp.issparse(Xk) else Xk * Xk)).ravel()
    d = Xk.shape[1]
    grp, nbh = np.empty(d), np.empty(d)
    step = max(1, 2**23 // max(nc * K, 1))
    progress = Progress(log, "local_batch_share: gene block", -(-d // step))
    for i, lo in enumerate(range(0, d, step), start=1):
        B = Xk[:, lo : lo + step]
        S = G @ (B.toarray() if sp.issparse(B) else B)  # group sums (n K, b)
        grp[lo : lo + step] = (S * S / g_size[:, None]).sum(axis=0)
        S = S.reshape(nc, K, -1).sum(axis=1)  # neighbourhood sums
        nbh[lo : lo + step] = (S * S / u_size[:, None]).sum(axis=0)
        progress.step(i)
    ss_t, ss_b = sq - nbh, grp - nbh
    df_b, df_w = nc * (K - 1), float(u_size.sum()) - nc * K
    with np.errstate(invalid="ignore", divide="ignore"):
        excess = ss_b - (df_b / df_w) * (ss_t - ss_b) if df_w > 0 else ss_b
        return np.where(ss_t > 1e-12 * np.maximum(sq, 1e-300), excess / ss_t, np.nan)


def batch_neighbourhoods(Z, codes, n_per_batch: int, *, method: str = "auto", random_state=0, centres=None):
    """(rows, cols): the cells of each centre's group in each batch (:func:`local_batch_share`), row i K + b.

    Z (n_samples, n_components), ``codes`` 0 .. K-1 (every cell scored); ``centres``: the sorted cells whose
    neighbourhoods are wanted (i-th centre: rows i K + b), default every cell.  Each batch b is searched by every
    centre with the library's search (:mod:`glfs.graph._neighbors`), on an index of b's cells: ``method="auto"``
    follows :func:`glfs.graph._neighbors.choose_neighbor_method` at the number of cells searched (all of them):
    exact below ``AUTO_INDEX_MIN_SAMPLES`` (faiss' flat index or scikit-learn's brute force, float32, the
    ``n_per_batch + 4`` candidates' distances recomputed in float64), else faiss' IVF index of the batch
    (its k-means seeded by ``random_state``, ``IVF_NLIST_PER_SQRT_N`` sqrt(n_b) lists, :func:`ivf_nprobe`
    probes for the components' dimension; searched in dense blocks at every size, :mod:`glfs.graph._ivf_blocks`: IndexIVFFlat's candidates,
    and 2.5 s against 9.0 s for 100,000 queries in a batch of 25,000 cells; queries with too few candidates
    searched exactly).  Ties in distance are broken by cell index (among the ``n_per_batch + 4`` candidates
    searched).  Memory O(n (n_per_batch + 5)) a batch besides Z.
    """
    n, p = Z.shape
    K, k = int(codes.max()) + 1, int(n_per_batch)
    how = nb.choose_neighbor_method(n, p, method, p)[0]
    if how == "approx" and nb.approx_backend() != "faiss":
        log.info("local_batch_share: no faiss: exact search of %d cells (O(n^2))", n)
        how = "exact"
    # the centres first (rows 0 .. nq - 1 of Zp, as _from_candidates takes its queries), every cell a candidate
    perm = np.arange(n) if centres is None else np.r_[centres, np.setdiff1d(np.arange(n), centres)]
    at = np.argsort(perm)  # cell -> its row of Zp
    Zp = Z if centres is None else np.asarray(Z)[perm]
    Z32 = np.ascontiguousarray(Zp, dtype=np.float32)
    nq = n if centres is None else len(centres)
    rows, cols = [], []
    for b in range(K):
        ref = np.flatnonzero(codes == b)
        kb = min(k, ref.size)
        if kb == ref.size:  # the whole batch is every centre's group
            rows.append(np.repeat(np.arange(nq) * K + b, kb))
            cols.append(np.tile(ref, nq))
            continue
        ind = _candidates(Z32[at[ref]], Z32[:nq], min(ref.size, kb + 5), how, random_state)
        ind = np.sort(np.where(ind >= 0, ref[np.maximum(ind, 0)], -1), axis=1)  # cells, by index: ties by index
        ind = np.where(ind >= 0, at[np.maximum(ind, 0)], -1)  # rows of Zp, in that order
        cand = nb._from_candidates(Zp, ind, kb)[1]  # the kb nearest others of every centre, by distance then index
        cand = perm[cand.reshape(nq, kb)]
        own = codes[perm[:nq]] == b  # its own batch: the centre itself and its kb - 1 nearest others
        cand[own] = np.column_stack([perm[:nq][own], cand[own, :-1]])
        rows.append(np.repeat(np.arange(nq) * K + b, kb))
        cols.append(cand.ravel())
        log.info("local_batch_share: batch %d of %d searched (%d cells, %s search)", b + 1, K, ref.size, how)
    return np.concatenate(rows), np.concatenate(cols)


def _candidates(R32, Q32, k_search: int, how: str, random_state):
    """The ``k_search`` candidates (indices into R32, -1 none) of every row of Q32 among the rows of R32:
    :func:`glfs.graph._neighbors._knn_brute32`'s exact search or :func:`glfs.graph._neighbors._knn_ivf`'s index."""
    if how == "exact" and nb.exact_backend() != "faiss":
        from sklearn.neighbors import NearestNeighbors

        return NearestNeighbors(n_neighbors=k_search, algorithm="brute").fit(R32).kneighbors(Q32, return_distance=False)
    if how == "exact":
        return flat_index(R32).search(Q32, k_search)[1]
    nlist = int(max(1, round(nb.IVF_NLIST_PER_SQRT_N * np.sqrt(R32.shape[0]))))
    index = nb._ivf_index(R32, nlist, random_state, blocked=True)  # IndexIVFFlat's candidates, 3.5x faster here
    ind = ivf_search(index, Q32, k_search, nb.ivf_nprobe(nlist, R32.shape[1]))
    short = np.flatnonzero((ind >= 0).sum(axis=1) < k_search)
    if short.size:  # probed lists with too few cells: those queries searched exactly
        ind[short] = flat_index(R32).search(Q32[short], k_search)[1]
    return ind


def batch_columns(nbatches, intersection, median_rank) -> dict:
    """The per-gene batch columns every batch-aware Selection carries in ``extra`` (scanpy's and glfs' alike).

    ``nbatches`` (int: batches whose top n holds the gene; scanpy's ``highly_variable_nbatches``),
    ``intersection`` (bool: all of them; ``highly_variable_intersection``), ``median_rank`` (float:
    the median 1-based within-batch rank over those batches, NaN for none; scanpy's
    ``highly_variable_rank`` plus 1).  :func:`glfs._anndata_writers.write_selection` writes them.
    """
    return {
        "nbatches": np.asarray(nbatches, dtype=np.int64),
        "intersection": np.asarray(intersection, dtype=bool),
        "median_rank": np.asarray(median_rank, dtype=np.float64),
    }


def plain_label(label):
    """A batch label as a plain Python value (for ``params`` and ``.uns``)."""
    return label.item() if isinstance(label, np.generic) else label


def _block_graph(rows_of, graphs, n):
    """The per-batch graphs placed on their cells: one sparse (n, n) graph, no edge between batches."""
    r, c, v = [], [], []
    for rows, W in zip(rows_of, graphs):
        if W is None:
            continue
        C = sp.coo_matrix(W)
        r.append(rows[C.row])
        c.append(rows[C.col])
        v.append(C.data)
    return sp.csr_matrix((np.concatenate(v), (np.concatenate(r), np.concatenate(c))), shape=(n, n))


def min_batch_cells(info, graph_params: dict, params: dict) -> tuple[int, str]:
    """(the smallest batch a method can score, why), the rule of docs/methods/batch-aware.md ("Batch-aware selection").

    A method that builds a kNN graph within the batch needs more cells than the graph's neighbours
    (``graph_params["n_neighbors"]``, or the method's own ``n_neighbors`` parameter when it builds
    its own graph), and at least 4 (Moran's I's permutation moments); a score without a graph
    needs 2 cells (one cell has no variance).
    """
    import inspect

    if not info.needs_graph:
        return 2, "a score needs 2 cells"
    if info.own_graph:
        p = inspect.signature(info.fn).parameters.get("n_neighbors")
        k = params.get("n_neighbors", None if p is None else p.default)
    else:
        k = graph_params.get("n_neighbors")
    return graph_min_cells(k)


def graph_min_cells(n_neighbors) -> tuple[int, str]:
    """(the smallest batch a kNN graph score can use, why): more cells than the neighbours, and at least 4."""
    if n_neighbors is None:
        return 4, "a graph score needs 4 cells"
    k = int(n_neighbors)
    return max(k + 1, 4), f"more cells than the graph's {k} neighbours, and at least 4"


# fmt: off
def run_by_batch(info, X, batches, *, n_features, graph=None, graph_params=None, counts=None,
                 random_state=0, rule: str | None = None, **params) -> Selection:
    """A registered gene-wise method (``info``: a :class:`glfs.api.MethodInfo`) within each batch, combined by rank.

    X : (n_samples, n_features), in memory (dense or sparse), already checked by :func:`glfs.select`.
    The graph of a graph method: ``graph`` (a given, e.g. batch-corrected, graph) cut to each
    batch's cells (cells without an edge inside their batch are left out of that batch's score,
    logged); else built within the batches on a shared embedding: by the method itself when it
    builds its own graph and takes ``batches`` (``graph_moran``), or by
    :func:`glfs.similarity_graph` with ``graph_params`` (full, defaults included) and ``batches``
    (one PCA of the scored batches' cells when it searches components, the kNN search within
    each batch), cut to each batch.  An own-graph method without ``batches`` builds its graph on
    each batch's cells.  ``counts`` (raw counts beside X, same shape) are cut to the batch too.
    ``rule``: :func:`combine_batch_ranks`' rule (default ``"nbatches"``), or for a method that combines its
    own batches (``graph_moran``, with its own graph or a given one) its ``batch_rule`` (default: the method's own).
    Returns :func:`select_by_batch`'s Selection; ``params["graph"]`` says which graph was used.
    """
    import inspect

    graph_params = dict(graph_params or {})
    X = X.tocsr() if sp.issparse(X) and X.format != "csr" else X
    counts = counts.tocsr() if sp.issparse(counts) and counts.format != "csr" else counts
    given = None if graph is None else sp.csr_matrix(graph)
    if info.own_graph and "batches" in inspect.signature(info.fn).parameters:
        # the method combines its own batches (graph_moran: its rules and default, glfs.scores._moran.BATCH_RULE),
        # on the graphs it builds within the batches or on the given graph cut to each batch
        kw = dict(params) if counts is None else {**params, "counts": counts}
        if rule is not None:
            kw["batch_rule"] = kw.get("batch_rule", rule)
        return info.fn(X, given, n_features=n_features, labels=None, random_state=random_state, batches=batches, **kw)
    rule = "nbatches" if rule is None else rule
    min_cells, why = min_batch_cells(info, graph_params, params)
    plan = plan_batches(batches, X.shape[0], method=info.name, min_cells=min_cells, why_min=why)
    if info.batch_fn is not None and not params and not info.needs_graph and _in_memory(counts):
        codes = scored_codes(plan)  # every batch in one pass: the Selections of the batches scored one by one
        sels = info.batch_fn(X, codes, len(plan.scored), n_features=n_features, counts=counts)
        return select_by_batch(lambda rows: (sels[codes[rows[0]]], None, rows), batches, method=info.name,
                               n_features=n_features, higher_is_better=info.higher_is_better, rule=rule,
                               params={"graph": "none"}, plan=plan)
    if info.needs_graph and given is None and not info.own_graph:
        shared = within_batches(plan, lambda keep, codes: similarity_graph(X if keep is None else X[keep],
                                                                           batches=codes, **graph_params))
    else:
        shared = given

    def select_one(rows):
        W = None
        if info.needs_graph and shared is not None:
            W = shared[rows][:, rows]
            linked = np.asarray((W != 0).sum(axis=1)).ravel() > 0
            if not linked.all():
                log.warning("%s: %d cells of the batch have no edge inside it in the given graph; left out of its score",
                            info.name, int(np.sum(~linked)))
                rows, W = rows[linked], W[linked][:, linked]
        kw = dict(params)
        if counts is not None:
            kw["counts"] = counts[rows]
        sel = info.fn(X[rows], W, n_features=n_features, labels=None, random_state=random_state, **kw)
        used = W if W is not None else sel.extra.get("graph")
        if used is not None and used.shape[0] != len(rows):
            msg = f"internal error: {info.name} returned a graph over {used.shape[0]} cells for a batch of {len(rows)}"
            raise RuntimeError(msg)
        return sel, used, rows

    how = "none" if not info.needs_graph else ("given, cut to each batch" if given is not None else "built within each batch")
    return select_by_batch(select_one, batches, method=info.name, n_features=n_features,
                           higher_is_better=info.higher_is_better, rule=rule, params={"graph": how}, plan=plan)
# fmt: on
