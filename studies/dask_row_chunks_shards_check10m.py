"""Issue 42: 15 genes of the 10^7-cell file scored in one process on the whole random graph, against the cluster's
scores with the graph in 8 row shards (waves.py's output)."""

import json
import sys
import time

import anndata as ad
import h5py
import numpy as np
import scipy.sparse as sp

import glfs

f = h5py.File(sys.argv[1], "r")
X = ad.experimental.read_elem_lazy(f["X"], chunks=(50_000, -1))
n, d = X.shape
rng = np.random.default_rng(0)  # waves.py's graph
rows = np.repeat(np.arange(n, dtype=np.int64), 4)
cols = rng.integers(0, n, rows.size)
keep = rows != cols
W = sp.csr_matrix((rng.random(keep.sum()) + 0.1, (rows[keep], cols[keep])), shape=(n, n))
W = W.maximum(W.T).tocsr()
del rows, cols, keep
base = np.random.default_rng(0).lognormal(0, 1.5, d)  # the simulation's gene weights: the densest genes
genes = np.unique(np.r_[np.linspace(0, d - 1, 12).astype(int), np.argsort(base)[-3:]])
t0 = time.perf_counter()
sub = X[:, genes].compute()  # one pass over the file, these genes only
want = glfs.laplacian_score(sp.csr_matrix(sub), W)
got = np.load(sys.argv[2])[genes]
res = {
    "genes": genes.tolist(),
    "stored_share": (np.diff(sp.csc_matrix(sub).indptr) / n).round(3).tolist(),
    "max_rel_diff": float(np.max(np.abs(got - want) / np.abs(want))),
    "bitwise": int(np.sum(got == want)),
    "seconds": round(time.perf_counter() - t0, 1),
}
print(json.dumps(res))
