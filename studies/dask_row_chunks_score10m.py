"""Issue 42 diagnosis: the score step alone at 10^7 cells (a random 4-neighbour graph in place of the own graph),
on the same LocalCluster; the scheduler's task states every 20 s."""
import collections, json, logging, sys, threading, time
import numpy as np, scipy.sparse as sp
import anndata as ad, h5py, dask
from dask.distributed import Client, LocalCluster
import glfs

def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("distributed.core").setLevel(logging.WARNING)
    logging.getLogger("distributed.scheduler").setLevel(logging.WARNING)
    n = 10_000_000
    rng = np.random.default_rng(0)
    t = time.time()
    rows = np.repeat(np.arange(n, dtype=np.int64), 4)
    cols = rng.integers(0, n, rows.size)
    keep = rows != cols
    W = sp.csr_matrix((rng.random(keep.sum()).astype(np.float64) + 0.1, (rows[keep], cols[keep])), shape=(n, n))
    W = W.maximum(W.T).tocsr()
    del rows, cols, keep
    print("graph", W.nnz, round(time.time() - t, 1), flush=True)
    f = h5py.File(sys.argv[1], "r")
    X = ad.experimental.read_elem_lazy(f["X"], chunks=(50_000, -1))
    dask.config.set({"glfs.stall-timeout": sys.argv[2] if len(sys.argv) > 2 else "20 minutes"})
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="2GiB", dashboard_address=":0")
    client = Client(cluster)
    stop = threading.Event()

    def states(dask_scheduler):
        return dict(collections.Counter(ts.state for ts in dask_scheduler.tasks.values()))

    def poll():
        while not stop.wait(20):
            try:
                s = client.run_on_scheduler(states)
                w = {a[-5:]: (v.get("status"), round(v["metrics"]["memory"] / 2**30, 2), v["metrics"].get("task_counts")) for a, v in client.scheduler_info()["workers"].items()}
                print(time.strftime("%H:%M:%S"), "scheduler", s, "workers", w, flush=True)
            except Exception as e:
                print("poll failed", e, flush=True)

    threading.Thread(target=poll, daemon=True).start()
    t0 = time.perf_counter()
    try:
        s = glfs.laplacian_score(X, W)
        out = {"ok": True, "seconds": round(time.perf_counter() - t0, 1)}
        np.save("/work/scratch/score10m.npy", np.asarray(s))
    except Exception as e:
        out = {"ok": False, "error": f"{type(e).__name__}: {e}"[:1500], "seconds": round(time.perf_counter() - t0, 1)}
    stop.set()
    def hwm():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 2**20
    out["worker_hwm_gb"] = client.run(hwm)
    print(json.dumps(out), flush=True)

if __name__ == '__main__':
    main()
