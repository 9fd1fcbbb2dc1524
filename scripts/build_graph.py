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
    log.info("building the graph of %d samples x %d genes, params %s", *adata.shape, gp)
    t0 = time.perf_counter()
    W = similarity_graph(adata.X, **gp)
    log.info("graph of %d samples, %d edges, params %s, %.1f s", W.shape[0], W.nnz // 2, gp, time.perf_counter() - t0)
    with atomic_path(snakemake.output[0]) as tmp:  # noqa: F821
        sp.save_npz(tmp, W.tocsr())
except Exception:
    log.exception("build_graph failed")
    raise
