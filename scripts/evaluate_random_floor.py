"""Rule evaluate_random_floor: random genes of the same count, the floor every selection method must clear.

Each of ``n_draws`` seeded draws is a uniformly random order of all genes,
evaluated with the protocol of evaluate_clustering (glfs.evaluate.evaluate_ranking:
the same feature grid, spectral clustering with the same kNN affinity, k-means
and LOO 1-NN), one clustering run per draw.  Draw i takes s_i =
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
from glfs.evaluate import evaluate_ranking, random_gene_orders, stratified_subsample

COLUMNS = ["method", "n_features", "draw", "run", "nmi", "nmi_max", "kmeans_acc", "kmeans_nmi", "loo_1nn_acc", "seed"]

log = log_to(snakemake.log[0])  # noqa: F821
try:
    inp, par = snakemake.input, snakemake.params  # noqa: F821
    adata = anndata.read_h5ad(inp.adata)
    if "label" not in adata.obs:
        log.warning("%s has no obs['label']: random floor skipped", inp.adata)
        df = pd.DataFrame(columns=COLUMNS)
    else:
        cl = dict(par.clustering)
        n_draws = int(par.n_draws)
        labels = np.asarray(adata.obs["label"].astype(str))
        X = adata.X
        if cl["max_samples"] is not None and cl["max_samples"] < adata.n_obs:
            # the same stratified subsample as evaluate_clustering (seeded by the workflow seed)
            keep = stratified_subsample(labels, int(cl["max_samples"]), int(par.seed))
            log.info("random floor: %d samples; evaluating the stratified subsample of %d (max_samples)", adata.n_obs, keep.size)
            X, labels = X[keep], labels[keep]
        d = adata.n_vars
        frames = []
        for i, (s, ranking) in enumerate(random_gene_orders(d, n_draws, int(par.seed))):
            records = evaluate_ranking(
                X,
                labels,
                ranking,
                feature_grid=cl["feature_grid"],
                n_clusters=par.n_clusters,
                n_runs=1,
                affinity_neighbors=int(cl["affinity_neighbors"]),
                random_state=int(s),
                eigen_solver=cl["eigen_solver"],
            )
            f = pd.DataFrame.from_records(records)
            f["draw"] = i
            frames.append(f)
        df = pd.concat(frames, ignore_index=True)
        df.insert(0, "method", "random_genes")
        df = df[COLUMNS]
        summary = df.groupby("n_features")["nmi"].agg(["mean", "std"])
        log.info("random genes, %d draws: NMI mean/sd by n_features:\n%s", n_draws, summary.to_string())
    write_tsv(df, snakemake.output[0])  # noqa: F821
except Exception:
    log.exception("evaluate_random_floor failed")
    raise
