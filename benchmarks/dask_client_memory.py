"""Issue 31: what the client of a dask.distributed LocalCluster holds while the library's own graph and
the Laplacian score of a dask X run on the cluster: its peak resident memory (VmHWM) after each step,
beside each worker's, in one fresh process per run.

X: an .h5ad of ``atlas_scale.py``'s log-normalised simulated counts (CSR float32), read as a scanpy
user would (``anndata.experimental.read_elem_lazy``, row chunks of ``--chunk`` cells), or ``--shards``:
the same cells as shards stored by genes (CSC, written from the .h5ad by ``--make-shards``), read as
2-D tiles of a shard x ``--gene-chunk`` genes (docs/cluster.md, "How to store X").  ``--nprobe 1``
probes one IVF cell per query instead of sqrt(nlist): the same objects on the client (one neighbour
list per cell), a lower recall, for a search that fits a loaded machine.  The cluster: ``--workers`` worker processes of 1 thread and ``--worker-mem-gb`` each.  The
library is whatever ``glfs`` imports (PYTHONPATH), so one script measures the tree before and after
a change.

    PYTHONPATH=src flock /work/tools/mem7.lock nice -n 10 python benchmarks/dask_client_memory.py \\
        --h5ad /tmp/glfs_atlas/lognorm_1000000_6.3.h5ad --chunk 50000 --label after

Prints one JSON line and appends it to benchmarks/results/dask_client_memory.tsv (and redraws the .md).
The client's peak is read before anything else (the recall@5 of the graph against the exact search
of 2,000 sampled cells is computed last, on the scores gathered then).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from pathlib import Path

import numpy as np
from bench.procfs import status_kb, vm_hwm_gb  # benchmarks/ is the script's directory, so on sys.path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
TOP = 2000


def _rss_gb():
    return status_kb("VmRSS") / 2**20


def _lazy_x(a):
    import anndata as ad
    import h5py

    if a.shards:  # 2-D tiles: shards of cells stored by genes (bench.atlas_store's layout)
        from bench.atlas_store import open_store

        return open_store(a.shards, a.gene_chunk)
    return ad.experimental.read_elem_lazy(h5py.File(a.h5ad, "r")["X"], chunks=(a.chunk, -1))


def make_shards(h5ad: Path, out: Path, shard: int) -> None:
    """The CSR .h5ad's cells as shards of ``shard`` cells, each stored by genes (CSC), for ``--shards``."""
    import anndata as ad
    import h5py
    import scipy.sparse as sp

    out.mkdir(parents=True, exist_ok=True)
    with h5py.File(h5ad, "r") as f:
        X = ad.io.sparse_dataset(f["X"])
        for s, a in enumerate(range(0, X.shape[0], shard)):
            path = out / f"shard_{s:04d}.h5ad"
            if not path.exists():
                part = sp.csc_matrix(X[a : a + shard])
                ad.AnnData(X=part).write_h5ad(path.with_suffix(".part"))
                path.with_suffix(".part").rename(path)


def _capture(store):
    """Keep the handle of the scores and the neighbour pairs of the sharded search (this tree's route)."""
    import glfs.graph._neighbors as nb

    inner = getattr(nb, "search_on_cluster", None)
    if inner is None:  # the tree before: no recall
        return

    def wrapped(Z, *args, **kw):
        out = inner(Z, *args, **kw)
        store.update(Z=Z, rows=out[0], cols=out[1])
        return out

    nb.search_on_cluster = wrapped


def _recall(Z, rows, cols, k=5, m=2000, seed=0):
    """recall@k of the search's k neighbours against the exact k nearest on the scores Z, m sampled cells."""
    q = np.random.default_rng(seed).choice(Z.shape[0], min(m, Z.shape[0]), replace=False)
    Z64 = Z.astype(np.float64)
    sq = (Z64**2).sum(1)
    start = np.searchsorted(rows, np.arange(Z.shape[0] + 1))
    hits = 0
    for a in range(0, q.size, 20):
        part = q[a : a + 20]
        d2 = sq[None, :] - 2.0 * Z64[part] @ Z64.T + sq[part][:, None]
        d2[np.arange(part.size), part] = np.inf
        exact = np.argpartition(d2, k, axis=1)[:, :k]
        for i, row in enumerate(part):
            hits += len(set(cols[start[row] : start[row + 1]]) & set(exact[i]))
    return hits / (q.size * k)


def run(a) -> dict:
    from distributed import Client, LocalCluster

    import glfs
    import glfs.graph._neighbors as nb

    if a.nprobe:
        nb.ivf_nprobe = lambda nlist, n_dims=None: min(nlist, a.nprobe)  # the same probes on any components
    if a.stream_values:  # smaller gene blocks for workers with little memory
        import glfs.core._out_of_core as ooc

        ooc.STREAM_VALUES = a.stream_values
    out = {
        "label": a.label,
        "workers": a.workers,
        "worker_mem_gb": a.worker_mem_gb,
        "chunk": a.chunk,
        "gene_chunk": a.gene_chunk if a.shards else None,
        "store": "CSC shards" if a.shards else "h5ad rows",
        "nprobe": a.nprobe,
        "no_queuing": a.no_queuing,
        "stream_values": a.stream_values,
        "load_before": round(os.getloadavg()[0], 1),
    }
    if a.no_queuing:  # dask's root-task queuing off: a 1-thread worker hung with 2 tasks waiting on queued roots
        import dask

        dask.config.set({"distributed.scheduler.worker-saturation": float("inf")})
    cluster = LocalCluster(
        n_workers=a.workers,
        threads_per_worker=1,
        processes=True,
        memory_limit=f"{a.worker_mem_gb}GiB",
        dashboard_address=":0",
    )
    client = Client(cluster)
    client.run(lambda: os.nice(10))
    store = {}
    _capture(store)
    X = _lazy_x(a)
    out.update(n_cells=int(X.shape[0]), n_genes=int(X.shape[1]), client_start_gb=round(_rss_gb(), 3))
    t0 = time.perf_counter()
    W = glfs.similarity_graph(X)
    t1 = time.perf_counter()
    out["client_peak_graph_gb"] = round(vm_hwm_gb(), 3)
    s = glfs.laplacian_score(X, W)
    t2 = time.perf_counter()
    out["client_peak_gb"] = round(vm_hwm_gb(), 3)
    out["worker_peak_gb"] = [round(v, 3) for v in client.run(vm_hwm_gb).values()]
    out.update(
        graph_s=round(t1 - t0, 1),
        score_s=round(t2 - t1, 1),
        total_s=round(t2 - t0, 1),
        load_after=round(os.getloadavg()[0], 1),
    )
    top = np.argsort(s, kind="stable")[:TOP]
    np.save(Path(a.out_dir) / f"top_{a.label}_{X.shape[0]}.npy", top)
    if "Z" in store:
        out["recall5"] = round(_recall(store["Z"].gather(), store["rows"], store["cols"]), 4)
    client.close()
    cluster.close()
    return out


def write(row):
    import pandas as pd

    row = dict(row, date=time.strftime("%Y-%m-%d %H:%M"))
    row["worker_peak_gb"] = json.dumps(row["worker_peak_gb"])
    tsv = RESULTS / "dask_client_memory.tsv"
    df = pd.DataFrame([row])
    if tsv.exists():
        df = pd.concat([pd.read_csv(tsv, sep="\t"), df], ignore_index=True)
    df.to_csv(tsv, sep="\t", index=False)
    md = [
        "# The client's memory while the graph and the Laplacian score run on a LocalCluster (issue 31)",
        "",
        "`benchmarks/dask_client_memory.py`: the library's own graph (5-NN heat kernel on 50 PCs, faiss IVF) and "
        "the Laplacian score of a dask X, each run a fresh process. Memory in GB: the client's VmRSS once the "
        "cluster is up (`client_start_gb`), its VmHWM after the graph and after the score, each worker's VmHWM "
        "at the end. Times in s; 2 cores shared with other work; load = 1-minute load average. `label`: the "
        "tree measured (`before`: main at fda418d, `after`: this change).",
        "",
        df.to_markdown(index=False),
    ]
    (RESULTS / "dask_client_memory.md").write_text("\n".join(md) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--h5ad", type=Path)
    ap.add_argument("--shards", type=Path, help="a directory of CSC .h5ad shards (2-D tiles, see --gene-chunk)")
    ap.add_argument(
        "--make-shards", type=Path, help="write --h5ad's cells as CSC shards of --chunk cells here, then stop"
    )
    ap.add_argument("--nprobe", type=int, default=None, help="IVF cells probed per query (default: the library's)")
    ap.add_argument("--chunk", type=int, default=50_000)
    ap.add_argument("--gene-chunk", type=int, default=1000)
    ap.add_argument("--stream-values", type=int, default=None, help="glfs.core._out_of_core.STREAM_VALUES")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-queuing", action="store_true", help="distributed.scheduler.worker-saturation = inf")
    ap.add_argument("--worker-mem-gb", type=float, default=2.5)
    ap.add_argument("--label", default="after")
    ap.add_argument("--out-dir", default=os.environ.get("TMPDIR", "/tmp"))
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    if a.make_shards:
        make_shards(a.h5ad, a.make_shards, a.chunk)
        return
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("glfs").setLevel(logging.INFO)  # the steps' progress on stderr
    row = run(a)
    print(json.dumps(row), flush=True)
    if not a.no_write:
        write(row)


if __name__ == "__main__":
    main()
