"""Rule panel_summary: the panel's cross-set tables from the datasets' Leiden tables (glfs_workflow.panel).

Outputs (in the report directory): panel_scores.tsv (per set, method and gene count),
panel_summary.tsv (the mean over the sets) and panel_lodo.tsv (leave-one-dataset-out).
"""

import pandas as pd

from glfs_workflow.files import write_tsv
from glfs_workflow.logs import log_to
from glfs_workflow.panel import leave_one_dataset_out, panel_scores, panel_summary

log = log_to(snakemake.log[0])  # noqa: F821
try:
    inp, out, par = snakemake.input, snakemake.output, snakemake.params  # noqa: F821
    tables = {
        name: (pd.read_csv(leiden, sep="\t"), pd.read_csv(floor, sep="\t"))
        for name, leiden, floor in zip(par.datasets, inp.leiden, inp.floor)
    }
    scores = panel_scores(tables, list(par.feature_grid))  # the panel's grid; all genes where a set has fewer
    summary = panel_summary(scores)
    lodo = leave_one_dataset_out(scores)
    log.info("panel of %d sets, mean score per method and gene count:\n%s", len(tables), summary.to_string())
    log.info("leave-one-dataset-out:\n%s", lodo.to_string())
    write_tsv(scores, out.scores)
    write_tsv(summary, out.summary)
    write_tsv(lodo, out.lodo)
except Exception:
    log.exception("panel_summary failed")
    raise
