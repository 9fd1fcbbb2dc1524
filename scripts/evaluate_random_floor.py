"""Rule evaluate_random_floor: random genes of the same count, the floor every selection method must clear.

Each of ``n_draws`` seeded draws is a uniformly random order of all genes,
evaluated with the protocol of evaluate_clustering (glfs.evaluate.evaluate_random_floor
with protocol "spectral": the same feature grid, spectral clustering with the same kNN
affinity, k-means and LOO 1-NN), one clustering run per draw.  Draw i takes s_i =
run_seeds(seed, n_draws)[i]: the gene order is default_rng(s_i).permutation,
the clustering seed is run_seeds(s_i, 1)[0] (column ``seed``).  The spread over draws is the spread of random
gene sets; the report shows mean and sd per grid point beside every method.
Output: results/{dataset}/clustering_random.tsv, the columns of
clustering_nmi.tsv plus ``draw`` (method = "random_genes").
"""

import anndata
import numpy as np
import pandas as pd

from glfs_workflow.files import write_tsv
from glfs_workflow.logs import log_to
from glfs.evaluate import evaluate_random_floor
from glfs_workflow.evaluation import clustering_kwargs

COLUMNS = ["method", "n_features", "draw", "run", "nmi", "nmi_max", "kmeans_acc", "kmeans_nmi", "loo_1nn_acc", "seed"]

log = log_to(snakemake.log[0])  # noqa: F821
try:
    inp, par = snakemake.input, snakemake.params  # noqa: F821
    adata = anndata.read_h5ad(inp.adata)
    if "label" not in adata.obs:
        log.warning("%s has no obs['label']: random floor skipped", inp.adata)
        df = pd.DataFrame(columns=COLUMNS)
    else:
        labels = np.asarray(adata.obs["label"].astype(str))
        kwargs = clustering_kwargs(par.clustering, n_clusters=par.n_clusters, random_state=par.seed)
        records = evaluate_random_floor(adata.X, labels, n_draws=int(par.n_draws), protocol="spectral", **kwargs)
        df = pd.DataFrame.from_records(records)
        df.insert(0, "method", "random_genes")
        df = df[COLUMNS]
        summary = df.groupby("n_features")["nmi"].agg(["mean", "std"])
        log.info("random genes, %d draws: NMI mean/sd by n_features:\n%s", int(par.n_draws), summary.to_string())
    write_tsv(df, snakemake.output[0])  # noqa: F821
except Exception:
    log.exception("evaluate_random_floor failed")
    raise
