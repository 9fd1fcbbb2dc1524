"""Rule evaluate_leiden: the single-cell protocol (glfs.evaluate.evaluate_ranking_leiden) on every method's ranking,
then its floor: random genes and all genes.

PCA -> kNN -> Leiden over the resolution grid and k-means on the PCs, on the top-k genes of
the log-normalised X (glfs_workflow.tables.leiden_matrix), for each k of the dataset's grid.
Output: results/{dataset}/clustering_leiden.tsv (glfs_workflow.tables.LEIDEN_COLUMNS; when a method failed in
the selection job, one row for it marked ``status`` failed with its ``error``: glfs_workflow.tables.with_failures).
The floor, in the same process (one import of scanpy): random genes of every size of the grid
(leiden.random_draws seeded gene orders, glfs.evaluate.evaluate_random_floor with protocol
"leiden": the floor every method must clear), and all genes once (the same set for every
ranking), evaluated exactly like the methods.  Output: results/{dataset}/leiden_random.tsv, the
columns of clustering_leiden.tsv plus ``draw``; method "random_genes" (draw 0..) and "all_genes" (draw 0).
"""

import anndata
import numpy as np
import pandas as pd

from glfs.evaluate import evaluate_random_floor, evaluate_ranking_leiden
from glfs_workflow.evaluation import evaluate_rankings, failed_methods, leiden_kwargs
from glfs_workflow.files import write_tsv
from glfs_workflow.logs import log_to
from glfs_workflow.tables import LEIDEN_COLUMNS, dataset_batches, leiden_matrix, with_batch_mixing, with_failures

FLOOR_COLUMNS = [*LEIDEN_COLUMNS[:2], "draw", *LEIDEN_COLUMNS[2:]]


def floor_table(X, labels, d, grid, draws, kwargs, how):
    """leiden_random.tsv: the random-genes draws and all genes once."""
    f = pd.DataFrame.from_records(
        evaluate_random_floor(X, labels, n_draws=draws, protocol="leiden", feature_grid=grid, **kwargs)
    )
    f["method"] = "random_genes"
    frames = [f]
    log.info("random genes (%s): %d draws x %s genes done; now all %d genes", how, draws, grid, d)
    f = pd.DataFrame.from_records(evaluate_ranking_leiden(X, labels, np.arange(d), feature_grid=["all"], **kwargs))
    f["method"], f["draw"] = "all_genes", 0
    frames.append(f)
    df = with_batch_mixing(pd.concat(frames, ignore_index=True))[FLOOR_COLUMNS]
    summary = df.groupby(["method", "n_features"])[["ari", "ari_nlabels"]].agg(["mean", "std"])
    log.info("floor, mean/sd ARI:\n%s", summary.to_string())
    return df


log = log_to(snakemake.log[0])  # noqa: F821
try:
    inp, out, par = snakemake.input, snakemake.output, snakemake.params  # noqa: F821
    adata = anndata.read_h5ad(inp.adata)
    X, how = leiden_matrix(adata)
    labels = np.asarray(adata.obs["label"].astype(str))
    batches = dataset_batches(adata)  # batch mixing within cell types beside the ARI (datasets with batch_column)
    grid = [k for k in par.feature_grid if k != "all" and int(k) < adata.n_vars]
    kwargs = {**leiden_kwargs(par.leiden, par.seed), "batches": batches}
    log.info("Leiden protocol on %s (%s), %d methods, gene counts %s", inp.adata, how, len(inp.tables), grid)
    df = evaluate_rankings(
        inp.tables,
        lambda ranking: evaluate_ranking_leiden(X, labels, ranking, feature_grid=grid, **kwargs),
        score="ari",
    )
    # a method that failed in the selection job: one row marked failed, with its reason (no numbers)
    df = with_failures(None if df is None else with_batch_mixing(df), failed_methods(inp.tables), LEIDEN_COLUMNS)
    write_tsv(df, out.leiden)
    write_tsv(floor_table(X, labels, adata.n_vars, grid, int(par.leiden["random_draws"]), kwargs, how), out.floor)
except Exception:
    log.exception("evaluate_leiden failed")
    raise
