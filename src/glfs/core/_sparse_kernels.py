"""The numba kernels of the sparse gene-wise scores (:mod:`glfs.scores._genewise`, :mod:`glfs.scores._moran`)
and of the graph's PCA projection (:func:`times_dense`, :func:`column_range`).

Pure loops over the stored entries of a CSR or CSC block: per-gene statistics, centred sums, the
graph's cross term x'Ux, the binomial deviance, and a CSR block times a dense matrix.  Compiled on first use (:func:`_kernel`) and
cached on disk; numba comes with pynndescent, a dependency.  Each row part (CSR) or gene (CSC)
has its own accumulators, so the sums do not depend on the number of threads.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

numba = None  # imported by _kernel on first use


# ---- sparse kernels (numba; compiled on first use, cached on disk) --------------------------------
# X is an (n, b) CSR matrix (rows = samples, columns = genes); ``inv`` (b,) multiplies each gene's values.


def _nb_stats(indices, data, b):
    """(stored entries, min, max) of each column of a CSR matrix."""
    cnt = np.zeros(b, np.int64)
    lo = np.full(b, np.inf)
    hi = np.full(b, -np.inf)
    for t in range(indices.size):
        g = indices[t]
        v = data[t]
        cnt[g] += 1
        if v < lo[g]:
            lo[g] = v
        if v > hi[g]:
            hi[g] = v
    return cnt, lo, hi


def _nb_sums(indptr, indices, data, inv, w, codes, m, n_parts, fourth):
    """out[k, p, g] = sum over the non-zeros x of gene g in rows of class k of w_i (x inv_g - m[k, g])^p, p = 0..2,
    and p = 3, 4 when ``fourth``."""
    n = indptr.size - 1
    K, b = m.shape
    part = np.zeros((n_parts, K, 5, b))
    step = (n + n_parts - 1) // n_parts
    for q in numba.prange(n_parts):
        acc = part[q]
        for i in range(q * step, min(n, (q + 1) * step)):
            k = codes[i]
            wi = w[i]
            for t in range(indptr[i], indptr[i + 1]):
                g = indices[t]
                z = data[t] * inv[g] - m[k, g]
                z2 = z * z
                acc[k, 0, g] += wi
                acc[k, 1, g] += wi * z
                acc[k, 2, g] += wi * z2
                if fourth:
                    acc[k, 3, g] += wi * z2 * z
                    acc[k, 4, g] += wi * z2 * z2
    out = np.zeros((K, 5, b))
    flat, parts = out.reshape(K * 5 * b), part.reshape(n_parts, K * 5 * b)
    for q in range(n_parts):  # scalar loops (_nb_deviance)
        for e in range(K * 5 * b):
            flat[e] += parts[q, e]
    return out


def _nb_cross(x_ptr, x_idx, x_val, inv, u_ptr, u_idx, u_val, r0, n_parts):
    """sum over the entries (i, j) of U of U_ij x_i x_j per column (x scaled by inv), X in CSR.

    U holds the rows ``r0, r0 + 1, ...`` of the graph (all of it when ``r0`` is 0 and it has a row per
    sample).  Row i is scattered into a dense buffer of the b genes; each neighbour j then costs its own
    non-zeros, so the work is sum over the entries of U of nnz(row j), with O(b) memory per part.
    """
    m = u_ptr.size - 1
    b = inv.size
    part = np.zeros((n_parts, b))
    step = (m + n_parts - 1) // n_parts
    for q in numba.prange(n_parts):
        acc = part[q]
        row = np.zeros(b)
        for r in range(q * step, min(m, (q + 1) * step)):
            if u_ptr[r] == u_ptr[r + 1]:
                continue
            i = r0 + r
            for t in range(x_ptr[i], x_ptr[i + 1]):
                g = x_idx[t]
                row[g] = x_val[t] * inv[g] * inv[g]  # x_i inv^2: then one random read per product
            for s in range(u_ptr[r], u_ptr[r + 1]):
                j = u_idx[s]
                wij = u_val[s]
                for t in range(x_ptr[j], x_ptr[j + 1]):
                    g = x_idx[t]
                    acc[g] += row[g] * (wij * x_val[t])
            for t in range(x_ptr[i], x_ptr[i + 1]):
                row[x_idx[t]] = 0.0
    out = np.zeros(b)
    for q in range(n_parts):  # scalar loops (_nb_deviance)
        for g in range(b):
            out[g] += part[q, g]
    return out


# The same sums for an (n, b) CSC matrix (columns = genes): parallel over the genes, each gene summed
# by one thread in its own order, so no conversion to CSR (O(nnz + n) per block, 2.7 s per 6e7
# non-zeros at a million cells) and no dependence on the thread count.


def _nb_stats_csc(indptr, data):
    """(stored entries, min, max) of each column of a CSC matrix."""
    b = indptr.size - 1
    cnt = np.zeros(b, np.int64)
    lo = np.full(b, np.inf)
    hi = np.full(b, -np.inf)
    for g in numba.prange(b):
        cnt[g] = indptr[g + 1] - indptr[g]
        for t in range(indptr[g], indptr[g + 1]):
            v = data[t]
            if v < lo[g]:
                lo[g] = v
            if v > hi[g]:
                hi[g] = v
    return cnt, lo, hi


def _nb_sums_csc(indptr, indices, data, inv, w, codes, m, n_parts, fourth):
    """:func:`_nb_sums` for a CSC matrix (``n_parts`` unused: the genes are the parts)."""
    K, b = m.shape
    out = np.zeros((K, 5, b))
    for g in numba.prange(b):
        for t in range(indptr[g], indptr[g + 1]):
            i = indices[t]
            k = codes[i]
            wi = w[i]
            z = data[t] * inv[g] - m[k, g]
            z2 = z * z
            out[k, 0, g] += wi
            out[k, 1, g] += wi * z
            out[k, 2, g] += wi * z2
            if fourth:
                out[k, 3, g] += wi * z2 * z
                out[k, 4, g] += wi * z2 * z2
    return out


def _nb_cross_csc(x_ptr, x_idx, x_val, inv, u_ptr, u_idx, u_val, r0, n, n_parts):
    """:func:`_nb_cross` for a CSC matrix with sorted indices: gene g is scattered into a dense buffer of the n
    samples, then each of its non-zeros i among U's rows (``r0`` on, found by bisection) adds sum_j U_ij x_j;
    work nnz(g) plus sum over those non-zeros of nnz(U row i), O(n) memory per part."""
    b = x_ptr.size - 1
    r1 = r0 + u_ptr.size - 1
    out = np.zeros(b)
    step = (b + n_parts - 1) // n_parts
    for q in numba.prange(n_parts):
        col = np.zeros(n)
        for g in range(q * step, min(b, (q + 1) * step)):
            lo, hi = x_ptr[g], x_ptr[g + 1]
            for t in range(lo, hi):
                col[x_idx[t]] = x_val[t]
            a, z = lo, hi
            if r0 > 0 or r1 < n:  # a row shard: its rows' entries of the gene (indices sorted)
                a = lo + np.searchsorted(x_idx[lo:hi], r0)
                z = lo + np.searchsorted(x_idx[lo:hi], r1)
            acc = 0.0
            for t in range(a, z):
                i = x_idx[t]
                s_i = 0.0
                for s in range(u_ptr[i - r0], u_ptr[i - r0 + 1]):
                    s_i += u_val[s] * col[u_idx[s]]
                acc += x_val[t] * s_i
            out[g] = acc * inv[g] * inv[g]
            for t in range(x_ptr[g], x_ptr[g + 1]):
                col[x_idx[t]] = 0.0
    return out


# The kernels of an out-of-core X (:mod:`glfs.core._out_of_core`): one scan of a CSR row block.


def _nb_scan(indices, data, d):
    """(stored entries per column, NaN/inf entries, largest finite |value|) of a CSR block with d columns."""
    cnt = np.zeros(d, np.int64)
    bad = 0
    top = 0.0
    for t in range(indices.size):
        cnt[indices[t]] += 1
        v = float(data[t])
        if not np.isfinite(v):
            bad += 1
        elif abs(v) > top:
            top = abs(v)
    return cnt, bad, top


def _nb_split(indptr, indices, data, start, n_blocks):
    """Split a CSR row block, column indices sorted within each row, by the column blocks that begin at
    ``start``: (row lengths (n_blocks, rows), values and local column indices grouped by block with each
    block's rows in order, block offsets (n_blocks + 1,)).  A row's part of a block is a contiguous run
    (binary search for the cuts, then copies), parallel over the rows."""
    rows = indptr.size - 1
    lengths = np.zeros((n_blocks, rows), np.int32)
    for i in numba.prange(rows):
        lo = indptr[i]
        hi = indptr[i + 1]
        prev = lo
        for p in range(n_blocks):
            cut = lo + np.searchsorted(indices[lo:hi], start[p + 1]) if p + 1 < n_blocks else hi
            lengths[p, i] = cut - prev
            prev = cut
    offset = np.zeros(n_blocks + 1, np.int64)
    first = np.empty((n_blocks, rows), np.int64)  # where row i's part of block p goes
    for p in range(n_blocks):
        acc = offset[p]
        for i in range(rows):
            first[p, i] = acc
            acc += lengths[p, i]
        offset[p + 1] = acc
    values = np.empty(indices.size, data.dtype)
    local = np.empty(indices.size, np.int32)
    for i in numba.prange(rows):
        src = indptr[i]
        for p in range(n_blocks):
            dst = first[p, i]
            for t in range(lengths[p, i]):
                values[dst + t] = data[src + t]
                local[dst + t] = indices[src + t] - start[p]
            src += lengths[p, i]
    return lengths, values, local, offset


def _nb_duplicate(indptr, indices, n_minor):
    """(major, minor) of the first entry stored twice in a CSR/CSC matrix whose indices need not be
    sorted, or (-1, -1): one pass over the indices with a mark per column (CSR) or row (CSC)."""
    mark = np.full(n_minor, -1, np.int64)
    for i in range(indptr.size - 1):
        for t in range(indptr[i], indptr[i + 1]):
            j = indices[t]
            if mark[j] == i:
                return i, j
            mark[j] = i
    return -1, -1


def _nb_times_dense(indptr, indices, data, B, out):
    """out (rows, c) = the CSR matrix (rows, d) times the dense B (d, c), in out's dtype: row i is the sum over
    its stored entries, in stored order, of data[t] B[indices[t]], as scipy's product sums it (parallel over rows,
    so the result does not depend on the number of threads)."""
    rows = indptr.size - 1
    c = B.shape[1]
    for i in numba.prange(rows):
        for t in range(indptr[i], indptr[i + 1]):
            v = data[t]
            g = indices[t]
            for j in range(c):
                out[i, j] += v * B[g, j]
    return out


def _nb_columns(indptr, indices, data, pos, out):
    """out[i, pos[g]] += the stored value of row i and column g, for the columns g with pos[g] >= 0 (a CSR
    matrix's columns made dense in one pass over its stored values; parallel over rows)."""
    rows = indptr.size - 1
    for i in numba.prange(rows):
        for t in range(indptr[i], indptr[i + 1]):
            p = pos[indices[t]]
            if p >= 0:
                out[i, p] += data[t]
    return out


def dense_columns(B, genes):
    """The columns ``genes`` of the sparse (n, b) B as a new float64 (n, len(genes)) array, the values of
    ``B[:, genes].toarray()``.  A CSR B in one pass over its stored values (:func:`_nb_columns`): no cut of the
    n + 1 index pointers and no dense copy in B's dtype, so the temporaries are the result's 8 bytes a cell and
    gene (a CSC B's column cut costs only the columns' entries)."""
    genes = np.asarray(genes, dtype=np.int64)
    if B.format != "csr":
        return np.array(B[:, genes].toarray(), dtype=np.float64)
    pos = np.full(B.shape[1], -1, np.int64)
    pos[genes] = np.arange(genes.size)
    out = np.zeros((B.shape[0], genes.size))
    return _kernel("columns")(B.indptr, B.indices, B.data, pos, out)


def times_dense(X, B, dtype=None):
    """The sparse X (CSR; another format is converted) times the dense B, as scipy's ``X @ B`` sums it, on
    every core (:func:`_nb_times_dense`); in ``dtype`` (default: scipy's, the result type of X and B)."""
    X = sp.csr_matrix(X)
    dtype = np.result_type(X.dtype, B.dtype, np.float32) if dtype is None else np.dtype(dtype)
    B = np.ascontiguousarray(B, dtype=dtype)
    out = np.zeros((X.shape[0], B.shape[1]), dtype)
    return _kernel("times_dense")(X.indptr, X.indices, X.data, B, out)


def column_range(X):
    """(min, max) of each column of the sparse X, its implicit zeros counted; one O(nnz) pass over the
    stored values (:func:`_nb_stats`, :func:`_nb_stats_csc`) instead of scipy's ``X.min(0)`` / ``X.max(0)``."""
    if sp.issparse(X) and X.format == "csc":
        cnt, lo, hi = _kernel("stats_csc")(X.indptr, X.data)
    else:
        X = sp.csr_matrix(X)
        cnt, lo, hi = _kernel("stats")(X.indices, X.data, X.shape[1])
    full = cnt == X.shape[0]
    return np.where(full, lo, np.minimum(lo, 0.0)), np.where(full, hi, np.maximum(hi, 0.0))


_SEQUENTIAL = ("stats", "scan", "duplicate")
_JIT: dict = {}


def _kernel(name):
    """The numba-compiled kernel ``_KERNELS[name]`` (compiled on first use, cached on disk)."""
    fn = _JIT.get(name)
    if fn is None:
        global numba
        import numba

        fn = numba.njit(cache=True, parallel=name not in _SEQUENTIAL, nogil=True)(_KERNELS[name])
        _JIT[name] = fn
    return fn


def _nb_deviance(indptr, indices, data, n_cell, pi, rows, starts, n_parts):
    """Per batch k and gene: sum over the non-zero counts y of y log(y / mu) + (n - y) log((n - y) / (n - mu)),
    mu = n pi[k] (0 log 0 = 0), and the sum of the totals n of those cells.

    The cells of batch k are ``rows[starts[k]:starts[k + 1]]`` (one batch of all rows: the whole matrix); each
    batch is cut into ``n_parts`` parts of its own rows, so a batch's sums are those of its rows scored alone."""
    K, b = pi.shape
    part = np.zeros((K * n_parts, 2, b))
    for task in numba.prange(K * n_parts):
        k = task // n_parts
        q = task - k * n_parts
        lo = starts[k]
        nk = starts[k + 1] - lo
        step = (nk + n_parts - 1) // n_parts
        acc = part[task]
        for r in range(q * step, min(nk, (q + 1) * step)):
            i = rows[lo + r]
            ni = n_cell[i]
            for t in range(indptr[i], indptr[i + 1]):
                y = float(data[t])
                if y == 0:  # an explicitly stored zero is a zero count: its term, -n log(1 - pi), comes from the caller
                    continue
                g = indices[t]
                mu = ni * pi[k, g]
                term = y * np.log(y / mu)
                rest = ni - y
                if rest > 0:
                    term += rest * np.log(rest / (ni - mu))
                acc[0, g] += term
                acc[1, g] += ni
    out = np.zeros((K, 2, b))
    # scalar loops: in a parallel kernel an array expression (out[k] += part[q]) is a parallel launch of its own,
    # one per part, and each launch waits for every thread (on a loaded machine, for a descheduled one)
    for k in range(K):
        for q in range(n_parts):
            for j in range(2):
                for g in range(b):
                    out[k, j, g] += part[k * n_parts + q, j, g]
    return out[:, 0], out[:, 1]


#: The kernels by the name :func:`_kernel` is called with (the Python functions numba compiles).
_KERNELS = {
    "stats": _nb_stats,
    "sums": _nb_sums,
    "cross": _nb_cross,
    "stats_csc": _nb_stats_csc,
    "sums_csc": _nb_sums_csc,
    "cross_csc": _nb_cross_csc,
    "scan": _nb_scan,
    "split": _nb_split,
    "deviance": _nb_deviance,
    "duplicate": _nb_duplicate,
    "times_dense": _nb_times_dense,
    "columns": _nb_columns,
}
