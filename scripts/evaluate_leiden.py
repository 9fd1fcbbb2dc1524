"""Rule evaluate_leiden: the single-cell protocol (glfs.evaluate.evaluate_ranking_leiden) on every method's ranking.

PCA -> kNN -> Leiden over the resolution grid and k-means on the PCs, on the top-k genes of
the log-normalised X (glfs_workflow.tables.leiden_matrix), for each k of the dataset's grid.
All genes are the same set for every ranking: evaluate_leiden_floor evaluates them once.
Output: results/{dataset}/clustering_leiden.tsv (glfs_workflow.tables.LEIDEN_COLUMNS).
"""

import anndata
import numpy as np
import pandas as pd

from glfs.evaluate import evaluate_ranking_leiden
from glfs_workflow.evaluation import evaluate_rankings, leiden_kwargs
from glfs_workflow.files import write_tsv
from glfs_workflow.logs import log_to
from glfs_workflow.tables import LEIDEN_COLUMNS, dataset_batches, leiden_matrix, with_batch_mixing

log = log_to(snakemake.log[0])  # noqa: F821
try:
    inp, par = snakemake.input, snakemake.params  # noqa: F821
    adata = anndata.read_h5ad(inp.adata)
    X, how = leiden_matrix(adata)
    labels = np.asarray(adata.obs["label"].astype(str))
    batches = dataset_batches(adata)  # batch mixing within cell types beside the ARI (datasets with batch_column)
    grid = [k for k in par.feature_grid if k != "all" and int(k) < adata.n_vars]
    kwargs = {**leiden_kwargs(par.leiden, par.seed), "batches": batches}
    log.info("Leiden protocol on %s (%s), %d methods, gene counts %s", inp.adata, how, len(inp.tables), grid)
    df = evaluate_rankings(
        inp.tables, lambda ranking: evaluate_ranking_leiden(X, labels, ranking, feature_grid=grid, **kwargs), score="ari"
    )
    write_tsv(pd.DataFrame(columns=LEIDEN_COLUMNS) if df is None else with_batch_mixing(df)[LEIDEN_COLUMNS],
              snakemake.output[0])  # noqa: F821
except Exception:
    log.exception("evaluate_leiden failed")
    raise
