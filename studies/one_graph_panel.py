"""Overlap of the top 500 genes of glfs.tl.select(adata, method, 500) with X in memory, backed and dask."""

import sys
import time
import warnings

import anndata as ad
import dask.array as da
import numpy as np
import scipy.sparse as sp

import glfs

warnings.simplefilter("ignore")
src, tmp = sys.argv[1], sys.argv[2]
a = ad.read_h5ad(src)
X = sp.csr_matrix(a.X, dtype=np.float32)
X = sp.diags(1e4 / np.maximum(np.asarray(X.sum(1)).ravel(), 1)) @ X  # normalize_total(1e4) + log1p
X = sp.csr_matrix(X, dtype=np.float32)
X.data = np.log1p(X.data)
ad.AnnData(X=X).write_h5ad(tmp)
for method in ("laplacian_score", "graph_moran"):
    sel = {}
    for name in ("memory", "backed", "dask"):
        b = {
            "memory": lambda: ad.AnnData(X=X.copy()),
            "backed": lambda: ad.read_h5ad(tmp, backed="r"),
            "dask": lambda: ad.AnnData(X=da.from_array(X, chunks=(1000, X.shape[1]))),
        }[name]()
        t = time.perf_counter()
        kw = {} if method == "laplacian_score" else {"obsp": None}
        try:
            if method == "graph_moran" and name != "memory":  # own graph: streams on a given graph only
                b.obsp["g"] = glfs.similarity_graph(b.X)
                glfs.tl.select(b, "laplacian_score", 500, key_added="ls")
                glfs.tl.select(b, method, 500, obsp="g")
            else:
                glfs.tl.select(b, method, 500)
        except Exception as e:
            print(method, name, "failed:", type(e).__name__, str(e)[:150])
            continue
        sel[name] = set(np.flatnonzero(b.var[method].to_numpy()))
        p = b.uns[method]["params"]
        print(method, name, f"{time.perf_counter() - t:.1f} s", {k: v for k, v in p.items() if k.startswith("graph")})
    for name in ("backed", "dask"):
        if name in sel and "memory" in sel:
            print(method, f"overlap memory/{name} at 500:", len(sel["memory"] & sel[name]) / 500)
