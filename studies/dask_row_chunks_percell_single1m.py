"""The single process on the same X and random graph as waves.py: scores against a cluster run's."""

import sys
import time

import anndata as ad
import numpy as np
import scipy.sparse as sp

import glfs

X = ad.read_h5ad(sys.argv[1]).X
n = X.shape[0]
rng = np.random.default_rng(0)
rows = np.repeat(np.arange(n, dtype=np.int64), 4)
cols = rng.integers(0, n, rows.size)
keep = rows != cols
W = sp.csr_matrix((rng.random(keep.sum()) + 0.1, (rows[keep], cols[keep])), shape=(n, n))
W = W.maximum(W.T).tocsr()
t = time.perf_counter()
s = glfs.laplacian_score(X, W)
c = np.load(sys.argv[2])
print(
    f"{time.perf_counter() - t:.1f} s; bitwise equal: {np.array_equal(s, c, equal_nan=True)}; max rel diff "
    f"{np.nanmax(np.abs(s - c) / np.abs(s)):.2e}; same top 2000 in order: {np.array_equal(np.argsort(s, kind='stable')[:2000], np.argsort(c, kind='stable')[:2000])}"
)
