"""RSS of a dask worker process: fresh, and after scoring a small row-chunked X (every kernel of the
Laplacian score and Moran's I loaded), with no data held."""

import gc

import dask.array as da
import numpy as np
import scipy.sparse as sp
from dask.distributed import Client, LocalCluster

import glfs
from glfs.scores._moran import graph_autocorrelation


def rss(dask_worker=None):
    gc.collect()
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 2**20


if __name__ == "__main__":
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, memory_limit="2GiB", dashboard_address=":0") as cl,
        Client(cl) as c,
    ):
        print("fresh worker", round(list(c.run(rss).values())[0], 3), "GiB")
        n, d = 20000, 300
        rng = np.random.default_rng(0)
        X = sp.random(n, d, density=0.1, format="csr", random_state=rng, dtype=np.float32)
        X[:, 0] = 1.0 + rng.random((n, 1))
        X = sp.csr_matrix(X)
        W = glfs.similarity_graph(X.toarray(), n_neighbors=5)
        Xd = da.from_array(X, chunks=(5000, -1), asarray=False)
        glfs.laplacian_score(Xd, W)
        print("after laplacian_score", round(list(c.run(rss).values())[0], 3), "GiB")
        graph_autocorrelation(Xd, W)
        print("after graph_autocorrelation", round(list(c.run(rss).values())[0], 3), "GiB")
        info = c.sync(c.scheduler.identity, n_workers=-1)["workers"]
        print("scheduler's measure", [round(w["metrics"]["memory"] / 2**30, 3) for w in info.values()])
