"""Every single-cell gene selection on the real development panel, judged by the Leiden protocol.

    nice -n 10 python benchmarks/real_panel.py                  # the panel (cached rankings: reruns are cheap)
    nice -n 10 python benchmarks/real_panel.py --sets bladder   # one set
    nice -n 10 python benchmarks/real_panel.py --candidates     # also the mean-bias designs (panel_candidates.py)
    nice -n 10 python benchmarks/real_panel.py --eval-seed 1 --methods hvg_seurat_v3   # another evaluation seed
    python benchmarks/real_panel.py --summary-only              # rewrite the .md from the .tsv

The panel (``resources/singlecell/``, provenance and sha256 in ``resources/README.md``): the
mouse bladder cells (Han et al. 2018), Zeisel et al. 2015 mouse cortex (7 classes; its 47
subclasses, ``label_fine``, as an extra label set), Kang et al. 2018 PBMC of 5 donors and
Stoeckius et al. 2017 CITE-seq cord blood (labels from RNA and surface protein).  Each file's
sha256 is checked before it is read.

Protocol, the same for every selection: ``X`` = scanpy ``normalize_total`` + ``log1p`` of the
counts (as the workflow's ``normalize_log1p``).  Each registered single-cell selection (every
``hvg_*`` flavour, ``deviance``, ``variance``, ``laplacian_score``, ``graph_moran``) runs as a
user would: ``glfs.select(X, m, n_features_to_select=k_max, counts=counts, random_state=0)``;
``graph_moran@scanpy`` is ``graph_moran`` given scanpy's standard graph (HVG seurat 2,000 ->
PCA 50 -> 15-NN, ``obsp["connectivities"]``).  Beside them: random genes (``--n-random``
draws of ``glfs.evaluate.random_gene_orders``, each evaluated with its own seed, as the
workflow's random floor) and all genes.  Each ranking is evaluated by
``glfs.evaluate.evaluate_ranking_leiden`` at 200, 500, 1,000 and 2,000 genes (those below the
set's gene count; at or above it a selection is all genes, and the tables show the all-genes
value there), one run, master seed 0, on at most 2,100 cells (``MAX_CELLS``: Zeisel, Kang and
Stoeckius are evaluated on a stratified subsample of 2,100 cells, the bladder set's size; the
selections see every cell; chosen for time on 2 shared cores at load 14-19, where one evaluation
of 2,100 cells took 60-80 s and of 3,005 cells 200-300 s): ARI at the best Leiden resolution
(``ari``), at the cluster
count nearest the labels' (``ari_nlabels``) and of k-means (``kmeans_ari``).
``score`` = the mean of those three ARIs (the issue-28 protocol).

Cache: each (set, method) ranking and each (set, labels, ranking) evaluation is kept under
``benchmarks/.cache/real_panel/`` (``--cache``; ``--fresh`` recomputes the rankings), so a rerun
or a new method costs only what is new.

Outputs: ``benchmarks/results/real_panel.tsv`` (one row per set x labels x method x draw x k x
run) and ``real_panel.md`` (scores per set and k, the panel mean, leave-one-dataset-out,
selection times), with date, load and versions.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import time
import warnings
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from panel_lodo import head_to_head, leave_one_dataset_out, lodo_table, score_matrix  # noqa: E402

RESULTS = HERE / "results"
DATA = ROOT / "resources" / "singlecell"
CACHE = HERE / ".cache" / "real_panel"
FEATURE_GRID = (200, 500, 1000, 2000)
N_RUNS = 1
#: Sets with more cells are evaluated on a stratified subsample of this many (glfs.evaluate.stratified_subsample,
#: seed 0, by the set's primary labels); the selections still see every cell.
MAX_CELLS = 2100
SEED = 0
#: The evaluation's master seed for the selections (``--eval-seed``; the selections themselves keep SEED).
EVAL_SEED = SEED

#: set -> (file, sha256 of resources/README.md)
FILES = {
    "bladder": ("mouse_bladder_2100.h5ad", "1336faa6ca5c03afbf3850d0345046c009bd538d202ae8752b045870dc346d71"),
    "zeisel": (
        "zeisel2015_mouse_cortex_4000g.h5ad",
        "d77a542df9b1c5a0d991b555e80f4022049363bbf44fc094937ab4875e55b3d0",
    ),
    "kang": ("kang2018_pbmc_5donors_2511g.h5ad", "f7c9689455b5857877fea7380938e9535b1261227a525906d0d41e77dc6b43ad"),
    "stoeckius": ("stoeckius2017_cbmc_500g.h5ad", "654709383062885be6dd1d55b8bd7cace7e550e6d3be4f340b9688633a9ed815"),
}
#: label sets: name -> (set, obs column, where the labels come from).  The first four are the panel
#: (leave-one-dataset-out folds); zeisel_fine is an extra label set of the same cells.
LABELS = {
    "bladder": ("bladder", "cell_type", "atlas annotation (RNA clustering)"),
    "zeisel": ("zeisel", "label", "published classes (RNA clustering)"),
    "kang": ("kang", "label", "published types (RNA clustering); donors by genotype"),
    "stoeckius": ("stoeckius", "label", "RNA + surface protein (CITE-seq)"),
    "zeisel_fine": ("zeisel", "label_fine", "published subclasses (RNA clustering)"),
}
PANEL = ("bladder", "zeisel", "kang", "stoeckius")
SCANPY_GRAPH = ("graph_moran",)
NOT_METHODS = ("random", "all_genes")
COLUMNS = [
    "labels",
    "set",
    "label_source",
    "method",
    "draw",
    "n_features",
    "run",
    "ari",
    "ari_nlabels",
    "kmeans_ari",
    "nmi",
    "score",
    "select_seconds",
    "n_cells",
    "n_genes",
    "load1",
]

log = logging.getLogger("real_panel")


def default_methods() -> list[str]:
    """The registry's single-cell selections: unsupervised scores, scanpy's HVG flavours, count baselines, variance."""
    import glfs

    out = [
        name
        for name, m in glfs.METHODS.items()
        if (m.family == "score" and not m.needs_labels)
        or m.family == "hvg"
        or (m.family == "baseline" and m.needs_counts)
    ]
    return out + (["variance"] if "variance" not in out else [])


def load_set(name: str):
    """(raw counts CSR float32, obs DataFrame) of a panel set, after checking the file's sha256."""
    import anndata as ad

    file, sha = FILES[name]
    path = DATA / file
    got = hashlib.sha256(path.read_bytes()).hexdigest()
    if got != sha:
        msg = f"{path}: sha256 {got}, expected {sha} (resources/README.md)"
        raise ValueError(msg)
    a = ad.read_h5ad(path)
    return sp.csr_matrix(a.X, dtype=np.float32), a.obs


def lognorm(counts):
    """scanpy's normalize_total (median total) + log1p of raw counts (cells x genes), sparse CSR float32."""
    import anndata as ad
    import scanpy as sc

    a = ad.AnnData(sp.csr_matrix(counts, dtype=np.float32, copy=True))
    sc.pp.normalize_total(a)
    sc.pp.log1p(a)
    return sp.csr_matrix(a.X)


def scanpy_graph(X, seed: int = SEED):
    """scanpy's standard graph: HVG seurat (2,000 or all genes) -> PCA 50 -> 15-NN; (connectivities, seconds)."""
    import anndata as ad
    import scanpy as sc

    t = time.perf_counter()
    a = ad.AnnData(X.copy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc.pp.highly_variable_genes(a, n_top_genes=min(2000, a.n_vars))
        sc.pp.pca(a, n_comps=min(50, a.n_vars - 1), mask_var="highly_variable", random_state=seed)
        sc.pp.neighbors(a, n_neighbors=15, random_state=seed)
    return a.obsp["connectivities"].tocsr(), time.perf_counter() - t


class Panel:
    """One set's data, with its rankings and evaluations cached on disk."""

    def __init__(self, name: str, cache: Path, fresh: bool = False):
        self.name, self.cache, self.fresh = name, cache, fresh
        cache.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        self.counts, self.obs = load_set(name)
        self.X = lognorm(self.counts)
        self._graph = None
        self.keep = None
        if self.X.shape[0] > MAX_CELLS:
            from glfs.evaluate import stratified_subsample

            primary = next(col for lab, (s, col, _) in LABELS.items() if s == name)
            self.keep = np.sort(stratified_subsample(np.asarray(self.obs[primary].astype(str)), MAX_CELLS, SEED))
        log.info("%s: %d cells x %d genes, read + lognorm %.1f s", name, *self.X.shape, time.perf_counter() - t)

    @property
    def graph(self):
        if self._graph is None:
            path = self.cache / f"{self.name}__scanpy_graph.npz"
            if path.exists():
                self._graph = sp.load_npz(path).tocsr()
            else:
                self._graph, sec = scanpy_graph(self.X)
                sp.save_npz(path, self._graph)
                log.info("%s: scanpy's graph %.1f s", self.name, sec)
        return self._graph

    def ranking(self, method: str, fn=None) -> tuple[np.ndarray, float]:
        """(ranking best first, seconds) of a registered method (``graph_moran@scanpy``: on scanpy's graph) or of
        ``fn(panel) -> scores`` (higher better); cached by (set, method)."""
        path = self.cache / f"{self.name}__{method}.npz"
        if path.exists() and not self.fresh:
            z = np.load(path)
            return z["ranking"], float(z["seconds"])
        import glfs

        if fn is not None:
            _ = self.graph  # scanpy's graph is the user's, not the design's time
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # constant genes, scanpy's notes: not the benchmark's business
            if fn is not None:
                s = np.asarray(fn(self), dtype=np.float64)
                ranking = np.argsort(-np.where(np.isfinite(s), s, -np.inf), kind="stable")
            else:
                base, _, how = method.partition("@")
                graph = self.graph if how == "scanpy" else None
                t = time.perf_counter()  # scanpy's graph is the user's, not the method's time
                k = min(max(FEATURE_GRID), self.X.shape[1])
                sel = glfs.select(
                    self.X, base, graph=graph, n_features_to_select=k, counts=self.counts, random_state=SEED
                )
                ranking = np.asarray(sel.ranking)
        sec = time.perf_counter() - t
        np.savez(path, ranking=ranking, seconds=sec)
        return ranking, sec

    def evaluate(self, labels: str, ranking, grid, seed: int = SEED, n_runs: int = N_RUNS) -> list[dict]:
        """evaluate_ranking_leiden's records, cached per gene count k by (set, labels, top k genes, k, seed, runs,
        cells): a run with another grid computes only the new k (the protocol's records at one k do not depend
        on the other k of the grid: the seeds are the run's, the PCA and graph the k's)."""
        from glfs.evaluate import evaluate_ranking_leiden

        paths = {int(k): self.cache / f"{self.name}__{labels}__{eval_key(ranking, k, seed, n_runs)}.json" for k in grid}
        todo = [k for k, path in paths.items() if not path.exists()]
        if todo:
            y = np.asarray(self.obs[LABELS[labels][1]].astype(str))
            X = self.X
            if self.keep is not None:
                X, y = X[self.keep], y[self.keep]
            recs = evaluate_ranking_leiden(X, y, ranking, feature_grid=todo, n_runs=n_runs, random_state=seed)
            for k in todo:
                paths[k].write_text(json.dumps([r for r in recs if r["n_features"] == k]))
        return [r for k in sorted(paths) for r in json.loads(paths[k].read_text())]


def eval_key(ranking, k: int, seed: int, n_runs: int) -> str:
    """The cache key of one evaluation at k genes: a hash of the top k genes, k, the seed, the runs and MAX_CELLS."""
    top = np.asarray(ranking[: int(k)], dtype=np.int64)
    return hashlib.sha1(top.tobytes() + json.dumps([int(k), seed, n_runs, MAX_CELLS]).encode()).hexdigest()[:16]


def run_set(
    p: Panel, label_sets, methods, candidates, n_random: int, grid=FEATURE_GRID, floors: bool = True
) -> list[dict]:
    """Rows of every selection on one set, for each of its label sets (and of random and all genes if ``floors``)."""
    from glfs.evaluate import random_gene_orders

    n, d = p.X.shape
    grid = [k for k in grid if k < d]
    rows = []

    def add(labels, method, draw, recs, sec):
        for r in recs:
            score = np.mean([r["ari"], r["ari_nlabels"], r["kmeans_ari"]])
            rows.append(
                {
                    "labels": labels,
                    "set": p.name,
                    "label_source": LABELS[labels][2],
                    "method": method,
                    "draw": draw,
                    "n_features": r["n_features"],
                    "run": r["run"],
                    "ari": r["ari"],
                    "ari_nlabels": r["ari_nlabels"],
                    "kmeans_ari": r["kmeans_ari"],
                    "nmi": r["nmi"],
                    "score": score,
                    "select_seconds": sec,
                    "n_cells": n,
                    "n_genes": d,
                    "load1": os.getloadavg()[0],
                }
            )

    named = [(m, None) for m in methods] + list(candidates.items())
    for method, fn in named:
        try:
            ranking, sec = p.ranking(method, fn)
        except Exception as exc:  # a failing method is logged, the run goes on
            log.warning("%s: %s failed: %s: %s", p.name, method, type(exc).__name__, exc)
            continue
        for labels in label_sets:
            t = time.perf_counter()
            recs = p.evaluate(labels, ranking, grid, seed=EVAL_SEED)
            add(labels, method, np.nan, recs, sec)
            log.info(
                "%s/%s: %-26s select %6.2f s, eval %5.1f s, score %s",
                p.name,
                labels,
                method,
                sec,
                time.perf_counter() - t,
                " ".join(
                    f"{r['n_features']}:{np.mean([r['ari'], r['ari_nlabels'], r['kmeans_ari']]):.3f}"
                    for r in recs
                    if r["run"] == 0
                ),
            )
    for labels in label_sets if floors else []:
        for i, (s_i, order) in enumerate(random_gene_orders(d, n_random, SEED) if n_random else []):
            add(labels, "random", i, p.evaluate(labels, order, grid, seed=s_i), 0.0)
        add(labels, "all_genes", np.nan, p.evaluate(labels, np.arange(d), [d], seed=EVAL_SEED), 0.0)
    return rows


# ---- summary -------------------------------------------------------------------------------


def complete_ks(S, rows, sets) -> list[int]:
    """The gene counts at which every given row has a score on every given set."""
    return [
        k
        for k in FEATURE_GRID
        if all((s, k) in S.columns for s in sets)
        and np.isfinite(S.loc[list(rows), [(s, k) for s in sets]].to_numpy()).all()
    ]


def write_summary(df: pd.DataFrame, run: str, path: Path) -> None:
    """The .md: scores per set and k, panel means, leave-one-dataset-out, times; ``run`` is its first paragraph."""
    S = score_matrix(df, FEATURE_GRID)
    methods = list(dict.fromkeys(df["method"]))
    panel = [s for s in PANEL if s in set(S.columns.get_level_values("labels"))]
    lines = [
        "# The real development panel (`benchmarks/real_panel.py`)",
        "",
        run,
        "",
        "Protocol: scanpy normalize_total + log1p; each selection's ranking evaluated by "
        "`glfs.evaluate.evaluate_ranking_leiden` (PCA 50 on the top k genes, 15-NN, Leiden over resolutions "
        f"0.2-2.0, k-means; {N_RUNS} run(s), seed {SEED}; sets above {MAX_CELLS} cells evaluated on a stratified "
        f"subsample of {MAX_CELLS}, the selections see every cell). score = mean of the ARI at the best resolution, "
        "at the labels' cluster count and of k-means. Where k >= the set's genes, every selection is all genes "
        "(the all-genes value is shown). random = mean of the seeded draws. `graph_moran@scanpy` = graph_moran "
        "given scanpy's graph (HVG seurat 2,000 -> PCA 50 -> 15-NN). Rows named `cand:` are the mean-bias designs "
        "of `benchmarks/panel_candidates.py`. An empty cell was not evaluated (time).",
        "",
        "Label bias: Bladder, Zeisel and Kang's cell types were found by clustering RNA on variable genes, "
        "which favours HVG-like selections in any evaluation against them; Stoeckius' types come from RNA and "
        "surface protein (CITE-seq), partly independent of RNA-only selection. Kang's donors (genotype "
        "demultiplexing) are independent of RNA but are a batch, not a type: they are not a label set here.",
        "",
    ]
    for k in FEATURE_GRID:
        t = S.xs(k, axis=1, level="k").reindex(methods).dropna(how="all")
        t = t[[c for c in t.columns if t[c].notna().any()]]
        if t.empty:
            continue
        t["panel mean"] = t[[s for s in panel if s in t.columns]].mean(axis=1, skipna=False)
        lines += [
            f"## Score at {k} genes",
            "",
            t.sort_values("panel mean", ascending=False).to_markdown(floatfmt=".3f"),
            "",
        ]
    mean_k = (
        pd.DataFrame({k: S.xs(k, axis=1, level="k")[panel].mean(axis=1, skipna=False) for k in FEATURE_GRID})
        .reindex(methods)
        .dropna(axis=1, how="all")
    )
    lines += [
        f"## Panel mean ({len(panel)} sets) by k",
        "",
        mean_k.sort_values(mean_k.columns[-1], ascending=False).to_markdown(floatfmt=".3f"),
        "",
    ]
    lines += lodo_section(S, panel) if len(panel) >= 2 else []
    sec = df[~df["method"].isin(NOT_METHODS)].groupby(["method", "set"])["select_seconds"].first()
    lines += [
        "## Selection time (s, wall, under the load above; a cached ranking keeps its first time)",
        "",
        "For `cand:` rows, scanpy's graph is not counted.",
        "",
        sec.unstack("set").to_markdown(floatfmt=".2f"),
        "",
    ]
    path.write_text("\n".join(lines))


def lodo_section(S, panel=PANEL) -> list[str]:
    """Leave-one-dataset-out of the registered selections and of the candidate designs (if any)."""
    methods = [m for m in S.index if m not in NOT_METHODS]
    registered = [m for m in methods if not m.startswith("cand:")]
    graph = [m for m in methods if m.startswith("cand:") or m.startswith("graph_moran")]
    out = [
        "## Leave-one-dataset-out",
        "",
        "Each fold chooses, on the other three sets (mean score over the gene counts shown), the best of a "
        "family, and scores that choice on the held-out set; `hvg` is the HVG flavour chosen the same way. "
        "`wins`: the choice scores at least the HVG choice and more than random genes, held out (mean over k). "
        "A choice counts only if it wins held out.",
        "",
    ]
    for title, family in (
        ("registered selections", registered),
        ("HVG flavours", [m for m in methods if m.startswith("hvg_")]),
        ("graph designs (candidates and graph_moran)", graph if len(graph) > 2 else []),
        ("everything", methods if len(graph) > 2 else []),
    ):
        if not family:
            continue
        ks = complete_ks(S, family + ["random"] if "random" in S.index else family, panel)
        if not ks:
            continue
        res = leave_one_dataset_out(S, family, panel, ks)
        out += [
            f"### Family: {title} (k = {', '.join(map(str, ks))})",
            "",
            lodo_table(res, S, panel, ks).to_markdown(index=False, floatfmt=".3f"),
            "",
        ]
    ref, others = "hvg_seurat_v3", [m for m in methods if m != "hvg_seurat_v3"]
    ks = complete_ks(S, [ref, *others], panel) if ref in S.index else []
    if ks:
        out += [
            f"### Each selection against {ref} alone (k = {', '.join(map(str, ks))})",
            "",
            "Held-out mean score minus seurat_v3's on each set; the folds whose other sets choose the "
            "design over seurat_v3 (a tie keeps seurat_v3), and how many of those it wins held out.",
            "",
            head_to_head(S, ref, others, panel, ks).to_markdown(index=False, floatfmt="+.3f"),
            "",
        ]
    return out


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for p in ("numpy", "scipy", "scanpy", "anndata", "leidenalg", "igraph", "scikit-misc"):
        try:
            out.append(f"{p} {version(p)}")
        except PackageNotFoundError:
            out.append(f"{p} -")
    return ", ".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", nargs="*", default=list(FILES), choices=list(FILES))
    ap.add_argument("--methods", nargs="*", default=None, help="registered methods (default: every single-cell one)")
    ap.add_argument(
        "--candidates",
        nargs="*",
        default=None,
        help="also the designs of benchmarks/panel_candidates.py (all of CANDIDATES, or these names)",
    )
    ap.add_argument("--skip", nargs="*", default=[], help="methods to leave out")
    ap.add_argument("--labels", nargs="*", default=None, help="label sets (default: all of the sets')")
    ap.add_argument(
        "--eval-seed",
        type=int,
        default=SEED,
        help="the evaluation's seed for the selections (another seed writes real_panel_seed<N>.*)",
    )
    ap.add_argument("--n-random", type=int, default=2)
    ap.add_argument(
        "--no-floors",
        action="store_true",
        help="skip random and all genes (their rows in the .tsv stay): a run of new selections only",
    )
    ap.add_argument("--grid", type=int, nargs="*", default=list(FEATURE_GRID), help="gene counts evaluated")
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--fresh", action="store_true", help="recompute the cached rankings")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--summary-only", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", datefmt="%H:%M:%S")
    for noisy in ("glfs", "scanpy", "anndata", "numba"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    global EVAL_SEED
    EVAL_SEED = args.eval_seed
    stem = "real_panel" if args.eval_seed == SEED else f"real_panel_seed{args.eval_seed}"
    tsv, md = args.out / f"{stem}.tsv", args.out / f"{stem}.md"
    if args.summary_only:
        old = md.read_text().splitlines() if md.exists() else []
        run = next((line for line in old if line.startswith("Run ")), "Run: unknown.")
        write_summary(pd.read_csv(tsv, sep="\t"), run, md)
        return 0
    methods = default_methods() if args.methods is None else list(args.methods)
    methods += [f"{m}@scanpy" for m in SCANPY_GRAPH if m in methods and args.methods is None]
    methods = [m for m in methods if m not in args.skip]
    candidates = {}
    if args.candidates is not None:
        from panel_candidates import CANDIDATES

        names = args.candidates or list(CANDIDATES)
        candidates = {f"cand:{k}": CANDIDATES[k] for k in names}
    load0, t0 = os.getloadavg()[0], time.perf_counter()
    old = pd.read_csv(tsv, sep="\t") if tsv.exists() else pd.DataFrame(columns=COLUMNS)
    rows = []
    for name in args.sets:
        p = Panel(name, args.cache, args.fresh)
        t = time.perf_counter()
        labs = [lab for lab, (s, _, _) in LABELS.items() if s == name and (args.labels is None or lab in args.labels)]
        rows += run_set(p, labs, methods, candidates, args.n_random, args.grid, floors=not args.no_floors)
        log.info("%s: done in %.0f s (load %.2f)", name, time.perf_counter() - t, os.getloadavg()[0])
    new = pd.DataFrame(rows).reindex(columns=COLUMNS)
    keep = old[~(old["labels"].isin(set(new["labels"])) & old["method"].isin(set(new["method"])))]  # the rest stays
    df = pd.concat([keep, new], ignore_index=True) if len(keep) else new
    args.out.mkdir(parents=True, exist_ok=True)
    df.to_csv(tsv, sep="\t", index=False, float_format="%.6g")
    run = (
        f"Run {datetime.now():%Y-%m-%d %H:%M} (sets {', '.join(args.sets)}): wall {(time.perf_counter() - t0) / 60:.1f} min, "
        f"load (1 min) {load0:.2f} at start, {os.getloadavg()[0]:.2f} at end, {os.cpu_count()} CPUs, nice 10; "
        f"{_versions()}."
    )
    write_summary(df, run, md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
