"""Rule evaluate_leiden: the single-cell protocol (glfs.evaluate.evaluate_ranking_leiden) on every method's ranking.

PCA -> kNN -> Leiden over the resolution grid and k-means on the PCs, on the top-k genes of
the log-normalised X (glfs_workflow.tables.leiden_matrix), for each k of the dataset's grid.
All genes are the same set for every ranking: evaluate_leiden_floor evaluates them once.
Output: results/{dataset}/clustering_leiden.tsv (glfs_workflow.tables.LEIDEN_COLUMNS).
"""

import time

import anndata
import numpy as np
import pandas as pd

from glfs.evaluate import evaluate_ranking_leiden, leiden_kwargs
from glfs_workflow.files import read_tsv, write_tsv
from glfs_workflow.logs import log_to
from glfs_workflow.tables import LEIDEN_COLUMNS, leiden_matrix

log = log_to(snakemake.log[0])  # noqa: F821
try:
    inp, par = snakemake.input, snakemake.params  # noqa: F821
    methods, tables = list(par.methods), list(inp.tables)
    if len(methods) != len(tables):
        msg = f"params.methods ({len(methods)}) and input.tables ({len(tables)}) must pair up"
        raise ValueError(msg)
    adata = anndata.read_h5ad(inp.adata)
    X, how = leiden_matrix(adata)
    labels = np.asarray(adata.obs["label"].astype(str))
    grid = [k for k in par.feature_grid if k != "all" and int(k) < adata.n_vars]
    log.info("Leiden protocol on %s (%s), %d methods, gene counts %s", inp.adata, how, len(methods), grid)
    frames = []
    for i, (method, path) in enumerate(zip(methods, tables), start=1):
        t0 = time.perf_counter()
        ranking = np.argsort(read_tsv(path)["rank"].to_numpy(), kind="stable")
        records = evaluate_ranking_leiden(X, labels, ranking, feature_grid=grid, **leiden_kwargs(par.leiden, par.seed))
        df = pd.DataFrame.from_records(records)
        df.insert(0, "method", method)
        frames.append(df)
        means = df.groupby("n_features")[["ari", "ari_nlabels"]].mean()
        log.info("%s (%d/%d): %.1f s; mean ARI by n_features:\n%s", method, i, len(methods), time.perf_counter() - t0, means.to_string())
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=LEIDEN_COLUMNS)
    write_tsv(out[LEIDEN_COLUMNS], snakemake.output[0])  # noqa: F821
except Exception:
    log.exception("evaluate_leiden failed")
    raise
