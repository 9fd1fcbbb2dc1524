"""Time of map_gene_blocks on a row-chunked X with many pieces (row chunks x gene blocks)."""
import sys, time
import numpy as np, scipy.sparse as sp, dask.array as da
from dask.distributed import Client, LocalCluster
from glfs.core._cluster import map_gene_blocks
from glfs.core._validation import check_X

def colsum(block):
    return np.asarray(block.sum(axis=0)).ravel()

if __name__ == "__main__":
    chunks, genes = int(sys.argv[1]), int(sys.argv[2])
    X = sp.random(chunks * 20, genes, density=0.05, format="csr", random_state=0, dtype=np.float64)
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cl, Client(cl) as client:
        ooc = check_X(da.from_array(X, chunks=(20, genes), asarray=False), lazy=True)
        parts = [slice(j, j + 1) for j in range(genes)]
        t = time.perf_counter()
        res = map_gene_blocks(ooc, parts, lambda b: colsum(b), {}, client, "colsum")
        dt = time.perf_counter() - t
        ok = np.allclose(np.concatenate(res), np.asarray(X.sum(axis=0)).ravel())
        print(f"{chunks} chunks x {genes} blocks = {chunks * genes} pieces: {dt:.1f} s, equal {ok}", flush=True)
