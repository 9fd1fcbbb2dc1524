"""Why the batch-aware graph_moran keeps cell types a little worse than seurat_v3 at 2,000 genes on Kang (issue 29).

    nice -n 19 python benchmarks/batch_genes_at_depth.py --datasets kang sim0.1 sim0.2 --replicates 0 1 2

A diagnostic: the cell-type labels are used only to describe genes and to score selections, never to choose one.
Per set and replicate (benchmarks/batch_noise.py's: Kang whole (0) and stratified 80 % subsamples (1, 2, ...);
simulated 4,000 x 2,000 with 4 Splat batches, seed = replicate), at a small and a deep selection (Kang 500 and
2,000 of 2,511 genes; the simulations 500 and 1,600 of 2,000, the same 80 % depth):

- the ARI (Leiden protocol at the labels' count, benchmarks/batch_selection.evaluate) and mixing of graph_moran with
  batches ranked three ways from one call (the same per-batch Moran's I and shares): ``moran_only`` (the mean
  within-batch Moran's I), ``minus_global`` (less the global between-batch share: rule minus_batch_share) and
  ``default`` (less the local share too: minus_global_local_share), ``default_clipped`` (the local share's negative
  values, noise below its null expectation, taken as 0: a share of variance is not negative), and of scanpy's
  seurat_v3 with batch_key;
- the genes that the default and seurat_v3 select differently (and the default and ``moran_only``), described by their cell-type share of variance
  (eta^2 of a one-way ANOVA by label), their within-type donor share (benchmarks/batch_mixing_genes.py), mean,
  share of cells expressing, mean Moran's I, global and local share, and which part of the score keeps
  seurat_v3's genes out (ranked within the top n by the mean Moran's I alone, or by it less the global share).
Writes benchmarks/results/batch_genes_at_depth.{tsv,md} (and _genes.tsv).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from batch_mixing_genes import within_type_donor_share  # noqa: E402
from batch_noise import replicates  # noqa: E402
from batch_selection import OUT, evaluate, lognorm  # noqa: E402


def type_share(X, labels):
    """Per gene: the between-label share of its variance (eta^2 of a one-way ANOVA by label)."""
    G = sp.csr_matrix((np.ones(labels.size), (np.unique(labels, return_inverse=True)[1], np.arange(labels.size))))
    size = np.asarray(G.sum(axis=1)).ravel()[:, None]
    sums = np.asarray((G @ X).todense() if sp.issparse(X) else G @ X)
    mean = sums.sum(axis=0) / labels.size
    between = (size * (sums / size - mean) ** 2).sum(axis=0)
    sq = np.asarray(X.multiply(X).sum(axis=0)).ravel() if sp.issparse(X) else (X * X).sum(axis=0)
    total = sq - labels.size * mean**2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, between / total, np.nan)


def ranked(score):
    """A Selection-like (ranking, selected) of a score, NaN last."""
    ranking = np.argsort(-np.where(np.isnan(score), -np.inf, score), kind="stable")
    return SimpleNamespace(ranking=ranking, selected=None)


def at(sel, n):
    selected = np.zeros(sel.ranking.size, dtype=bool)
    selected[sel.ranking[:n]] = True
    return SimpleNamespace(ranking=sel.ranking, selected=selected)


def gene_table(X, labels, batches, gm):
    Xd = X.toarray()
    return pd.DataFrame(
        {
            "type_share": type_share(X, labels),
            "donor_share_within_type": within_type_donor_share(Xd, labels, batches),
            "mean": Xd.mean(axis=0),
            "frac_expressing": (Xd > 0).mean(axis=0),
            "mean_moran_i": gm.extra["mean_moran_i"],
            "global_share": gm.extra["between_batch_share"],
            "local_share": gm.extra["local_batch_share"],
        }
    )


def one_replicate(dataset, rep, counts, labels, batches, depths, runs, methods=None):
    import glfs

    X = lognorm(counts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gm = glfs.select(X, "graph_moran", n_features_to_select=max(depths), batches=batches)
    mi, glob, loc = (
        np.asarray(gm.extra[k], dtype=float) for k in ("mean_moran_i", "between_batch_share", "local_batch_share")
    )
    variants = {
        "moran_only": ranked(mi),
        "minus_global": ranked(mi - np.nan_to_num(glob)),
        "default": ranked(mi - np.nan_to_num(glob) - np.nan_to_num(loc)),
        "default_clipped": ranked(mi - np.nan_to_num(glob) - np.maximum(np.nan_to_num(loc), 0.0)),
    }
    np.testing.assert_array_equal(variants["default"].ranking[: max(depths)], gm.ranking[: max(depths)])
    genes = gene_table(X, labels, batches, gm)
    rows, gene_rows = [], []
    for n in depths:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sv3 = glfs.select(X, "hvg_seurat_v3", n_features_to_select=n, batches=batches, counts=counts)
        for name, sel in {**variants, "hvg_seurat_v3": sv3}.items():
            if methods and name not in methods:
                continue
            sel_n = sel if name == "hvg_seurat_v3" else at(sel, n)
            score = evaluate(X, labels, sel_n, n, batches, runs)
            rows.append(
                {
                    "dataset": dataset,
                    "replicate": rep,
                    "n": n,
                    "method": name,
                    "load1": round(os.getloadavg()[0], 1),
                    **{k: round(v, 4) for k, v in score.items()},
                }
            )
            print(pd.DataFrame([rows[-1]]).to_string(index=False, header=False), flush=True)
        dflt, hv, mo = at(variants["default"], n).selected, sv3.selected, at(variants["moran_only"], n).selected
        for part, mask in (
            ("default only", dflt & ~hv),
            ("seurat_v3 only", hv & ~dflt),
            ("both", dflt & hv),
            ("moran_only, not default", mo & ~dflt),
            ("default, not moran_only", dflt & ~mo),
        ):
            for g in np.flatnonzero(mask):
                gene_rows.append(
                    {
                        "dataset": dataset,
                        "replicate": rep,
                        "n": n,
                        "set": part,
                        "gene": int(g),
                        **genes.iloc[g].to_dict(),
                        **{
                            f"in_top_{v}": bool(np.isin(g, variants[v].ranking[:n]))
                            for v in ("moran_only", "minus_global")
                        },
                    }
                )
    return rows, gene_rows


def summaries(df, genes) -> list[str]:
    out = ["## ARI and mixing (mean over replicates; paired difference against seurat_v3, min and max)", ""]
    ref = df[df.method == "hvg_seurat_v3"].set_index(["dataset", "replicate", "n"])
    t = []
    for (ds, n, m), g in df.groupby(["dataset", "n", "method"], sort=False):
        d = g.set_index(["dataset", "replicate", "n"])
        dif = d["ari_nlabels"] - ref.loc[d.index, "ari_nlabels"]
        dmix = d["batch_mixing"] - ref.loc[d.index, "batch_mixing"]
        t.append(
            {
                "dataset": ds,
                "n": n,
                "method": m,
                "replicates": len(g),
                "ARI": round(g.ari_nlabels.mean(), 3),
                "mixing": round(g.batch_mixing.mean(), 3),
                "ARI - seurat_v3": f"{dif.mean():+.3f} [{dif.min():+.3f}, {dif.max():+.3f}]",
                "mixing - seurat_v3": f"{dmix.mean():+.3f} [{dmix.min():+.3f}, {dmix.max():+.3f}]",
                "var_type": round(g.var_type.mean(), 4),
                "var_batch": round(g.var_batch.mean(), 4),
            }
        )
    out += [
        pd.DataFrame(t).to_markdown(index=False),
        "",
        "## The genes the two selections do not share (all replicates pooled)",
        "",
        "Medians; in_top_*: share of the set within the top n of graph_moran ranked by its mean Moran's I alone / "
        "less the global share (for seurat_v3's genes: kept out by the penalties when True, by Moran's I itself when False).",
        "",
    ]
    cols = [
        "type_share",
        "donor_share_within_type",
        "mean",
        "frac_expressing",
        "mean_moran_i",
        "global_share",
        "local_share",
    ]
    agg = genes.groupby(["dataset", "n", "set"], sort=False).agg(
        genes_per_replicate=("gene", lambda s: len(s) / genes.loc[s.index, "replicate"].nunique()),
        **{c: (c, "median") for c in cols},
        in_top_moran_only=("in_top_moran_only", "mean"),
        in_top_minus_global=("in_top_minus_global", "mean"),
    )
    out += [agg.round(4).reset_index().to_markdown(index=False), ""]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["kang", "sim0.1", "sim0.2"])
    ap.add_argument("--replicates", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument(
        "--methods",
        nargs="+",
        default=None,
        help="evaluate only these rows (default: all; seurat_v3 is needed for the paired differences)",
    )
    ap.add_argument("--out", default="batch_genes_at_depth")
    args = ap.parse_args()
    t0, load0 = time.time(), os.getloadavg()[0]
    rows, gene_rows = [], []
    for name in args.datasets:
        ns = SimpleNamespace(
            replicates=args.replicates,
            sim_cells=4000,
            sim_genes=2000,
            sim_batch_loc=[float(name.removeprefix("sim"))] if name != "kang" else [],
        )
        for dataset, rep, counts, labels, batches in replicates("kang" if name == "kang" else "sim", ns):
            depths = [500, 2000] if dataset == "kang" else [500, 1600]
            r, g = one_replicate(dataset, rep, counts, labels, batches, depths, args.runs, args.methods)
            rows += r
            gene_rows += g
    df, genes = pd.DataFrame(rows), pd.DataFrame(gene_rows)
    df.to_csv(os.path.join(OUT, f"{args.out}.tsv"), sep="\t", index=False)
    genes.to_csv(os.path.join(OUT, f"{args.out}_genes.tsv"), sep="\t", index=False)
    head = [
        "# graph_moran with batches against seurat_v3 at depth: which genes, and which part of the score",
        "",
        f"`python benchmarks/batch_genes_at_depth.py {' '.join(sys.argv[1:])}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(t0))}, {time.time() - t0:.0f} s, nice -n 19, 2 shared cores, "
        f"load {load0:.1f} before, {os.getloadavg()[0]:.1f} after).  ARI: at the labels' cluster count (Leiden protocol, "
        f"{args.runs} runs); mixing: kNN batch entropy within cell types.  The labels describe; they choose nothing.",
        "",
    ]
    Path(OUT, f"{args.out}.md").write_text("\n".join(head + summaries(df, genes)) + "\n")


if __name__ == "__main__":
    main()
