import sys

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, sys.argv[1] + "/src")
import glfs
from glfs.scores._moran import graph_autocorrelation

print(glfs.__file__)
rng = np.random.default_rng(3)
n, d = 3000, 40
X = rng.lognormal(0, 1, (n, d)) * (rng.random((n, d)) < rng.uniform(0.02, 1.0, d))
X[:, 5] = 7.0
X[:100, 6] = 2.0
W = glfs.similarity_graph(X, n_neighbors=8) if hasattr(glfs, "similarity_graph") else None
out = {}
for name, A in [
    ("dense", X),
    ("csr32", sp.csr_matrix(X.astype(np.float32))),
    ("csr64", sp.csr_matrix(X)),
    ("csc32", sp.csc_matrix(X.astype(np.float32))),
]:
    for wname, G in [("W", W), ("Wself", W + sp.diags(rng.random(n)))]:
        out[f"ls_{name}_{wname}"] = glfs.laplacian_score(A, G, block_size=3)
    r = graph_autocorrelation(A, W, block_size=3)
    out[f"mi_{name}"] = np.stack([r.moran_i, r.z, r.kurtosis])
np.savez(sys.argv[2], **out)
