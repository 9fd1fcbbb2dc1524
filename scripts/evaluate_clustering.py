"""Rule evaluate_clustering: spectral/k-means clustering and LOO 1-NN of every method's ranking of a dataset,
and of random genes of the same counts (the floor every selection method must clear).

Methods: results/{dataset}/clustering_nmi.tsv.  The floor, in the same process (it reads the same
data): each of ``n_draws`` seeded draws is a uniformly random order of all genes, evaluated with
the same protocol (glfs.evaluate.evaluate_random_floor with protocol "spectral": the same feature
grid, spectral clustering with the same kNN affinity, k-means and LOO 1-NN), one clustering run per
draw.  Draw i takes s_i = run_seeds(seed, n_draws)[i]: the gene order is default_rng(s_i).permutation,
the clustering seed is run_seeds(s_i, 1)[0] (column ``seed``).  The spread over draws is the spread of
random gene sets; the report shows mean and sd per grid point beside every method.  Output:
results/{dataset}/clustering_random.tsv, the columns of clustering_nmi.tsv plus ``draw``
(method = "random_genes").
"""

import anndata
import numpy as np
import pandas as pd

from glfs.evaluate import evaluate_random_floor, evaluate_ranking
from glfs_workflow.evaluation import clustering_kwargs, evaluate_rankings, failed_methods
from glfs_workflow.files import write_tsv
from glfs_workflow.logs import log_to
from glfs_workflow.tables import with_failures

COLUMNS = ["method", "n_features", "run", "nmi", "nmi_max", "kmeans_acc", "kmeans_nmi", "loo_1nn_acc", "seed"]
FLOOR_COLUMNS = [*COLUMNS[:2], "draw", *COLUMNS[2:]]

log = log_to(snakemake.log[0])  # noqa: F821
try:
    inp, out, par = snakemake.input, snakemake.output, snakemake.params  # noqa: F821
    adata = anndata.read_h5ad(inp.adata)
    df, floor = None, pd.DataFrame(columns=FLOOR_COLUMNS)
    if "label" not in adata.obs:
        log.warning("%s has no obs['label']: clustering evaluation and random floor skipped", inp.adata)
    else:
        labels = np.asarray(adata.obs["label"].astype(str))
        kwargs = clustering_kwargs(par.clustering, n_clusters=par.n_clusters, random_state=par.seed)
        seen = {}  # gene sets two methods share (and all genes) are evaluated once
        df = evaluate_rankings(
            inp.tables, lambda r: evaluate_ranking(adata.X, labels, r, cache=seen, **kwargs), score="nmi"
        )
        records = evaluate_random_floor(adata.X, labels, n_draws=int(par.n_draws), protocol="spectral", **kwargs)
        floor = pd.DataFrame.from_records(records)
        floor.insert(0, "method", "random_genes")
        floor = floor[FLOOR_COLUMNS]
        summary = floor.groupby("n_features")["nmi"].agg(["mean", "std"])
        log.info("random genes, %d draws: NMI mean/sd by n_features:\n%s", int(par.n_draws), summary.to_string())
    # a method that failed in the selection job: one row marked failed, with its reason (no numbers)
    write_tsv(with_failures(df, failed_methods(inp.tables), COLUMNS), out.nmi)
    write_tsv(floor, out.floor)
except Exception:
    log.exception("evaluate_clustering failed")
    raise
