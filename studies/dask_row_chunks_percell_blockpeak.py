"""Issue 42, the graph in row shards: per-task memory at n cells for a one-gene block in 93 % of the cells
(pieces of 50,000-row chunks): the stack task (pieces -> CSR block), the local step, one graph shard's term."""

import sys

import numpy as np
import scipy.sparse as sp

from glfs.core._cluster import _stack_rows
from glfs.core._graph_shards import graph_shards
from glfs.scores._genewise import _laplacian_local, graph_term


def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) * 1024


def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) * 1024


def reset():
    open("/proc/self/clear_refs", "w").write("5")
    return rss()


n = int(sys.argv[1])
rng = np.random.default_rng(0)
rows = np.repeat(np.arange(n, dtype=np.int64), 4)
cols = rng.integers(0, n, rows.size)
W = sp.csr_matrix((rng.random(rows.size) + 0.1, (rows, cols)), shape=(n, n))
W = W.maximum(W.T).tocsr()
del rows, cols
deg = np.asarray(W.sum(axis=1)).ravel()
shared = {"deg": deg, "total": deg.sum(), "w_diag": None, "block_size": max(1, 2**23 // n)}
shards = graph_shards(sp.triu(W, k=1, format="csr"))
del W
keep = rng.random(n) < 0.927
col = sp.csc_matrix(
    (
        rng.random(int(keep.sum())).astype(np.float32) + 0.5,
        (np.flatnonzero(keep).astype(np.int32), np.zeros(int(keep.sum()), np.int32)),
    ),
    shape=(n, 1),
)
pieces = [sp.csc_matrix(col[a : a + 50_000]) for a in range(0, n, 50_000)]
del col, keep
nb = lambda m: m.data.nbytes + m.indices.nbytes + m.indptr.nbytes  # noqa: E731
pb = sum(nb(p) for p in pieces)
# warm-up: the kernels compiled (or loaded) on a small block first
Bs = _stack_rows([p[:1000] for p in pieces[:2]])
small = {**shared, "deg": deg[:2000], "total": deg[:2000].sum()}
_, pl = _laplacian_local(Bs, **small)
graph_term(Bs, sp.triu(sp.random(2000, 2000, density=0.001, format="csr", random_state=0), k=1, format="csr"), pl)
r0 = reset()
B = _stack_rows(pieces)
stack = hwm() - r0
bb = nb(B)
r0 = reset()
partial, plan = _laplacian_local(B, **shared)
local = hwm() - r0
peaks = []
for a, U in shards[:3]:
    r0 = reset()
    graph_term(B, U, plan, a)
    peaks.append(hwm() - r0)
print(
    f"n={n}: pieces {pb / 1e9:.3f} GB, block {bb / 1e9:.3f} GB ({8 * (n + 1) / 1e9:.3f} of it pointers); "
    f"{len(shards)} shards of at most {max(nb(u) for _, u in shards) / 1e9:.3f} GB; above what the task holds: "
    f"stack {stack / 1e9:.3f} GB, local {local / 1e9:.3f} GB ({local / n:.1f} B/cell), "
    f"graph term {max(peaks) / 1e9:.3f} GB ({max(peaks) / n:.1f} B/cell)"
)
