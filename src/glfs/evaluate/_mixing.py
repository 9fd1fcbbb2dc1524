"""How well a cell graph mixes the batches within each cell type: the kNN batch entropy.

For a cell i of type t, take its neighbours in a kNN graph (scanpy's ``obsp["distances"]``:
row i holds i's neighbours) that are of the same type, N_i; p_ib is the share of N_i in batch b
and H_i = -sum_b p_ib log p_ib.  The cell's mixing is H_i / H_t, with H_t = -sum_b q_tb log q_tb
the entropy of the type's batch composition (q_tb: the share of type t's cells in batch b), the
entropy of a neighbourhood drawn from the type without regard to batch.  A type's mixing is the
mean over its cells with at least one same-type neighbour; the score is the mean over the types
present in two or more batches (each type counts once, as scib's batch ASW averages its labels).

1 = the neighbourhoods within a type are as mixed as the type's batches (a value a little below 1
is what random neighbours give: a sample of k neighbours has less entropy than the population);
0 = every cell's same-type neighbours are of its own batch.  Higher is better.  It is the
entropy-of-batch-mixing of Haghverdi et al. (Nat Biotechnol 2018) restricted to cells of one type
and scaled per type, so that a type sampled mostly from one donor is not counted as badly mixed;
scib's iLISI (Korsunsky et al. 2019, Luecken et al. 2022) is the same idea with perplexity
weights over all cells (docs/methods/batch-aware.md, "Batch-aware selection", why this and not scib-metrics).
Cost O(nnz(graph)).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from glfs.core._structure import check_sparse_structure
from glfs.core._validation import check_labels

__all__ = ["knn_batch_mixing"]


def _entropy(counts):
    """Entropy (nats) of each row of non-negative counts; 0 for an empty row."""
    counts = np.asarray(counts, dtype=np.float64)
    tot = counts.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(tot > 0, counts / tot, 0.0)
        terms = np.where(p > 0, -p * np.log(p), 0.0)
    return terms.sum(axis=1)


def knn_batch_mixing(graph, labels, batches) -> dict:
    """Batch mixing within cell types on a kNN graph of the cells (module docstring).

    Parameters
    ----------
    graph : sparse (n_samples, n_samples)
        Row i's stored entries are cell i's neighbours (scanpy's ``obsp["distances"]``; a
        symmetric graph such as ``connectivities`` works too); the values are not used.
    labels, batches : array-like of length n_samples
        Cell types and batches.

    Returns
    -------
    dict
        ``batch_mixing``: the mean over the types of two or more batches (NaN when there is none);
        ``per_type``: {type: mixing}; ``n_types``: the types counted.
    """
    labels = np.asarray(labels)
    n = labels.shape[0]
    types, t = check_labels(labels, n, min_classes=1)
    _, b = check_labels(batches, n, name="batches", min_classes=1)
    if sp.issparse(graph):
        check_sparse_structure(graph, "graph")  # before scipy's conversion reads the indices
    G = sp.coo_matrix(graph)
    if G.shape != (n, n):
        msg = f"graph must have shape ({n}, {n}) (one row per cell); got {G.shape}"
        raise ValueError(msg)
    nb = int(b.max()) + 1
    off = G.row != G.col
    i, j = G.row[off], G.col[off]
    same = t[i] == t[j]
    counts = np.bincount(i[same] * nb + b[j[same]], minlength=n * nb).reshape(n, nb)  # same-type neighbours by batch
    h_cell = _entropy(counts)
    comp = np.bincount(t * nb + b, minlength=types.size * nb).reshape(types.size, nb)
    h_type = _entropy(comp)
    has = counts.sum(axis=1) > 0
    per_type = {}
    for k, name in enumerate(types):
        cells = (t == k) & has
        if h_type[k] > 0 and cells.any():
            per_type[name.item() if isinstance(name, np.generic) else name] = float(np.mean(h_cell[cells]) / h_type[k])
    mixing = float(np.mean(list(per_type.values()))) if per_type else float("nan")
    return {"batch_mixing": mixing, "per_type": per_type, "n_types": len(per_type)}
