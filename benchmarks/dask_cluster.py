"""Issue 31: the own graph + Laplacian score of a dask X on a dask.distributed LocalCluster of this machine,
beside the same dask X streamed through one process (no client), in the same run.

Data: ``atlas_scale.py``'s simulated counts (10 groups, log-normal library sizes), log-normalised, CSR
float32 in an .h5ad, read as a scanpy user would: ``anndata.experimental.read_elem_lazy`` in row chunks of
``--chunk`` cells.  Each run is a fresh Python process (``--worker``): ``single`` (no client: every block
streams through this process, the route before issue 31) and ``cluster-<k>`` (a LocalCluster of k worker
processes, 1 thread each, ``--worker-mem-gb`` each).  Each reports the wall time of the graph
(``glfs.similarity_graph``, the library's default 5-NN heat kernel on 50 PCs) and of the score, the
client's peak resident memory (VmHWM), each worker's (VmHWM, read on the workers at the end), the
compute seconds of each kind of task (``distributed.get_task_stream``) and the recall@5 of the IVF
candidates against the exact search on the same components (2,000 sampled cells).

    nice -n 10 python benchmarks/dask_cluster.py --cells 200000 --genes 20000

Writes benchmarks/results/dask_cluster.tsv (a row per run, appended) and dask_cluster.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.procfs import vm_hwm_gb  # benchmarks/ is the script's directory, so on sys.path
from bench.simulated import simulate_atlas

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
TOP = 2000


def _capture_candidates(store):
    """Wrap glfs.graph.sharded.search_shards / faiss' search route to keep the components and candidates."""
    import glfs.graph.sharded as sharded

    inner = sharded.search_shards

    def wrapped(index, Z32, k_search, client, **kw):
        store["Z"] = Z32
        store["ind"] = inner(index, Z32, k_search, client, **kw)
        return store["ind"]

    sharded.search_shards = wrapped


def _recall(store, k=5, m=2000, seed=0):
    """recall@k of the candidates' k nearest others against the exact k nearest, on m sampled cells."""
    Z, ind = store.get("Z"), store.get("ind")
    if Z is None:
        return None
    q = np.random.default_rng(seed).choice(Z.shape[0], min(m, Z.shape[0]), replace=False)
    Q = Z[q].astype(np.float64)
    sq = (Z.astype(np.float64) ** 2).sum(1)
    hits = 0
    for a in range(0, q.size, 200):
        part = q[a : a + 200]
        d2 = sq[None, :] - 2.0 * Q[a : a + 200] @ Z.T.astype(np.float64) + sq[part][:, None]
        d2[np.arange(part.size), part] = np.inf
        exact = np.argpartition(d2, k, axis=1)[:, :k]
        for i, row in enumerate(part):
            cand = [c for c in ind[row] if c != row and c >= 0][:k]
            hits += len(set(cand) & set(exact[i]))
    return hits / (q.size * k)


def run(kind: str, path: Path, chunk: int, worker_mem_gb: float) -> dict:
    import anndata as ad
    import h5py
    import scipy.sparse as sp  # noqa: F401

    import glfs

    out = {"run": kind}
    store = {}
    f = h5py.File(path, "r")
    X = ad.experimental.read_elem_lazy(f["X"], chunks=(chunk, -1))
    out.update(n_cells=int(X.shape[0]), n_genes=int(X.shape[1]), chunk=chunk)
    client = cluster = None
    if kind.startswith("cluster"):
        from distributed import Client, LocalCluster

        k = int(kind.split("-")[1])
        cluster = LocalCluster(n_workers=k, threads_per_worker=1, processes=True, memory_limit=f"{worker_mem_gb}GiB",
                               dashboard_address=":0")
        client = Client(cluster)
        client.run(lambda: os.nice(10))
        _capture_candidates(store)
        from distributed import get_task_stream

        stream = get_task_stream(client)
        stream.__enter__()
    t0 = time.perf_counter()
    W = glfs.similarity_graph(X)
    t1 = time.perf_counter()
    s = glfs.laplacian_score(X, W)
    t2 = time.perf_counter()
    out.update(graph_s=round(t1 - t0, 1), score_s=round(t2 - t1, 1), total_s=round(t2 - t0, 1))
    out["top"] = np.argsort(s, kind="stable")[:TOP].tolist()
    if client is not None:
        stream.__exit__(None, None, None)
        per = {}
        for t in stream.data:
            name = t["key"][0] if isinstance(t["key"], tuple) else t["key"]
            name = name.split("-")[0]  # "glfs laplacian_score", "rechunk", "make_dask_chunk", ...
            for ss in t["startstops"]:
                if ss["action"] == "compute":
                    c, s_ = per.get(name, (0, 0.0))
                    per[name] = (c + 1, s_ + ss["stop"] - ss["start"])
        out["tasks"] = {k_: [c, round(s_, 2)] for k_, (c, s_) in sorted(per.items())}
        out["worker_peak_gb"] = [round(v, 3) for v in client.run(vm_hwm_gb).values()]
        out["recall5"] = _recall(store)
        client.close()
        cluster.close()
    out["client_peak_gb"] = round(vm_hwm_gb(), 3)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=200_000)
    ap.add_argument("--genes", type=int, default=20_000)
    ap.add_argument("--lib-loc", type=float, default=6.3)
    ap.add_argument("--chunk", type=int, default=50_000)
    ap.add_argument("--worker-mem-gb", type=float, default=1.0)
    ap.add_argument("--runs", default="single,cluster-1,cluster-2")
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "glfs-dask-bench")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--keep", action="store_true", help="keep the simulated files")
    ap.add_argument("--worker")
    a = ap.parse_args(argv)
    a.work.mkdir(parents=True, exist_ok=True)
    if a.worker:
        print("RESULT " + json.dumps(run(a.worker, Path(a.work) / "lognorm.h5ad", a.chunk, a.worker_mem_gb)))
        return
    facts = simulate_atlas(a.cells, a.genes, a.work, a.lib_loc)
    log_f = next(a.work.glob(f"lognorm_{a.cells}_*.h5ad"))
    (a.work / "lognorm.h5ad").unlink(missing_ok=True)
    (a.work / "lognorm.h5ad").symlink_to(log_f)
    rows = []
    try:
        for kind in a.runs.split(","):
            load0 = os.getloadavg()[0]
            cmd = [sys.executable, __file__, "--worker", kind, "--work", str(a.work), "--chunk", str(a.chunk),
                   "--worker-mem-gb", str(a.worker_mem_gb)]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout, check=False)
                (a.work / f"{kind}.log").write_text(p.stderr)
                lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
                errors = [ln for ln in p.stderr.splitlines() if "Error" in ln] or p.stderr.strip().splitlines()
                res = json.loads(lines[-1][7:]) if lines else {"run": kind, "note": (errors or ["no output"])[-1][:300]}
            except subprocess.TimeoutExpired:
                res = {"run": kind, "note": f"stopped after {a.timeout} s"}
            res.update(nnz=facts["nnz"], chunk=a.chunk, worker_mem_gb=a.worker_mem_gb, load_before=round(load0, 1),
                       load_after=round(os.getloadavg()[0], 1))
            print(json.dumps({k: v for k, v in res.items() if k != "top"}), flush=True)
            rows.append(res)
    finally:
        if not a.keep:
            for p_ in a.work.glob("*.h5ad"):
                p_.unlink()
    write(rows)


def write(rows):
    """Append the runs to dask_cluster.tsv (top genes compared with the single run's) and redraw the .md."""
    import pandas as pd

    ref = next((r["top"] for r in rows if r["run"] == "single" and "top" in r), None)
    for r in rows:
        if "top" in r and ref is not None:
            r["same_top2000"] = len(set(r["top"]) & set(ref)) / len(ref)
        r.pop("top", None)
        r["date"] = time.strftime("%Y-%m-%d %H:%M")
    tsv = RESULTS / "dask_cluster.tsv"
    df = pd.DataFrame(rows)
    for col in ("tasks", "worker_peak_gb"):
        if col in df:
            df[col] = df[col].map(lambda v: json.dumps(v) if isinstance(v, (dict, list)) else v)
    if tsv.exists():
        df = pd.concat([pd.read_csv(tsv, sep="\t"), df], ignore_index=True)
    df.to_csv(tsv, sep="\t", index=False)
    cols = [c for c in ("date", "n_cells", "n_genes", "nnz", "chunk", "run", "graph_s", "score_s", "total_s", "client_peak_gb",
                        "worker_peak_gb", "worker_mem_gb", "recall5", "same_top2000", "load_before", "load_after",
                        "note") if c in df]
    md = ["# Graph + Laplacian score of a dask X on a LocalCluster (issue 31)", "",
          "`benchmarks/dask_cluster.py`: the library's own graph (5-NN heat kernel on 50 PCs) and the Laplacian "
          "score of `read_elem_lazy` row chunks; `single` = no client (blocks stream through the process), "
          "`cluster-k` = LocalCluster of k worker processes (1 thread each). Times in s, memory in GB (VmHWM). "
          "2 shared cores; load = 1-minute load average. Task compute seconds per kind in the TSV.", "",
          df[cols].to_markdown(index=False)]
    (RESULTS / "dask_cluster.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
