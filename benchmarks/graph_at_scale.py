"""Graph + Laplacian score at 50,000 x 2,000: where the time goes, and what faster settings do to the graph.

Issue 9 item 1 (graph + Laplacian score on 50,000 cells x 2,000 genes in at
most 15 s on 2 cores).  Two parts:

``--split``: one call of ``glfs.laplacian_score(X, glfs.similarity_graph(X))``
(5 neighbours, heat kernel, the defaults) in this fresh process under
cProfile; prints wall time and the cumulative time of its parts (validation,
PCA, neighbour search, kernel + symmetrisation, Laplacian score).

``--quality``: candidate settings of the search on principal components
against the reference (scikit-learn PCA with ``svd_solver="randomized"`` and
``iterated_power=7``, which is what its ``"auto"`` picks at this shape, then the
exact float32 kNN on 50 components).  Per candidate: PCA and search time;
recall of the reference's 5 nearest neighbours (mean over cells of |found and
reference| / 5); then the Laplacian score on the candidate's heat-kernel graph
against the score on the reference graph: Spearman correlation, overlap of the
top-100 genes, how many planted genes are in the top |planted|, the worst
planted gene's rank.  ``ref_seed1`` (the reference with another PCA seed) and
``pca_exact`` (covariance eigendecomposition in float64, the exact
components) show how much the reference itself moves.  Data (simulated only,
never GBM or Golub):

- ``sc``: the scaling benchmark's single-cell-like counts (8 clusters, 200
  planted marker genes; ``benchmarks/scaling.py``, cached);
- ``latent``: Gaussian cells on a 20-dimensional latent space with 10
  clusters, read by 100 informative genes, plus 1,900 pure-noise genes.

Usage::

    python benchmarks/graph_at_scale.py --split
    python benchmarks/graph_at_scale.py --quality [--data sc latent] [--n 50000]

Writes ``benchmarks/results/graph_at_scale.tsv`` (quality rows; a rerun
replaces the rows of the same data, size and candidate) and prints everything.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench.simulated import planted_genes  # noqa: E402
from bench.timing import uptime  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
K = 5
N_PCS = 50


# --------------------------------------------------------------------------- data
def data_sc(n, d):
    import scaling

    scaling.prepare(n, d)
    xp, _, _ = scaling.data_paths(n, d)
    planted = planted_genes(d)
    return np.load(xp), planted


def data_latent(n, d, seed=0, n_informative=100, rank=20, n_clusters=10):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_clusters, n)
    centres = rng.normal(0, 2.0, size=(n_clusters, rank))
    scales = np.linspace(1.5, 0.3, rank)  # decaying within-cluster spread: the components are ordered
    load = rng.normal(0, 1.0, size=(rank, n_informative)) / np.sqrt(rank)
    X = np.empty((n, d), dtype=np.float32)
    step = 5000
    for s in range(0, n, step):
        sl = slice(s, min(n, s + step))
        m = sl.stop - sl.start
        latent = centres[groups[sl]] + rng.normal(0, 1.0, size=(m, rank)) * scales
        X[sl, :n_informative] = latent @ load + rng.normal(0, 0.5, size=(m, n_informative))
        X[sl, n_informative:] = rng.normal(0, 1.0, size=(m, d - n_informative))
    return X, np.arange(n_informative)


# --------------------------------------------------------------------------- pieces
def pca(X32, iters, seed=0):
    from sklearn.decomposition import PCA

    if iters == "exact":
        return (
            PCA(n_components=N_PCS, svd_solver="covariance_eigh")
            .fit_transform(X32.astype(np.float64))
            .astype(np.float32)
        )
    if iters == "auto":
        return PCA(n_components=N_PCS, svd_solver="auto", random_state=seed).fit_transform(X32)
    return PCA(n_components=N_PCS, svd_solver="randomized", iterated_power=iters, random_state=seed).fit_transform(X32)


def search(Z, kind, **kw):
    """(rows, cols, dist) of the K nearest other samples, distances in float64 on Z."""
    import faiss

    import glfs.graph._neighbors as nb

    Z32 = np.ascontiguousarray(Z, dtype=np.float32)
    n, p = Z32.shape
    ks = K + 5
    if kind == "flat":
        return nb._knn_brute32(Z32, K, "faiss")
    if kind == "ivf":
        if hasattr(nb, "_knn_ivf"):
            return nb._knn_ivf(Z32, K, random_state=0, nlist=kw["nlist"], nprobe=kw["nprobe"])
        q = faiss.IndexFlatL2(p)
        index = faiss.IndexIVFFlat(q, p, kw["nlist"])
        index.train(Z32)
        index.add(Z32)
        index.nprobe = kw["nprobe"]
        _, ind = index.search(Z32, ks)
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(p, kw["M"])
        index.hnsw.efConstruction = kw.get("efc", 40)
        index.add(Z32)
        index.hnsw.efSearch = kw["ef"]
        _, ind = index.search(Z32, ks)
    else:
        raise ValueError(kind)
    rows = np.repeat(np.arange(n), ks)
    cols = ind.ravel().astype(np.int64)
    ok = cols >= 0
    rows, cols = rows[ok], cols[ok]
    Zd = Z32.astype(np.float64)
    diff = Zd[rows] - Zd[cols]
    return nb._keep_k(rows, cols, np.sqrt(np.einsum("ij,ij->i", diff, diff)), K)


def heat_graph(rows, cols, dist, n):
    import glfs.graph._similarity as gg

    t = float(np.mean(dist**2))
    return gg._symmetrise_max(rows, cols, np.exp(-(dist**2) / t), n)


def knn_recall(rows, cols, ref_rows, ref_cols, n):
    a = rows.astype(np.int64) * n + cols
    b = ref_rows.astype(np.int64) * n + ref_cols
    return float(np.isin(b, a).sum() / b.size)


def ls_agreement(s, s_ref, planted, top=100):
    from scipy.stats import spearmanr

    o, o_ref = np.argsort(s, kind="stable"), np.argsort(s_ref, kind="stable")
    rank = np.empty_like(o)
    rank[o] = np.arange(o.size)
    return {
        "spearman": float(spearmanr(s, s_ref).statistic),
        "top100_overlap": int(np.intersect1d(o[:top], o_ref[:top]).size),
        "planted_top": int(np.isin(o[: planted.size], planted).sum()),
        "worst_planted_rank": int(rank[planted].max()) + 1,
    }


CANDIDATES = [
    # name, pca iterations, search kind, search parameters
    ("reference", 7, "flat", {}),
    ("ref_seed1", 7, "flat", {"seed": 1}),
    ("pca_exact", "exact", "flat", {}),
    ("pca_iter1", 1, "flat", {}),
    ("pca_iter2", 2, "flat", {}),
    ("pca_iter3", 3, "flat", {}),
    ("pca_iter4", 4, "flat", {}),
    ("ivf_default", 7, "ivf", {"nlist": None, "nprobe": None}),  # glfs' defaults: sqrt(n) cells, 32 probed
    ("ivf256_np8", 7, "ivf", {"nlist": 256, "nprobe": 8}),
    ("ivf256_np16", 7, "ivf", {"nlist": 256, "nprobe": 16}),
    ("ivf1024_np16", 7, "ivf", {"nlist": 1024, "nprobe": 16}),
    ("ivf256_np32", 7, "ivf", {"nlist": 256, "nprobe": 32}),
    ("ivf256_np64", 7, "ivf", {"nlist": 256, "nprobe": 64}),
    ("ivf1024_np32", 7, "ivf", {"nlist": 1024, "nprobe": 32}),
    ("ivf1024_np64", 7, "ivf", {"nlist": 1024, "nprobe": 64}),
    ("hnsw32_ef64", 7, "hnsw", {"M": 32, "ef": 64}),
    ("pca_iter2+ivf256_np16", 2, "ivf", {"nlist": 256, "nprobe": 16}),
    ("pca_iter3+ivf256_np16", 3, "ivf", {"nlist": 256, "nprobe": 16}),
]


def quality(data_name, n, d, names=None, done=()):
    import warnings

    import glfs

    warnings.simplefilter("ignore")
    X, planted = (data_sc if data_name == "sc" else data_latent)(n, d)
    rows_out = []
    pcs = {}
    ref = None
    for name, iters, kind, kw in CANDIDATES:
        if names and name not in names and name != "reference":
            continue
        kw = dict(kw)
        seed = kw.pop("seed", 0)
        key = (iters, seed)
        t0 = time.perf_counter()
        if key not in pcs:
            pcs[key] = pca(X, iters, seed)
        t_pca = time.perf_counter() - t0
        t0 = time.perf_counter()
        r, c, dist = search(pcs[key], kind, **kw)
        t_search = time.perf_counter() - t0
        W = heat_graph(r, c, dist, n)
        s = glfs.laplacian_score(X, W)
        row = {"data": data_name, "n": n, "d": d, "candidate": name, "pca_s": t_pca, "search_s": t_search}
        if ref is None:
            ref = (r, c, s)
        row["knn_recall"] = knn_recall(r, c, ref[0], ref[1], n)
        row.update(ls_agreement(s, ref[2], planted))
        row["load1"] = os.getloadavg()[0]
        rows_out.append(row)
        write_tsv(list(done) + rows_out)
        print("\t".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)
        if len(pcs) > 2:  # keep memory small: the reference's components and the current one
            for k_ in list(pcs)[1:-1]:
                del pcs[k_]
    return rows_out


def write_tsv(rows):
    import csv

    path = RESULTS / "graph_at_scale.tsv"
    old = []
    if path.exists():
        with open(path) as fh:
            old = list(csv.DictReader(fh, delimiter="\t"))
    new = {(r["data"], str(r["n"]), r["candidate"]) for r in rows}
    keep = [r for r in old if (r["data"], str(r["n"]), r["candidate"]) not in new]
    cols = [
        "data",
        "n",
        "d",
        "candidate",
        "pca_s",
        "search_s",
        "knn_recall",
        "spearman",
        "top100_overlap",
        "planted_top",
        "worst_planted_rank",
        "load1",
    ]
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, delimiter="\t", extrasaction="ignore")
        w.writeheader()
        for r in keep + rows:
            w.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in r.items()})


def split(n, d):
    import warnings

    import glfs

    warnings.simplefilter("ignore")
    X, _ = data_sc(n, d)
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    glfs.laplacian_score(X, glfs.similarity_graph(X, n_neighbors=K, kernel="heat", random_state=0))
    prof.disable()
    wall = time.perf_counter() - t0
    st = pstats.Stats(prof)
    want = [
        "check_X",
        "_pca",
        "_knn_brute32",
        "_knn_ivf",
        "_symmetrise_max",
        "laplacian_score",
        "fit_transform",
        "_randomized_svd",
        "constant_features",
        "check_graph",
    ]
    print(f"wall {wall:.2f} s (under cProfile)")
    for (file, _, func), (_, _, _, ct, _) in sorted(st.stats.items(), key=lambda kv: -kv[1][3]):
        if func in want and ("glfs" in file or "sklearn" in file):
            print(f"  {func:20s} {ct:7.2f} s  ({Path(file).name})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", action="store_true")
    ap.add_argument("--quality", action="store_true")
    ap.add_argument("--data", nargs="*", default=["sc", "latent"])
    ap.add_argument("--candidates", nargs="*", default=None)
    ap.add_argument("--n", type=int, default=50000)
    ap.add_argument("--d", type=int, default=2000)
    args = ap.parse_args(argv)
    print(f"start: {uptime()}", flush=True)
    if args.split:
        split(args.n, args.d)
    if args.quality:
        rows = []
        for name in args.data:
            rows += quality(name, args.n, args.d, args.candidates, done=rows)
    print(f"end: {uptime()}", flush=True)


if __name__ == "__main__":
    main()
