"""Rule evaluate_leiden_floor: random genes and all genes under the single-cell protocol.

Random genes of every size of the dataset's grid (leiden.random_draws seeded gene orders,
glfs.evaluate.evaluate_random_floor with protocol "leiden": the floor every method must clear), and all genes once
(the same set for every ranking), evaluated exactly like evaluate_leiden's methods.
Output: results/{dataset}/leiden_random.tsv, the columns of clustering_leiden.tsv plus
``draw``; method "random_genes" (draw 0..) and "all_genes" (draw 0).
"""

import anndata
import numpy as np
import pandas as pd

from glfs.evaluate import evaluate_random_floor, evaluate_ranking_leiden
from glfs_workflow.evaluation import leiden_kwargs
from glfs_workflow.files import write_tsv
from glfs_workflow.logs import log_to
from glfs_workflow.tables import LEIDEN_COLUMNS, dataset_batches, leiden_matrix, with_batch_mixing

COLUMNS = [*LEIDEN_COLUMNS[:2], "draw", *LEIDEN_COLUMNS[2:]]

log = log_to(snakemake.log[0])  # noqa: F821
try:
    inp, par = snakemake.input, snakemake.params  # noqa: F821
    adata = anndata.read_h5ad(inp.adata)
    X, how = leiden_matrix(adata)
    labels = np.asarray(adata.obs["label"].astype(str))
    d = adata.n_vars
    grid = [k for k in par.feature_grid if k != "all" and int(k) < d]
    kwargs = {**leiden_kwargs(par.leiden, par.seed), "batches": dataset_batches(adata)}
    draws = int(par.leiden["random_draws"])
    f = pd.DataFrame.from_records(
        evaluate_random_floor(X, labels, n_draws=draws, protocol="leiden", feature_grid=grid, **kwargs)
    )
    f["method"] = "random_genes"
    frames = [f]
    log.info("random genes on %s (%s): %d draws x %s genes done; now all %d genes", inp.adata, how, draws, grid, d)
    f = pd.DataFrame.from_records(evaluate_ranking_leiden(X, labels, np.arange(d), feature_grid=["all"], **kwargs))
    f["method"], f["draw"] = "all_genes", 0
    frames.append(f)
    df = with_batch_mixing(pd.concat(frames, ignore_index=True))[COLUMNS]
    summary = df.groupby(["method", "n_features"])[["ari", "ari_nlabels"]].agg(["mean", "std"])
    log.info("floor, mean/sd ARI:\n%s", summary.to_string())
    write_tsv(df, snakemake.output[0])  # noqa: F821
except Exception:
    log.exception("evaluate_leiden_floor failed")
    raise
