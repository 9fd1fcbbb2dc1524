"""Rule evaluate_clustering: spectral/k-means clustering and LOO 1-NN over the feature grid."""

import anndata
import numpy as np
import pandas as pd

from glfs_workflow.files import read_tsv, write_tsv
from glfs_workflow.logs import log_to
from glfs.evaluate import evaluate_ranking

COLUMNS = ["method", "n_features", "run", "nmi", "nmi_max", "kmeans_acc", "kmeans_nmi", "loo_1nn_acc", "seed"]

log = log_to(snakemake.log[0])  # noqa: F821
try:
    inp, par = snakemake.input, snakemake.params  # noqa: F821
    adata = anndata.read_h5ad(inp.adata)
    table = read_tsv(inp.table)
    if "label" not in adata.obs:
        log.warning("%s has no obs['label']: clustering evaluation skipped", inp.adata)
        df = pd.DataFrame(columns=COLUMNS)
    else:
        ranking = np.argsort(table["rank"].to_numpy(), kind="stable")
        cl = dict(par.clustering)
        records = evaluate_ranking(
            adata.X,
            np.asarray(adata.obs["label"].astype(str)),
            ranking,
            feature_grid=cl["feature_grid"],
            n_clusters=par.n_clusters,
            n_runs=int(cl["n_runs"]),
            affinity_neighbors=int(cl["affinity_neighbors"]),
            random_state=int(par.seed),
            max_samples=cl["max_samples"],
        )
        df = pd.DataFrame.from_records(records)
        df.insert(0, "method", par.method)
        df = df[COLUMNS]
        log.info("mean NMI by n_features:\n%s", df.groupby("n_features")["nmi"].mean().to_string())
    write_tsv(df, snakemake.output[0])  # noqa: F821
except Exception:
    log.exception("evaluate_clustering failed")
    raise
