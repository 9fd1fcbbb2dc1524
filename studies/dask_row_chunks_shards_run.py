"""Issue 42: glfs.tl.select(adata, "laplacian_score", 2000) with its own graph on a LocalCluster, X read lazily
in row chunks; worker peaks (VmHWM, sampled RSS), restarts, client peak; scores saved for the comparison."""

import argparse
import json
import logging
import threading
import time

import numpy as np


def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 2**20
    return None


def rss():
    import psutil

    return psutil.Process().memory_info().rss


def main():
    global a
    p = argparse.ArgumentParser()
    p.add_argument("h5ad")
    p.add_argument("--chunk", type=int, default=50_000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--mem", default="2GiB")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", required=True)
    p.add_argument("--single", action="store_true", help="no cluster: the single process")
    p.add_argument("--graph", help="score on this saved graph (npz) instead of the own graph")
    a = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    import anndata as ad
    import h5py
    import scipy.sparse as sp

    import glfs

    f = h5py.File(a.h5ad, "r")
    X = ad.experimental.read_elem_lazy(f["X"], chunks=(a.chunk, -1))
    adata = ad.AnnData(X=X, obs=ad.io.read_elem(f["obs"]), var=ad.io.read_elem(f["var"]))
    res = {"h5ad": a.h5ad, "shape": list(X.shape), "chunk": a.chunk, "single": a.single}
    client = None
    peaks, stop = {}, threading.Event()
    if not a.single:
        from dask.distributed import Client, LocalCluster

        cluster = LocalCluster(
            n_workers=a.workers, threads_per_worker=a.threads, memory_limit=a.mem, dashboard_address=None
        )
        client = Client(cluster)
        res.update(workers=a.workers, mem=a.mem, threads=a.threads)
        start_workers = set(client.scheduler_info()["workers"])

        def poll():
            while not stop.is_set():
                try:
                    for w, rss in client.run(rss).items():
                        peaks[w] = max(peaks.get(w, 0), rss / 2**30)
                except Exception:
                    pass
                stop.wait(0.5)

        threading.Thread(target=poll, daemon=True).start()
    t0 = time.perf_counter()
    try:
        if a.graph:
            W = sp.load_npz(a.graph)
            s = glfs.laplacian_score(adata.X, W)
            scores = s
        else:
            glfs.tl.select(adata, "laplacian_score", 2000)
            scores = adata.var["laplacian_score_score"].to_numpy()
            res["var_columns"] = list(adata.var.columns)
            W = adata.obsp.get("glfs_connectivities")
            if W is not None:
                sp.save_npz(a.out + ".graph.npz", sp.csr_matrix(W))
        res["ok"] = True
    except Exception as e:
        res["ok"] = False
        res["error"] = f"{type(e).__name__}: {e}"[:2000]
        scores = None
    res["seconds"] = round(time.perf_counter() - t0, 1)
    res["client_peak_gb"] = round(hwm(), 3)
    if client is not None:
        stop.set()
        res["worker_rss_peak_gb"] = {w: round(v, 3) for w, v in peaks.items()}
        res["worker_hwm_gb"] = {w: round(v, 3) for w, v in client.run(hwm).items()}
        now = set(client.scheduler_info()["workers"])
        res["workers_replaced"] = len(now - start_workers)
    if scores is not None:
        np.save(a.out + ".scores.npy", np.asarray(scores))
    print(json.dumps(res), flush=True)
    open(a.out + ".json", "w").write(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
