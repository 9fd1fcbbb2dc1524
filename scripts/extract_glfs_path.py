"""Rule extract_glfs_path: the default GLFS variant's lam path -> results/{dataset}/glfs_path.tsv."""

import json
from pathlib import Path

import pandas as pd

from glfs._annotate import log_to, path_table, write_tsv

log = log_to(snakemake.log[0])  # noqa: F821
try:
    meta = json.loads(Path(snakemake.input.meta).read_text())  # noqa: F821
    df = path_table(meta)
    if df is None:
        log.warning("%s records no lam path; writing an empty table", snakemake.input.meta)  # noqa: F821
        df = pd.DataFrame(columns=["lam", "n_selected", "objective"])
    df.insert(0, "method", meta["method"])
    write_tsv(df, snakemake.output[0])  # noqa: F821
except Exception:
    log.exception("extract_glfs_path failed")
    raise
