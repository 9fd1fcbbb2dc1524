"""Rule build_graph: patient-similarity graph of results/{dataset}/prepared.h5ad."""

import time

import anndata
import scipy.sparse as sp

from glfs import similarity_graph
from glfs_workflow.files import atomic_path
from glfs_workflow.logs import log_to

log = log_to(snakemake.log[0])  # noqa: F821
try:
    adata = anndata.read_h5ad(snakemake.input[0])  # noqa: F821
    gp = {k: v for k, v in dict(snakemake.params.graph).items() if v is not None}  # noqa: F821
    if adata.n_obs <= gp["n_neighbors"]:  # checked here, not in prepare_dataset: graph settings are this rule's params
        msg = (
            f"{snakemake.input[0]}: {adata.n_obs} samples but graph.n_neighbors = {gp['n_neighbors']}; a kNN graph "  # noqa: F821
            f"needs more samples than neighbours (lower graph.n_neighbors or add samples to dataset "
            f"{snakemake.wildcards.dataset!r})"  # noqa: F821
        )
        raise ValueError(msg)
    log.info("building the graph of %d samples x %d genes, params %s", *adata.shape, gp)
    t0 = time.perf_counter()
    W = similarity_graph(adata.X, **gp)
    log.info("graph of %d samples, %d edges, params %s, %.1f s", W.shape[0], W.nnz // 2, gp, time.perf_counter() - t0)
    with atomic_path(snakemake.output[0]) as tmp:  # noqa: F821
        sp.save_npz(tmp, W.tocsr())
except Exception:
    log.exception("build_graph failed")
    raise
