import sys

import numpy as np
import scipy.sparse as sp

from glfs.core._cluster import _stack_by_genes
from glfs.scores._genewise import _laplacian_block


def rss():
    for l in open("/proc/self/status"):
        if l.startswith("VmRSS"):
            return int(l.split()[1]) * 1024


def hwm():
    for l in open("/proc/self/status"):
        if l.startswith("VmHWM"):
            return int(l.split()[1]) * 1024


n = int(sys.argv[1])
rng = np.random.default_rng(0)
rows = np.repeat(np.arange(n, dtype=np.int64), 4)
cols = rng.integers(0, n, rows.size)
W = sp.csr_matrix((rng.random(rows.size) + 0.1, (rows, cols)), shape=(n, n))
W = W.maximum(W.T).tocsr()
del rows, cols
deg = np.asarray(W.sum(axis=1)).ravel()
shared = {
    "deg": deg,
    "total": deg.sum(),
    "U": sp.triu(W, k=1, format="csr"),
    "w_diag": W.diagonal(),
    "block_size": max(1, 2**23 // n),
}
del W
# one gene in 93 % of the cells, as pieces of 50,000-row chunks (CSC)
keep = rng.random(n) < 0.927
col = sp.csc_matrix(
    (
        rng.random(int(keep.sum())).astype(np.float32) + 0.5,
        (np.flatnonzero(keep).astype(np.int32), np.zeros(int(keep.sum()), np.int32)),
    ),
    shape=(n, 1),
)
pieces = [col[a : a + 50_000] for a in range(0, n, 50_000)]
pieces = [sp.csc_matrix(p) for p in pieces]
del col, keep
pb = sum(p.data.nbytes + p.indices.nbytes + p.indptr.nbytes for p in pieces)
open("/proc/self/clear_refs", "w").write("5")
r0 = rss()
B = _stack_by_genes(pieces).tocsr()
out = _laplacian_block(B, **shared)
peak = hwm() - r0
print(
    f"n={n} piece bytes {pb / 1e9:.3f} GB, task peak above pieces {peak / 1e9:.3f} GB = {peak / n:.1f} B/cell; planned 3 x block + 32 n + 24 n = {(3 * pb + 56 * n) / 1e9:.3f} GB"
)
