"""Issue 31: the own graph + Laplacian score of a dask X on a dask.distributed LocalCluster of this machine,
beside the same dask X streamed through one process (no client), at 10^5-10^7 cells.

Data: ``bench.atlas_store``: ``atlas_scale.py``'s simulated cells (10 groups, log-normal library sizes
around exp(``--lib-loc``)), log-normalised, stored as a directory of ``.h5ad`` shards of ``--shard``
cells, each CSC (by genes), and read as a user reads them: ``anndata.experimental.read_elem_lazy`` per
shard (chunks of all its cells x ``--gene-chunk`` genes) and ``dask.array.concatenate``, so X is a dask
array of 2-D sparse tiles and a gene block of all cells is the tiles of its column (no all-to-all
exchange).  ``--make-store`` writes a store (in ``--parts`` processes, each every k-th shard).

Each run is a fresh Python process (``--worker``):

- ``cluster-<k>``: a LocalCluster of k worker processes (1 thread each, ``--worker-mem-gb`` each, the
  scheduler in this process), ``glfs.similarity_graph(X)`` (the library's default 5-NN heat kernel
  on 50 PCs, faiss IVF) then ``glfs.laplacian_score(X, W)``; the graph is saved for ``single``.
  With ``--graph planted`` the search is skipped and the score runs on a planted graph (each cell
  joined to 5 random cells of its own simulated group); with ``--search-shards m`` only the first m
  query shards are searched (timed; the shards are independent tasks of equal size), then the score
  runs on the planted graph.
- ``single``: no client: ``glfs.laplacian_score(X, W)`` with the graph of the last cluster run
  streamed through this process (the route before issue 31); its top genes are the reference.

Each run reports the wall time of every step (validation scan, PCA subsample, the fit on the client,
projection, index build on the client, search, refinement, score), the client's peak resident memory
(VmHWM; the scheduler runs in the same process), each worker's (VmHWM, read on the workers at the end,
and whether a worker was replaced), the compute seconds of each kind of task
(``distributed.get_task_stream``), the CPU seconds of the workers in each step and of the client in its own
(``cpu_s``: on 2 shared cores the wall times are mostly the load's) and the recall@5 of the candidates against the exact search (faiss
flat) on 2,000 sampled cells.

    python benchmarks/dask_cluster.py --make-store --cells 200000 --shard 25000 --parts 2
    flock /work/tools/mem7.lock nice -n 10 python benchmarks/dask_cluster.py --cells 200000 --shard 25000 \\
        --runs cluster-1,cluster-2,cluster-4,single --worker-mem-gb 2

Writes benchmarks/results/dask_cluster.tsv (a row per run, appended) and dask_cluster.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.atlas_store import open_store, shard_groups, store_dir, store_facts, write_store
from bench.procfs import vm_hwm_gb  # benchmarks/ is the script's directory, so on sys.path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
TOP = 2000


class _Steps(logging.Handler):
    """Times of the library's INFO records, and of the wrapped client-side steps."""

    def __init__(self):
        super().__init__()
        self.marks = []  # (time, label)

    def emit(self, record):
        self.marks.append((time.perf_counter(), record.getMessage()))


def _wrap_client_steps(marks, store, search_shards: int | None):
    """Time the PCA fit and the index build (on the client); keep the components and candidates; with
    ``search_shards`` search only that many query shards, then stop the graph (_StopSearch)."""
    import glfs.core.cluster as cluster
    import glfs.graph.neighbors as nb
    import glfs.graph.sharded as sharded

    fit, build, search = nb._fit_components, nb._ivf_index, nb.search_shards

    def timed(name, fn):
        def inner(*a, **kw):
            t, c = time.perf_counter(), time.process_time()
            out = fn(*a, **kw)
            marks.append((t, f"START {name}"))
            marks.append((time.perf_counter(), f"END {name}"))
            store["cpu"][name] = round(time.process_time() - c, 1)
            return out
        return inner

    gather = cluster._gather

    def gather_cpu(client, futures, what, labels):  # the workers' CPU seconds of each step (robust to the load)
        c0 = client.run(_cpu_seconds)
        out = gather(client, futures, what, labels)
        c1 = client.run(_cpu_seconds)
        key = what
        while key in store["cpu"]:
            key += "'"
        store["cpu"][key] = round(sum(c1[w] - c0.get(w, c1[w]) for w in c1), 1)
        return out

    def shards(index, Z32, k_search, client, **kw):
        store["Z"] = Z32
        if search_shards:
            m = search_shards * sharded.QUERY_BLOCK
            store["searched"] = min(m, Z32.shape[0])
            t = time.perf_counter()
            search(index, Z32[:m], k_search, client, **kw)
            store["search_part_s"] = time.perf_counter() - t
            raise _StopSearch
        store["ind"] = search(index, Z32, k_search, client, **kw)
        return store["ind"]

    cluster._gather = gather_cpu
    nb._fit_components = timed("PCA fit (client)", fit)
    nb._ivf_index = timed("index build (client)", build)
    nb.search_shards = shards


def _cpu_seconds():
    """User + system CPU seconds of this process (run on every worker)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class _StopSearch(Exception):
    pass


def _recall(store, k=5, m=2000, seed=0):
    """recall@k of the candidates' k nearest others against the exact k nearest (faiss flat), on m sampled cells."""
    import faiss

    Z, ind = store.get("Z"), store.get("ind")
    if Z is None or ind is None:
        return None
    q = np.random.default_rng(seed).choice(Z.shape[0], min(m, Z.shape[0]), replace=False)
    flat = faiss.IndexFlatL2(Z.shape[1])
    flat.add(Z)
    _, exact = flat.search(Z[q], k + 1)
    hits = 0
    for i, row in enumerate(q):
        cand = [c for c in ind[row] if c != row and c >= 0][:k]
        hits += len(set(cand) & set([c for c in exact[i] if c != row][:k]))
    return hits / (q.size * k)


def planted_graph(groups, k=5, seed=0):
    """Each cell joined to k random cells of its own group (binary, symmetrised): a given graph at any n."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    n = groups.size
    rows, cols = [], []
    for g in np.unique(groups):
        idx = np.flatnonzero(groups == g)
        pick = idx[rng.integers(0, idx.size, (idx.size, k))]
        rows.append(np.repeat(idx, k).astype(np.int32))
        cols.append(pick.ravel().astype(np.int32))
    r, c = np.concatenate(rows), np.concatenate(cols)
    keep = r != c
    A = sp.csr_matrix((np.ones(int(keep.sum()), np.float32), (r[keep], c[keep])), shape=(n, n))
    A = A.maximum(A.T).tocsr()
    return A


def _spans(marks, t0):
    """Per-step wall seconds: a library step (its " done (" records) from the end of the step before to its last
    record; a wrapped client step from START to END ("before <step>": the time between)."""
    out, last, prev, start, key = {}, t0, None, t0, None
    for t, msg in sorted(marks):
        if msg.startswith(("START ", "END ")):
            word, name = msg.split(" ", 1)
            key, start, prev = (name if word == "END" else f"before {name}"), last, None
        elif " done (" in msg:
            what = msg.split(":")[0]
            if what != prev:
                start, key = last, what
                while key in out:
                    key += "'"
            prev = what
        else:
            continue
        out[key] = round(t - start, 1)
        last = t
    return out


def run(kind: str, a) -> dict:
    import scipy.sparse as sp

    import glfs

    out = {"run": kind}
    store, steps = {"cpu": {}}, _Steps()
    for name in ("glfs.core.cluster", "glfs.graph.neighbors"):
        lg = logging.getLogger(name)
        lg.setLevel(logging.INFO)
        lg.addHandler(steps)
    sdir = store_dir(a.work, a.cells, a.genes, a.lib_loc)
    X = open_store(sdir, a.gene_chunk)
    out.update(n_cells=int(X.shape[0]), n_genes=int(X.shape[1]), shards=X.numblocks[0], gene_chunk=a.gene_chunk)
    client = cluster = stream = None
    graph_f = sdir / f"graph_{a.graph}.npz"
    if kind.startswith("cluster"):
        from distributed import Client, LocalCluster, get_task_stream

        k = int(kind.split("-")[1])
        cluster = LocalCluster(n_workers=k, threads_per_worker=1, processes=True, memory_limit=f"{a.worker_mem_gb}GiB",
                               dashboard_address=":0")
        client = Client(cluster)
        client.run(lambda: os.nice(10))
        workers0 = set(client.scheduler_info()["workers"])
        _wrap_client_steps(steps.marks, store, a.search_shards)
        stream = get_task_stream(client)
        stream.__enter__()
    t0 = time.perf_counter()
    W = None
    if kind.startswith("cluster") and a.graph == "own":
        try:
            W = glfs.similarity_graph(X)
            sp.save_npz(graph_f, W)
            out["graph"] = "own"
        except _StopSearch:
            out["searched_cells"] = store["searched"]
            out["search_part_s"] = round(store["search_part_s"], 1)
    t1 = time.perf_counter()
    if W is None:
        if a.graph == "planted" or not graph_f.exists():
            W = planted_graph(shard_groups(sdir))
            out["graph"] = "planted"
        else:
            W = sp.load_npz(graph_f)
            out["graph"] = "own (cluster run's)"
    out["graph_nnz"] = int(W.nnz)
    t2 = time.perf_counter()
    s = glfs.laplacian_score(X, W)
    t3 = time.perf_counter()
    out.update(graph_s=round(t1 - t0, 1), score_s=round(t3 - t2, 1), steps=_spans(steps.marks, t0))
    out["top"] = np.argsort(s, kind="stable")[:TOP].tolist()
    if client is not None:
        stream.__exit__(None, None, None)
        per = {}
        for t in stream.data:
            name = t["key"][0] if isinstance(t["key"], tuple) else t["key"]
            name = name.rsplit("-", 2)[0] if name.startswith("glfs ") else name.split("-")[0]
            for ss in t["startstops"]:
                if ss["action"] == "compute":
                    c, s_ = per.get(name, (0, 0.0))
                    per[name] = (c + 1, s_ + ss["stop"] - ss["start"])
        out["tasks"] = {k_: [c, round(s_, 2)] for k_, (c, s_) in sorted(per.items())}
        info = client.scheduler_info()["workers"]
        out["worker_peak_gb"] = [round(v, 3) for v in client.run(vm_hwm_gb).values()]
        out["workers_replaced"] = len(set(info) - workers0)
        out["recall5"] = _recall(store)
        client.close()
        cluster.close()
    out["client_peak_gb"] = round(vm_hwm_gb(), 3)
    out["client_cpu_s"] = round(_cpu_seconds(), 1)
    if store["cpu"]:
        out["cpu_s"] = store["cpu"]  # workers' CPU seconds per library step; the client's for its wrapped steps
    return out


def make_store(a):
    """Write the store in ``--parts`` processes (each every k-th shard); its facts."""
    if a.part is not None:
        i, k = (int(v) for v in a.part.split("/"))
        print(json.dumps(write_store(a.work, a.cells, a.genes, a.lib_loc, a.shard, part=(i, k))))
        return None
    t0 = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, __file__, "--make-store", "--part", f"{i}/{a.parts}", "--cells", str(a.cells),
                               "--genes", str(a.genes), "--lib-loc", str(a.lib_loc), "--shard", str(a.shard), "--work",
                               str(a.work)]) for i in range(a.parts)]
    for p in procs:
        p.wait()
    facts = store_facts(store_dir(a.work, a.cells, a.genes, a.lib_loc))
    facts["wall_s"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(facts))
    return facts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=200_000)
    ap.add_argument("--genes", type=int, default=20_000)
    ap.add_argument("--lib-loc", type=float, default=6.3, help="log of the median library size (6.3: 545 counts)")
    ap.add_argument("--shard", type=int, default=200_000, help="cells per stored shard (a row of tiles)")
    ap.add_argument("--gene-chunk", type=int, default=1000, help="genes per tile as read")
    ap.add_argument("--worker-mem-gb", type=float, default=4.0)
    ap.add_argument("--graph", choices=("own", "planted"), default="own")
    ap.add_argument("--search-shards", type=int, help="search only this many query shards (then the planted graph)")
    ap.add_argument("--runs", default="cluster-2,single")
    ap.add_argument("--work", type=Path, default=Path("/work/scale-data"))
    ap.add_argument("--timeout", type=int, default=7200)
    ap.add_argument("--make-store", action="store_true")
    ap.add_argument("--parts", type=int, default=1)
    ap.add_argument("--part")
    ap.add_argument("--worker")
    a = ap.parse_args(argv)
    if a.make_store:
        make_store(a)
        return
    if a.worker:
        print("RESULT " + json.dumps(run(a.worker, a)), flush=True)
        return
    facts = store_facts(store_dir(a.work, a.cells, a.genes, a.lib_loc))
    rows = []
    for kind in a.runs.split(","):
        load0 = os.getloadavg()[0]
        cmd = [sys.executable, __file__, "--worker", kind] + [x for x in (argv or sys.argv[1:]) if x != "--runs"
                                                               and x != a.runs]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout, check=False)
            (a.work / f"{kind}_{a.cells}.log").write_text(p.stderr)
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
            errors = [ln for ln in p.stderr.splitlines() if "Error" in ln] or p.stderr.strip().splitlines()
            res = json.loads(lines[-1][7:]) if lines else {"run": kind, "note": (errors or ["no output"])[-1][:300]}
        except subprocess.TimeoutExpired:
            res = {"run": kind, "note": f"stopped after {a.timeout} s"}
        res.update(nnz=facts["nnz"], layout=f"CSC shards of {a.shard}, tiles of {a.gene_chunk} genes",
                   worker_mem_gb=a.worker_mem_gb if kind != "single" else None, load_before=round(load0, 1),
                   load_after=round(os.getloadavg()[0], 1))
        print(json.dumps({k: v for k, v in res.items() if k != "top"}), flush=True)
        rows.append(res)
        write([res], rows)


def write(new, rows):
    """Append the new runs to dask_cluster.tsv and redraw the .md."""
    import pandas as pd

    for r in new:  # single: against the cluster run whose graph it used; a cluster run: against the invocation's first
        before = [q for q in rows[: rows.index(r)] if "top" in q and q["run"] != "single"]
        ref = (before[-1] if before else None) if r["run"] == "single" else (before[0] if before else None)
        if "top" in r and ref is not None:
            r["same_top2000"] = len(set(r["top"]) & set(ref["top"])) / len(ref["top"])
        r["date"] = time.strftime("%Y-%m-%d %H:%M")
    tsv = RESULTS / "dask_cluster.tsv"
    df = pd.DataFrame([{k: v for k, v in r.items() if k != "top"} for r in new])
    for col in ("tasks", "worker_peak_gb", "steps", "cpu_s"):
        if col in df:
            df[col] = df[col].map(lambda v: json.dumps(v) if isinstance(v, (dict, list)) else v)
    if tsv.exists():
        df = pd.concat([pd.read_csv(tsv, sep="\t"), df], ignore_index=True)
    df.to_csv(tsv, sep="\t", index=False)
    render(df)


def render(df):
    """dask_cluster.md from the TSV's rows."""
    df = df.copy()
    if "layout" in df:
        df["layout"] = df["layout"].fillna("h5ad CSR, row chunks")
    cols = [c for c in ("date", "n_cells", "n_genes", "nnz", "layout", "run", "graph", "graph_s", "score_s", "client_peak_gb",
                        "worker_peak_gb", "worker_mem_gb", "workers_replaced", "recall5", "same_top2000", "load_before",
                        "load_after", "note") if c in df]
    md = ["# Graph + Laplacian score of a dask X on a LocalCluster (issue 31)", "",
          "`benchmarks/dask_cluster.py`: the library's own graph (5-NN heat kernel on 50 PCs, faiss IVF) and the "
          "Laplacian score of a dask X; `single` = no client (blocks stream through the process), `cluster-k` = "
          "LocalCluster of k worker processes (1 thread each) with the scheduler in the client's process. Times in s, "
          "memory in GB (VmHWM). 2 shared cores; load = 1-minute load average. Per-step times and task compute "
          "seconds per kind in the TSV (`steps`, `tasks`); same_top2000: of `single`, the overlap of its top 2,000 "
          "genes with the cluster run whose graph it scored on; of a cluster run, with the invocation's first.", "",
          df[cols].to_markdown(index=False)]
    (RESULTS / "dask_cluster.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
