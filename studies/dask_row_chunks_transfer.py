import numpy as np
import scipy.sparse as sp


def gen(block_info=None):
    (r0, r1), (c0, c1) = block_info[None]["array-location"]
    rng = np.random.default_rng(r0)
    m, k = r1 - r0, 40
    cols = np.sort(rng.integers(0, c1 - c0, (m, k)), axis=1)
    X = sp.csr_matrix(
        (rng.integers(1, 6, m * k).astype(np.float32), cols.ravel(), np.arange(0, m * k + 1, k)), shape=(m, c1 - c0)
    )
    X.sum_duplicates()
    return X


def log(dask_worker):
    return [
        (list(e["keys"]) if isinstance(e["keys"], dict) else e["keys"], e["total"])
        for e in dask_worker.transfer_incoming_log
    ]


if __name__ == "__main__":
    import dask.array as da
    import distributed

    from glfs.scores._genewise import laplacian_score

    n, d, chunk = 40000, 400, 5000
    X = da.map_blocks(
        gen, chunks=((chunk,) * (n // chunk), (d,)), dtype=np.float32, meta=sp.csr_matrix((0, 0), dtype=np.float32)
    )
    rng = np.random.default_rng(1)
    rows = np.repeat(np.arange(n), 5)
    cols = rng.integers(0, n, rows.size)
    W = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    W = W + W.T
    W.data[:] = 1.0
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cl,
        distributed.Client(cl) as c,
    ):
        s = laplacian_score(X, W)
        moved = c.run(log)
    name = X.name
    chunks_moved = sum(1 for w in moved.values() for keys, tot in w for k in keys if name in str(k))
    total = sum(tot for w in moved.values() for keys, tot in w)
    print(
        "chunk keys moved:",
        chunks_moved,
        "bytes moved MB:",
        round(total / 2**20, 1),
        "matrix MB:",
        round(n * 40 * 8 / 2**20, 1),
    )
