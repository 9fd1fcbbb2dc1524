"""Simulated log-normalised counts, n x d CSR float32 .h5ad written block by block (issue 42 runs)."""

import sys
import time

import anndata as ad
import h5py
import numpy as np
import pandas as pd
import scipy.sparse as sp

n, d, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
reads = 560
groups = 10
block = 50_000
rng = np.random.default_rng(0)
base = rng.lognormal(0, 1.5, d)
cdfs = []
for g in range(groups):
    w = base.copy()
    markers = rng.choice(d, d // 25, replace=False)
    w[markers] *= rng.lognormal(1.5, 0.5, markers.size)
    cdfs.append(np.cumsum(w) / w.sum())
t0 = time.time()
with h5py.File(out, "w") as f:
    first = True
    for a in range(0, n, block):
        m = min(block, n - a)
        r = np.random.default_rng([1, a])
        grp = r.integers(0, groups, m)
        lib = np.maximum(50, np.round(r.lognormal(np.log(reads), 0.4, m))).astype(np.int64)
        cells = np.repeat(np.arange(m), lib)
        u = r.random(cells.size)
        genes = np.empty(cells.size, np.int64)
        gr = grp[cells]
        for g in range(groups):
            s = gr == g
            genes[s] = np.searchsorted(cdfs[g], u[s])
        np.minimum(genes, d - 1, out=genes)
        key, cnt = np.unique(cells * d + genes, return_counts=True)
        X = sp.csr_matrix((cnt.astype(np.float32), (key // d, key % d)), shape=(m, d))
        X.sum_duplicates()
        tot = np.asarray(X.sum(axis=1)).ravel()
        X = sp.csr_matrix(sp.diags(1e4 / tot) @ X)
        X.data = np.log1p(X.data).astype(np.float32)
        X.indices = X.indices.astype(np.int32)
        X.indptr = X.indptr.astype(np.int64)
        if first:
            ad.io.write_elem(f, "X", X)
            first = False
        else:
            ad.io.sparse_dataset(f["X"]).append(X)
        print(a + m, X.nnz, round(time.time() - t0, 1), flush=True)
    ad.io.write_elem(f, "obs", pd.DataFrame(index=[f"c{i}" for i in range(n)]))
    ad.io.write_elem(f, "var", pd.DataFrame(index=[f"g{j}" for j in range(d)]))
    ad.io.write_elem(f, "uns", {})
    for k in ("obsm", "varm", "obsp", "varp", "layers"):
        f.create_group(k)
print("done", round(time.time() - t0, 1))
