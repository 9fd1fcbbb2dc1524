"""Rule evaluate_clustering: spectral/k-means clustering and LOO 1-NN of every method's ranking of a dataset."""

import time

import anndata
import numpy as np
import pandas as pd

from glfs_workflow.files import read_tsv, write_tsv
from glfs_workflow.logs import log_to
from glfs.evaluate import clustering_kwargs, evaluate_ranking

COLUMNS = ["method", "n_features", "run", "nmi", "nmi_max", "kmeans_acc", "kmeans_nmi", "loo_1nn_acc", "seed"]


def evaluate_method(adata, table_path, method, par) -> pd.DataFrame:
    """One method's rows: evaluate_ranking of its ranking over the feature grid."""
    table = read_tsv(table_path)
    ranking = np.argsort(table["rank"].to_numpy(), kind="stable")
    kwargs = clustering_kwargs(par.clustering, n_clusters=par.n_clusters, random_state=par.seed)
    records = evaluate_ranking(adata.X, np.asarray(adata.obs["label"].astype(str)), ranking, **kwargs)
    df = pd.DataFrame.from_records(records)
    df.insert(0, "method", method)
    return df[COLUMNS]


log = log_to(snakemake.log[0])  # noqa: F821
try:
    inp, par = snakemake.input, snakemake.params  # noqa: F821
    methods, tables = list(par.methods), list(inp.tables)
    if len(methods) != len(tables):
        msg = f"params.methods ({len(methods)}) and input.tables ({len(tables)}) must pair up"
        raise ValueError(msg)
    adata = anndata.read_h5ad(inp.adata)
    if "label" not in adata.obs:
        log.warning("%s has no obs['label']: clustering evaluation skipped", inp.adata)
        df = pd.DataFrame(columns=COLUMNS)
    else:
        frames = []
        for i, (method, path) in enumerate(zip(methods, tables), start=1):
            t0 = time.perf_counter()
            frames.append(evaluate_method(adata, path, method, par))
            means = frames[-1].groupby("n_features")["nmi"].mean()
            log.info("%s (%d/%d): %.1f s; mean NMI by n_features:\n%s", method, i, len(methods),
                     time.perf_counter() - t0, means.to_string())
        df = pd.concat(frames, ignore_index=True)
    write_tsv(df, snakemake.output[0])  # noqa: F821
except Exception:
    log.exception("evaluate_clustering failed")
    raise
