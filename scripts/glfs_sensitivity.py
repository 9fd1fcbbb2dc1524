"""Rule glfs_sensitivity: post-hoc lambda1 sensitivity of the well-posed GLFS on an evaluated dataset.

For every ``graph_weight`` of config glfs_sensitivity.graph_weights (lambda1 =
graph_weight / mean degree of the graph, glfs.designs._budgeted.scale_free_lambdas), the
well-posed GLFS (glfs.select(..., method=glfs.api.DESIGN_GLFS), passed as params.method) selects the configured
n_features genes with the configured graph and its other parameters
(selection.params.glfs); its ranking is evaluated with the protocol of
clustering_nmi.tsv (glfs.evaluate.evaluate_ranking: spectral clustering, the
same affinity and run seeds) at the gene counts of glfs_sensitivity.feature_grid.
This is a sensitivity analysis on the evaluated data, not tuning: the default
graph_weight was chosen on the planted simulation (docs/methods/glfs-design.md).

Output results/{dataset}/glfs_sensitivity.tsv, one row per (graph_weight, k):
graph_weight, is_default, lambda1, lambda2, n_selected, criterion,
greedy_criterion, converged, n_swaps, k, nmi_mean, nmi_sd, nmi_max_mean, n_runs.
"""

import anndata
import numpy as np
import pandas as pd
import scipy.sparse as sp

import glfs
from glfs.designs import DEFAULT_GRAPH_WEIGHT
from glfs.evaluate import evaluate_ranking
from glfs_workflow.evaluation import clustering_kwargs
from glfs_workflow.files import write_tsv
from glfs_workflow.logs import log_to

COLUMNS = [
    "graph_weight",
    "is_default",
    "lambda1",
    "lambda2",
    "n_selected",
    "criterion",
    "greedy_criterion",
    "converged",
    "n_swaps",
    "k",
    "nmi_mean",
    "nmi_sd",
    "nmi_max_mean",
    "n_runs",
]

log = log_to(snakemake.log[0])  # noqa: F821
try:
    inp, par = snakemake.input, snakemake.params  # noqa: F821
    adata = anndata.read_h5ad(inp.adata)
    W = sp.load_npz(inp.graph).tocsr()
    rows = []
    if "label" not in adata.obs:
        log.warning("%s has no obs['label']: sensitivity panel skipped", inp.adata)
    else:
        labels = np.asarray(adata.obs["label"].astype(str))
        params = dict(par.method_params)
        default = float(params.pop("graph_weight", DEFAULT_GRAPH_WEIGHT))
        n_features = int(min(par.n_features, adata.n_vars))
        # the clustering of evaluate_clustering (same affinity, seeds and max_samples subsample), on this grid
        kwargs = clustering_kwargs(par.clustering, n_clusters=par.n_clusters, random_state=par.seed)
        kwargs["feature_grid"] = list(par.feature_grid)
        seen = {}  # a top-k gene set that two graph weights share is clustered once
        for gw in par.graph_weights:
            sel = glfs.select(
                adata.X, method=par.method, graph=W, n_features_to_select=n_features, graph_weight=float(gw), **params
            )
            p = dict(sel.params)
            records = pd.DataFrame.from_records(
                evaluate_ranking(adata.X, labels, np.asarray(sel.ranking), cache=seen, **kwargs)
            )
            for k, g in records.groupby("n_features"):
                rows.append(
                    {
                        "graph_weight": float(gw),
                        "is_default": bool(np.isclose(float(gw), default)),
                        "lambda1": p["lambda1"],
                        "lambda2": p["lambda2"],
                        "n_selected": int(np.sum(sel.selected)),
                        "criterion": p["criterion"],
                        "greedy_criterion": p["greedy_criterion"],
                        "converged": bool(p["converged"]),
                        "n_swaps": int(p["n_swaps"]),
                        "k": int(k),
                        "nmi_mean": float(g["nmi"].mean()),
                        "nmi_sd": float(g["nmi"].std(ddof=1)) if len(g) > 1 else float("nan"),
                        "nmi_max_mean": float(g["nmi_max"].mean()),
                        "n_runs": int(len(g)),
                    }
                )
            log.info(
                "graph_weight %g: lambda1 %.4g, criterion %.6g, converged %s, NMI %s",
                gw,
                p["lambda1"],
                p["criterion"],
                p["converged"],
                records.groupby("n_features")["nmi"].mean().round(3).to_dict(),
            )
    write_tsv(pd.DataFrame(rows, columns=COLUMNS), snakemake.output[0])  # noqa: F821
except Exception:
    log.exception("glfs_sensitivity failed")
    raise
