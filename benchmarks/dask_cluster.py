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

Each run reports the wall time of every step (validation scan, PCA subsample and fit, projection, index
build, search and refinement, score: each a set of tasks), the client's peak resident memory
(VmHWM; the scheduler runs in the same process), each worker's (VmHWM, read on the workers at the end,
and whether a worker was replaced), the compute seconds of each kind of task
(``distributed.get_task_stream``), the CPU seconds of the workers in each step (``cpu_s``: on 2 shared
cores the wall times are mostly the load's) and the recall@5 of the graph's 5 heaviest edges per cell
against the exact 5 nearest on the same PCA scores (faiss flat) on 2,000 sampled cells.

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
    """Times of the library's INFO records."""

    def __init__(self):
        super().__init__()
        self.marks = []  # (time, label)

    def emit(self, record):
        self.marks.append((time.perf_counter(), record.getMessage()))


#: The steps that build the search's index: one index (below glfs.graph._neighbors.IVF_BLOCKED_MIN_SAMPLES), or its shards.
INDEX_STEPS = ("neighbour search index", "neighbour search index shards")


def _wrap_steps(store, search_shards: int | None):
    """Count the workers' CPU seconds of each library step (around glfs.core._cluster.gather_blocks, which
    waits for every step's tasks), keep the PCA scores' handle (for the recall), and with ``search_shards``
    wait for only that many query shards of the search (0: stop after the index), then stop (_StopSearch)."""
    import glfs.core._cluster as cluster
    import glfs.graph._neighbors as nb
    import glfs.graph._sharded as sharded
    from glfs.graph._ivf_blocks import BLOCK_QUERIES

    gather, project = cluster.gather_blocks, nb.project

    def gather_cpu(client, futures, what, labels, fetch=True):
        c0, t0 = client.run(_cpu_seconds), time.perf_counter()
        stop = (
            search_shards is not None
            and what in INDEX_STEPS + ("neighbour search",)
            and (what == "neighbour search" or search_shards == 0)
        )
        if stop and what == "neighbour search":  # query blocks fetched in waves: stop once enough are searched
            store.setdefault("search_t0", t0)
            left = search_shards - store.get("blocks", 0)
            client.cancel(futures[left:])
            futures, labels = futures[:left], labels[:left]
            store["blocks"] = store.get("blocks", 0) + len(futures)
            stop = store["blocks"] >= search_shards
        out = gather(client, futures, what, labels, fetch)
        c1 = client.run(_cpu_seconds)
        cpu = sum(c1[w] - c0.get(w, c1[w]) for w in c1)
        key = what
        while key in store["cpu"] and store.get("last") != what:  # a step run again: primed; its waves: added
            key += "'"
        while key + "'" in store["cpu"]:
            key += "'"
        store["cpu"][key] = round(store["cpu"].get(key, 0.0) + cpu, 1)
        store["last"] = what
        if stop:
            store.setdefault("search_t0", t0)
            per = BLOCK_QUERIES if store["n"] >= nb.IVF_BLOCKED_MIN_SAMPLES else sharded.QUERY_BLOCK
            store["searched"] = min(store.get("blocks", 0) * per, store["n"])
            store["search_part_s"] = time.perf_counter() - store["search_t0"]
            raise _StopSearch
        return out

    def keep(*a, **kw):
        store["Z"] = project(*a, **kw)
        return store["Z"]

    cluster.gather_blocks = sharded.gather_blocks = gather_cpu
    nb.project = keep


def _cpu_seconds():
    """User + system CPU seconds of this process (run on every worker)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class _StopSearch(Exception):
    pass


def _recall(store, W, k=5, m=2000, seed=0):
    """recall@k of each sampled cell's k heaviest graph edges (the heat kernel: the nearest) against its exact
    k nearest others on the same PCA scores (faiss flat), on m sampled cells."""
    import faiss

    Z = store.get("Z")
    if Z is None or W is None:
        return None
    Z = np.ascontiguousarray(Z.gather() if hasattr(Z, "gather") else Z, np.float32)
    q = np.random.default_rng(seed).choice(Z.shape[0], min(m, Z.shape[0]), replace=False)
    flat = faiss.IndexFlatL2(Z.shape[1])
    flat.add(Z)
    _, exact = flat.search(Z[q], k + 1)
    hits = 0
    for i, row in enumerate(q):
        lo, hi = W.indptr[row], W.indptr[row + 1]
        cand = W.indices[lo:hi][np.argsort(-W.data[lo:hi], kind="stable")][:k]
        hits += len(set(cand.tolist()) & set([c for c in exact[i] if c != row][:k]))
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
    record (a step run twice gets a ' on its second name); START/END marks, if any, as one step."""
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
    said = logging.StreamHandler()
    said.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s"))
    for name in ("glfs.core._cluster", "glfs.graph._neighbors", "glfs.graph._sharded", "glfs.core._out_of_core"):
        lg = logging.getLogger(name)
        lg.setLevel(logging.INFO)
        lg.addHandler(steps)
        lg.addHandler(said)
    sdir = store_dir(a.work, a.cells, a.genes, a.lib_loc)
    X = open_store(sdir, a.gene_chunk)
    out.update(n_cells=int(X.shape[0]), n_genes=int(X.shape[1]), shards=X.numblocks[0], gene_chunk=a.gene_chunk)
    if a.only_genes:  # score the first genes only (a step at 10^7 cells within the session)
        X = X[:, : a.only_genes]
        out["scored_genes"] = a.only_genes
    client = cluster = stream = None
    graph_f = sdir / f"graph_{a.graph}.npz"
    if kind.startswith("cluster"):
        from distributed import Client, LocalCluster, get_task_stream

        k = int(kind.split("-")[1])
        cluster = LocalCluster(
            n_workers=k,
            threads_per_worker=1,
            processes=True,
            memory_limit=f"{a.worker_mem_gb}GiB",
            dashboard_address=":0",
        )
        client = Client(cluster)
        client.run(os.nice, max(0, 10 - os.nice(0)))  # the workers at nice 10 (they inherit this process')
        workers0 = set(client.scheduler_info()["workers"])
        store["n"] = int(X.shape[0])
        _wrap_steps(store, a.search_shards)
        stream = get_task_stream(client)
        stream.__enter__()
    t0 = time.perf_counter()
    W = None
    if a.scan_only:  # only the validation scan (one task per tile)
        from glfs.core._out_of_core import OutOfCore

        OutOfCore(X).validate()
        out.update(graph="none", scan_s=round(time.perf_counter() - t0, 1), steps=_spans(steps.marks, t0))
    else:
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
        if a.save_scores:  # the per-gene scores, for compare_scores
            out["scores_file"] = str(
                a.work / f"scores_{a.cells}_{a.only_genes or a.genes}_{out['graph'].split()[0]}_{kind}.npy"
            )
            np.save(out["scores_file"], s)
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
        out["recall5"] = _recall(store, W if out.get("graph") == "own" else None)
        client.close()
        cluster.close()
    out["client_peak_gb"] = round(vm_hwm_gb(), 3)
    out["client_cpu_s"] = round(_cpu_seconds(), 1)
    if store["cpu"]:
        out["cpu_s"] = store["cpu"]  # the workers' CPU seconds per library step
    return out


def predict(row: dict, k: int) -> dict:
    """Each step's wall seconds on k workers from a 1-worker run's (``row``), before running them.

    A library step of m equal tasks on one worker takes its span; on k workers ceil(m / k) rounds of
    them: span x ceil(m / k) / m.  The client's steps (the PCA fit, the index build, the time between
    the steps) are unchanged.  Assumes each worker process gets the CPU one worker got: true on an
    idle machine up to the cores (2 here), and on a machine loaded far beyond its cores (each process
    then gets its share of the load); on an idle 2-core machine 4 workers share 2 cores (x 2 a task).
    """
    steps = row["steps"] if isinstance(row["steps"], dict) else json.loads(row["steps"])
    tasks = row["tasks"] if isinstance(row["tasks"], dict) else json.loads(row["tasks"])
    out = {}
    for step, span in steps.items():
        base = step.rstrip("'")  # a step run twice (the validation scan of the graph's call and the score's)
        m = tasks.get(f"glfs {base}", [0])[0] // sum(s_.rstrip("'") == base for s_ in steps)
        out[step] = round(span * -(-m // k) / m, 1) if m else span
    out["total"] = round(sum(out.values()), 1)
    return out


def compare_scores(a) -> dict:
    """The per-gene scores of the cluster run and the single process (``--save-scores``) side by side:
    written to results/dask_cluster_scores_<cells>[_<graph> if not planted].tsv.gz; their top-2,000 overlap and largest relative gap."""
    import pandas as pd

    runs = {
        k: np.load(max(a.work.glob(f"scores_{a.cells}_*{a.compare}_{k}.npy"), key=lambda p: p.stat().st_mtime))
        for k in ("cluster-2", "single")
    }
    c, s = runs["cluster-2"], runs["single"]
    both = np.isfinite(c) & np.isfinite(s)
    rel = np.abs(c[both] - s[both]) / np.maximum(np.abs(s[both]), np.finfo(float).tiny)
    top = [set(np.argsort(v, kind="stable")[:TOP].tolist()) for v in (c, s)]
    facts = {
        "cells": a.cells,
        "genes": int(c.size),
        "same_nan": bool(np.array_equal(np.isnan(c), np.isnan(s))),
        "max_rel_diff": float(rel.max()),
        "same_top2000": len(top[0] & top[1]) / TOP,
        "same_order_top2000": bool(
            np.array_equal(np.argsort(c, kind="stable")[:TOP], np.argsort(s, kind="stable")[:TOP])
        ),
    }
    pd.DataFrame({"gene": np.arange(c.size), "cluster_2": c, "single": s}).to_csv(
        RESULTS / f"dask_cluster_scores_{a.cells}{'' if a.compare == 'planted' else '_' + a.compare}.tsv.gz",
        sep="\t",
        index=False,
        float_format="%.17g",
    )
    print(json.dumps(facts))
    return facts


def make_store(a):
    """Write the store in ``--parts`` processes (each every k-th shard); its facts."""
    if a.part is not None:
        i, k = (int(v) for v in a.part.split("/"))
        print(json.dumps(write_store(a.work, a.cells, a.genes, a.lib_loc, a.shard, part=(i, k))))
        return None
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--make-store",
                "--part",
                f"{i}/{a.parts}",
                "--cells",
                str(a.cells),
                "--genes",
                str(a.genes),
                "--lib-loc",
                str(a.lib_loc),
                "--shard",
                str(a.shard),
                "--work",
                str(a.work),
            ]
        )
        for i in range(a.parts)
    ]
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
    ap.add_argument("--compare", help="graph name (planted): compare the saved scores of cluster-2 and single")
    ap.add_argument("--only-genes", type=int, help="score only the first this many genes")
    ap.add_argument("--scan-only", action="store_true", help="only the validation scan of X")
    ap.add_argument("--save-scores", action="store_true", help="save each run's per-gene scores (--work/scores_*.npy)")
    ap.add_argument("--make-store", action="store_true")
    ap.add_argument("--parts", type=int, default=1)
    ap.add_argument("--part")
    ap.add_argument("--worker")
    ap.add_argument("--render", action="store_true", help="only redraw dask_cluster.md from the TSV")
    ap.add_argument("--predict", help="workers, e.g. 2,4: each step's time from the last cluster-1 row of --cells")
    a = ap.parse_args(argv)
    if a.render:
        import pandas as pd

        render(pd.read_csv(RESULTS / "dask_cluster.tsv", sep="\t"))
        return
    if a.predict:
        import pandas as pd

        t = pd.read_csv(RESULTS / "dask_cluster.tsv", sep="\t")
        row = t[(t["run"] == "cluster-1") & (t["n_cells"] == a.cells)].iloc[-1].to_dict()
        for k in a.predict.split(","):
            print(json.dumps({"workers": int(k), "from": f"cluster-1 of {row['date']}", **predict(row, int(k))}))
        return
    if a.make_store:
        make_store(a)
        return
    if a.compare:
        compare_scores(a)
        return
    if a.worker:
        print("RESULT " + json.dumps(run(a.worker, a)), flush=True)
        return
    facts = store_facts(store_dir(a.work, a.cells, a.genes, a.lib_loc))
    rows = []
    for kind in a.runs.split(","):
        load0 = os.getloadavg()[0]
        cmd = [sys.executable, __file__, "--worker", kind] + [
            x for x in (argv or sys.argv[1:]) if x != "--runs" and x != a.runs
        ]
        try:
            log_f = a.work / f"{kind}_{a.cells}.log"  # the library's INFO records as they come (progress)
            with log_f.open("w") as err:
                p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, text=True, timeout=a.timeout, check=False)
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
            stderr = log_f.read_text()
            errors = [ln for ln in stderr.splitlines() if "Error" in ln] or stderr.strip().splitlines()
            res = json.loads(lines[-1][7:]) if lines else {"run": kind, "note": (errors or ["no output"])[-1][:300]}
        except subprocess.TimeoutExpired:
            res = {"run": kind, "note": f"stopped after {a.timeout} s"}
        res.update(
            nnz=facts["nnz"],
            layout=f"CSC shards of {a.shard}, tiles of {a.gene_chunk} genes",
            worker_mem_gb=a.worker_mem_gb if kind != "single" else None,
            load_before=round(load0, 1),
            load_after=round(os.getloadavg()[0], 1),
        )
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
    cols = [
        c
        for c in (
            "date",
            "n_cells",
            "n_genes",
            "scored_genes",
            "nnz",
            "layout",
            "run",
            "graph",
            "graph_s",
            "scan_s",
            "score_s",
            "client_peak_gb",
            "worker_peak_gb",
            "worker_mem_gb",
            "workers_replaced",
            "recall5",
            "same_top2000",
            "load_before",
            "load_after",
            "note",
        )
        if c in df
    ]
    md = [
        "# Graph + Laplacian score of a dask X on a LocalCluster (issue 31)",
        "",
        "`benchmarks/dask_cluster.py`: the library's own graph (5-NN heat kernel on 50 PCs, faiss IVF) and the "
        "Laplacian score of a dask X; `single` = no client (blocks stream through the process), `cluster-k` = "
        "LocalCluster of k worker processes (1 thread each) with the scheduler in the client's process. Times in s, "
        "memory in GB (VmHWM). 2 shared cores; load = 1-minute load average. Per-step times and task compute "
        "seconds per kind in the TSV (`steps`, `tasks`); same_top2000: of `single`, the overlap of its top 2,000 "
        "genes with the cluster run whose graph it scored on; of a cluster run, with the invocation's first.",
        "",
        df[cols].to_markdown(index=False),
    ]
    out = RESULTS / "dask_cluster.md"
    old = out.read_text() if out.exists() else ""
    notes = old[old.index(NOTES) :] if NOTES in old else NOTES + "\n"  # the hand-written notes below the table are kept
    out.write_text("\n".join(md) + "\n\n" + notes)


NOTES = "<!-- notes: written by hand, kept when the table above is redrawn -->"


if __name__ == "__main__":
    main()
