"""Rule merge_clustering: concatenate the per-method tables into one."""

from glfs_workflow.files import concat_tsv
from glfs_workflow.logs import log_to

log = log_to(snakemake.log[0])  # noqa: F821
try:
    df = concat_tsv(list(snakemake.input), snakemake.output[0])  # noqa: F821
    log.info("%d rows from %d tables", len(df), len(snakemake.input))  # noqa: F821
except Exception:
    log.exception("merge_clustering failed")
    raise
