"""Rule evaluate_clustering: spectral/k-means clustering and LOO 1-NN of every method's ranking of a dataset."""

import anndata
import numpy as np
import pandas as pd

from glfs.evaluate import evaluate_ranking
from glfs_workflow.evaluation import clustering_kwargs, evaluate_rankings
from glfs_workflow.files import write_tsv
from glfs_workflow.logs import log_to

COLUMNS = ["method", "n_features", "run", "nmi", "nmi_max", "kmeans_acc", "kmeans_nmi", "loo_1nn_acc", "seed"]

log = log_to(snakemake.log[0])  # noqa: F821
try:
    inp, par = snakemake.input, snakemake.params  # noqa: F821
    adata = anndata.read_h5ad(inp.adata)
    df = None
    if "label" not in adata.obs:
        log.warning("%s has no obs['label']: clustering evaluation skipped", inp.adata)
    else:
        labels = np.asarray(adata.obs["label"].astype(str))
        kwargs = clustering_kwargs(par.clustering, n_clusters=par.n_clusters, random_state=par.seed)
        seen = {}  # gene sets two methods share (and all genes) are evaluated once
        df = evaluate_rankings(inp.tables, lambda r: evaluate_ranking(adata.X, labels, r, cache=seen, **kwargs), score="nmi")
    write_tsv(pd.DataFrame(columns=COLUMNS) if df is None else df[COLUMNS], snakemake.output[0])  # noqa: F821
except Exception:
    log.exception("evaluate_clustering failed")
    raise
