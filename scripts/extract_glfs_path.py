"""Rule extract_glfs_path: the default GLFS variant's lam path -> results/{dataset}/glfs_path.tsv.

Columns: method, lam, n_selected, objective, converged, kkt_residual (the last two
from the path records of glfs.designs.gradient: whether the point reached the KKT
tolerance, and its scaled KKT residual; empty when the method records none).
"""

import json
from pathlib import Path

import pandas as pd

from glfs_workflow.files import write_tsv
from glfs_workflow.logs import log_to
from glfs_workflow.tables import path_table

COLUMNS = ["lam", "n_selected", "objective", "converged", "kkt_residual"]

log = log_to(snakemake.log[0])  # noqa: F821
try:
    meta = json.loads(Path(snakemake.input.meta).read_text())  # noqa: F821
    df = path_table(meta)
    if df is None:
        log.warning("%s records no lam path; writing an empty table", snakemake.input.meta)  # noqa: F821
        df = pd.DataFrame(columns=COLUMNS)
    df = df.rename(columns={"kkt": "kkt_residual"})
    for col in ("converged", "kkt_residual"):
        if col not in df:
            log.warning("%s: the path records no %r column; left empty", snakemake.input.meta, col)  # noqa: F821
            df[col] = pd.NA
    df = df[COLUMNS]
    conv = df["converged"]
    if len(df) and conv.notna().all() and not conv.astype(bool).all():
        log.warning("%d of %d GLFS path points did not converge", int((~conv.astype(bool)).sum()), len(df))
    df.insert(0, "method", meta["method"])
    write_tsv(df, snakemake.output[0])  # noqa: F821
except Exception:
    log.exception("extract_glfs_path failed")
    raise
