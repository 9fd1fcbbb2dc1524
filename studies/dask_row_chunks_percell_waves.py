"""Issue 42: the score step alone on a row-chunked .h5ad (a random 4-neighbour graph), 2 workers of 2 GiB:
seconds, waves, worker peaks, restarts, disk growth; scores saved."""

import json
import logging
import os
import shutil
import sys
import threading
import time

import anndata as ad
import dask
import h5py
import numpy as np
import scipy.sparse as sp
from dask.distributed import Client, LocalCluster

import glfs
from glfs.core._cluster import workers_info


class Count(logging.Handler):
    waves = None
    shards = None
    plan = None

    def emit(self, r):
        m = r.getMessage()
        if "waves, each of at most" in m:
            Count.waves = m
        if "row shards of at most" in m:
            Count.shards = m
        if "gene blocks of at most" in m:
            Count.plan = m


def _dir_bytes(paths):
    import os

    total = 0
    for p in paths:
        for root, _, files in os.walk(p):
            for f in files:
                try:
                    total += os.path.getsize(os.path.join(root, f))
                except OSError:
                    pass
    return total


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger().addHandler(Count())
    for name in ("distributed.core", "distributed.scheduler"):
        logging.getLogger(name).setLevel(logging.WARNING)
    path, out = sys.argv[1], sys.argv[2]
    if len(sys.argv) > 3:
        dask.config.set({"glfs.wave-bytes": sys.argv[3]})
    if os.environ.get("BASE"):  # diagnostic: the planner's floor for the worker process
        import glfs.core._cluster as _c

        _c.WORKER_BASE_BYTES = int(float(os.environ["BASE"]) * 2**30)
    f = h5py.File(path, "r")
    X = ad.experimental.read_elem_lazy(f["X"], chunks=(50_000, -1))
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
    started = set(workers_info(client))
    dirs = list(client.run(lambda dask_worker: dask_worker.local_directory).values())
    peak = [0]
    stop = threading.Event()

    mem = {}
    unmanaged = {}

    def poll():
        while not stop.wait(0.5):
            peak[0] = max(peak[0], _dir_bytes(dirs))
            try:
                info = client.sync(client.scheduler.identity, n_workers=-1)["workers"]
            except Exception:
                continue
            for addr, w in info.items():
                m = w.get("metrics", {})
                cur = (m.get("memory", 0), m.get("managed_bytes", 0), m.get("spilled_bytes", {}).get("memory", 0))
                if cur[0] > mem.get(addr, (0,))[0]:
                    mem[addr] = cur
                un = cur[0] - (cur[1] - cur[2])  # process memory beyond dask's data held in memory
                if un > unmanaged.get(addr, 0):
                    unmanaged[addr] = un

    threading.Thread(target=poll, daemon=True).start()
    t0 = time.perf_counter()
    try:
        s = glfs.laplacian_score(X, W)
        res = {"ok": True}
        np.save(out + ".npy", np.asarray(s))
    except Exception as e:
        res = {"ok": False, "error": f"{type(e).__name__}: {e}"[:1500]}
    res["seconds"] = round(time.perf_counter() - t0, 1)
    stop.set()

    def hwm():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM"):
                return round(int(line.split()[1]) / 2**20, 3)

    res.update(
        cells=n,
        waves=Count.waves,
        shards=Count.shards,
        plan=Count.plan,
        mem=os.environ.get("MEM", "2GiB"),
        wave_bytes=sys.argv[3] if len(sys.argv) > 3 else None,
        worker_hwm_gb=list(client.run(hwm).values()),
        workers_replaced=len(set(workers_info(client)) - started),
        spill_dir_peak_gb=round(peak[0] / 1e9, 2),
        unmanaged_peak_gb=[round(v / 2**30, 3) for v in unmanaged.values()],
        at_process_peak_gb={a: [round(v / 2**30, 3) for v in t] for a, t in mem.items()},
        free_disk_gb=round(shutil.disk_usage("/work").free / 1e9, 1),
    )
    print(json.dumps(res), flush=True)
    open(out + ".json", "w").write(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
