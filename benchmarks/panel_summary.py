"""The development panel's summary for the workflow report's advice.

Reads ``benchmarks/results/real_panel.tsv`` (``benchmarks/real_panel.py``) and writes
``resources/singlecell/panel_summary.tsv``: per registered single-cell selection and random genes,
the mean score over the panel's sets at 500 and 2,000 genes (``glfs_workflow.which.ADVICE_COUNTS``),
the same panel mean as ``real_panel.md``'s "panel mean" column: a set with no more genes than asked
gives its all-genes score to every selection.  Run it after ``real_panel.py``::

    python benchmarks/panel_summary.py
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from glfs.api import METHODS
from glfs_workflow.which import ADVICE_COUNTS, ALL_GENES, RANDOM_GENES

ROOT = Path(__file__).resolve().parents[1]
PANEL = ROOT / "benchmarks" / "results" / "real_panel.tsv"
OUT = ROOT / "resources" / "singlecell" / "panel_summary.tsv"
RANDOM = "random"  # real_panel.tsv's name of the random-genes rows


def panel_summary(df: pd.DataFrame) -> pd.DataFrame:
    """method, n_genes, mean_score, n_sets: each registered method's and random genes' panel mean."""
    df = df[df["labels"] == df["set"]]  # the sets' own labels (Zeisel's subclasses are an extra label set)
    per = df.groupby(["set", "method", "n_features"])["score"].mean()  # over runs and random draws
    genes = df.groupby("set")["n_genes"].first()
    rows = []
    methods = [m for m in df["method"].unique() if m in METHODS] + [RANDOM]
    for k in ADVICE_COUNTS:
        for m in methods:
            vals = [
                per.get((s, ALL_GENES, int(genes[s]))) if k >= genes[s] else per.get((s, m, k)) for s in genes.index
            ]
            if all(v is not None for v in vals):
                rows.append(
                    {
                        "method": RANDOM_GENES if m == RANDOM else m,
                        "n_genes": k,
                        "mean_score": round(float(sum(vals) / len(vals)), 4),
                        "n_sets": len(vals),
                    }
                )
    return pd.DataFrame(rows)


if __name__ == "__main__":
    out = panel_summary(pd.read_csv(PANEL, sep="\t"))
    out.to_csv(OUT, sep="\t", index=False)
    print(out.to_string(index=False))
