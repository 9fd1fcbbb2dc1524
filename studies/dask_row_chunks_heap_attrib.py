"""Issue 42 (studies/dask-row-chunks.md, "The freed heap"): which task kind runs when a worker's memory peaks. 2
workers of 1 thread and 2 GiB (MEM), the Laplacian score alone on a row-chunked .h5ad (chunks of 50,000 rows), a
random 4-neighbour graph; each worker samples itself every 20 ms into poll-TAG-PID.txt (POLL_TAG): time, RSS,
dask's data in memory, tasks, incoming transfer bytes, the running task's kind.  ROWS: the first ROWS cells.
Usage: POLL_TAG=10m python dask_row_chunks_heap_attrib.py a10m.h5ad out  (out.json, out.npy: the scores)."""

import json
import logging
import os
import sys
import threading
import time

import anndata as ad
import dask
import h5py
import numpy as np
import scipy.sparse as sp
from dask.distributed import Client, LocalCluster, WorkerPlugin

import glfs


class Poll(WorkerPlugin):
    name = "poll"

    def setup(self, worker):
        import psutil

        self.w = worker
        self.p = psutil.Process()
        self.by_kind = {}
        self.series = []
        self.stop = threading.Event()
        self.out = open(
            f"poll-{os.environ.get('POLL_TAG', 'x')}-{os.getpid()}.txt", "w", buffering=1 << 16
        )
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        last = 0.0
        while not self.stop.wait(0.02):
            try:
                rss = self.p.memory_info().rss
                st = self.w.state
                inmem = st.nbytes - self.w.data.spilled_total.memory
                kinds = sorted({str(ts.key).split(" ", 1)[-1].rsplit("-", 2)[0] for ts in list(st.executing)}) or [
                    "idle"
                ]
                kind = "+".join(kinds)
                rec = (rss, inmem, len(st.tasks), st.transfer_incoming_bytes)
                self.out.write(f"{time.time():.3f} {rss} {inmem} {rec[2]} {rec[3]} {kind.replace(' ', '_')}\n")
                if rss > self.by_kind.get(kind, (0,))[0]:
                    self.by_kind[kind] = rec
                now = time.time()
                if now - last > 1.0:
                    self.series.append((round(now, 1), kind) + rec)
                    last = now
            except Exception:
                pass

    def teardown(self, worker):
        self.stop.set()


def report(dask_worker):
    p = dask_worker.plugins["poll"]
    return {"by_kind": p.by_kind, "series": p.series}


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    for name in ("distributed.core", "distributed.scheduler"):
        logging.getLogger(name).setLevel(logging.WARNING)
    path, out = sys.argv[1], sys.argv[2]
    f = h5py.File(path, "r")
    X = ad.experimental.read_elem_lazy(f["X"], chunks=(50_000, -1))
    if os.environ.get("ROWS"):  # the first ROWS cells (whole row chunks of 50,000)
        X = X[: int(os.environ["ROWS"])]
    n = X.shape[0]
    rng = np.random.default_rng(0)
    rows = np.repeat(np.arange(n, dtype=np.int64), 4)
    cols = rng.integers(0, n, rows.size)
    keep = rows != cols
    W = sp.csr_matrix((rng.random(keep.sum()) + 0.1, (rows[keep], cols[keep])), shape=(n, n))
    W = W.maximum(W.T).tocsr()
    del rows, cols, keep
    dask.config.set({"glfs.stall-timeout": "20 minutes"})
    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, memory_limit=os.environ.get("MEM", "2GiB"), dashboard_address=":0"
    )
    client = Client(cluster)
    client.register_plugin(Poll())
    t0 = time.perf_counter()
    try:
        s = glfs.laplacian_score(X, W)
        res = {"ok": True}
        np.save(out + ".npy", np.asarray(s))
    except Exception as e:
        res = {"ok": False, "error": f"{type(e).__name__}: {e}"[:1500]}
    res["seconds"] = round(time.perf_counter() - t0, 1)

    def hwm():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM"):
                return round(int(line.split()[1]) / 2**20, 3)

    res["worker_hwm_gb"] = list(client.run(hwm).values())
    res["workers"] = client.run(report)
    for a, r in res["workers"].items():
        print(a)
        for k, v in sorted(r["by_kind"].items(), key=lambda kv: -kv[1][0]):
            print(f"  {k:40s} rss {v[0] / 2**30:.3f} inmem {v[1] / 2**30:.3f} tasks {v[2]} incoming {v[3] / 2**30:.3f}")
    print(json.dumps({k: v for k, v in res.items() if k != "workers"}), flush=True)
    open(out + ".json", "w").write(json.dumps(res))


if __name__ == "__main__":
    main()
