"""The counts of :func:`glfs.simulation._scsim.simulate_counts`, drawn in blocks of cells into a CSR matrix.

Steps 5-8 of its model (cell means, BCV trended means, Poisson counts, dropout);
split from :mod:`glfs.simulation._scsim` to keep each file short.  Private to
``glfs.simulation``.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from glfs.core._progress import Progress

log = logging.getLogger(__name__)

__all__ = ["Chunks", "draw_counts"]


def draw_counts(rngs, library_size, proportion, mean_row, bcv: tuple, bcv_gene, block_cells: int, dropout=None):
    """Steps 5-8 for every cell, in blocks of ``block_cells`` cells: the counts as CSR float32 (n_cells, n_genes).

    ``bcv`` = (bcv_common, bcv_trend); ``mean_row[c]`` is the row of ``proportion`` (one per batch and group) of cell c.  Dense
    float64 only for one block; the nonzeros grow in fixed chunks (:class:`Chunks`).
    """
    n_cells, n_genes = mean_row.size, proportion.shape[1]
    data, indices = Chunks(np.float32), Chunks(np.int32)
    indptr_parts, offset = [np.zeros(1, dtype=np.int64)], 0
    n_blocks = -(-n_cells // block_cells)
    progress = Progress(log, "simulate_counts", n_blocks)
    for b, start in enumerate(range(0, n_cells, block_cells)):
        stop = min(start + block_cells, n_cells)
        block = _block_counts(rngs, library_size[start:stop], proportion, mean_row[start:stop], bcv, bcv_gene, dropout)
        rows, cols = np.nonzero(block)
        data.append(block[rows, cols])
        indices.append(cols)
        indptr_parts.append(offset + np.cumsum(np.bincount(rows, minlength=stop - start)))
        offset += rows.size
        del block, rows, cols
        progress.step(b + 1, f"{stop} of {n_cells} cells")
    counts = sp.csr_matrix((n_cells, n_genes), dtype=np.float32)
    counts.data = data.concatenate()
    counts.indices = indices.concatenate()
    idx_type = np.int32 if offset < 2**31 else np.int64
    counts.indptr = np.concatenate(indptr_parts).astype(idx_type)
    if idx_type is np.int64:
        counts.indices = counts.indices.astype(np.int64)
    counts.check_format(full_check=False)
    return counts


def _block_counts(rngs, library_size, proportion, rows, bcv: tuple, bcv_gene, dropout) -> np.ndarray:
    """Steps 5-8 for one block of cells: cell means, gamma trended means, Poisson counts, dropout; dense (cells, n_genes).

    Draws from the ``cell_means``, ``counts`` (and ``dropout``) streams in
    cell-major order, so the counts do not depend on the block size.
    """
    mu = library_size[:, None] * proportion[rows]
    common, trend = bcv
    with np.errstate(divide="ignore", invalid="ignore"):
        bcv = (common + trend / np.sqrt(mu)) * bcv_gene
        shape = 1.0 / bcv**2
        scale = mu * bcv**2
    positive = mu > 0  # a gene mean that underflowed to 0 gives 0 counts
    poisson = positive & (bcv == 0)  # no biological variation (bcv_common = bcv_trend = 0): lambda = mu
    shape = np.where(positive & ~poisson, shape, 1.0)
    scale = np.where(positive & ~poisson, scale, 0.0)
    del bcv
    lam = rngs["cell_means"].gamma(shape, scale)  # drawn for every entry: the stream does not depend on the values
    if poisson.any():
        lam[poisson] = mu[poisson]
    del shape, scale, mu, poisson
    block = rngs["counts"].poisson(lam)
    if dropout is not None:  # step 8: drop with probability logistic(log lam; mid, shape)
        mid, shape_k = dropout
        with np.errstate(divide="ignore", over="ignore"):
            p_drop = 1.0 / (1.0 + np.exp(-shape_k * (np.log(lam) - mid)))
        block[rngs["dropout"].random(block.shape) < p_drop] = 0
    del lam
    return block


class Chunks:
    """Growing 1-d storage in fixed chunks of ``CHUNK_ELEMENTS`` values, concatenated at the end.

    The chunks (64 MB for 4-byte values) are above glibc's largest mmap threshold
    (32 MB), so each is its own mapping and freeing it returns the memory at once:
    concatenating chunk by chunk into the result keeps the peak near one copy of the
    result (block-sized pieces would stay in the heap until all are freed: twice
    the result, measured 6.7 GB for a 3.1 GB result at 50,000 x 20,000).
    """

    CHUNK_ELEMENTS = 2**24

    def __init__(self, dtype):
        self.dtype, self.chunks, self.fill = np.dtype(dtype), [], self.CHUNK_ELEMENTS

    def append(self, x: np.ndarray) -> None:
        x = np.asarray(x)
        pos = 0
        while pos < x.size:
            if self.fill == self.CHUNK_ELEMENTS:
                self.chunks.append(np.empty(self.CHUNK_ELEMENTS, dtype=self.dtype))
                self.fill = 0
            take = min(x.size - pos, self.CHUNK_ELEMENTS - self.fill)
            self.chunks[-1][self.fill : self.fill + take] = x[pos : pos + take]
            self.fill += take
            pos += take

    def concatenate(self) -> np.ndarray:
        """All values in order; the chunks are freed one by one as they are copied."""
        n = len(self.chunks) * self.CHUNK_ELEMENTS - (self.CHUNK_ELEMENTS - self.fill if self.chunks else 0)
        out = np.empty(n, dtype=self.dtype)
        pos = 0
        while self.chunks:
            chunk = self.chunks.pop(0)
            take = min(chunk.size, n - pos)
            out[pos : pos + take] = chunk[:take]
            pos += take
            del chunk
        return out
