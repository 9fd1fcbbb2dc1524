"""Rule select_features: one method on one dataset -> selection table (+ JSON sidecar)."""

import anndata
import numpy as np
import scipy.sparse as sp

import glfs
from glfs_workflow.datasets import check_counts_kept
from glfs_workflow.files import write_json, write_tsv
from glfs_workflow.logs import log_to
from glfs_workflow.tables import dataset_batches, selection_graph, selection_meta, selection_table

log = log_to(snakemake.log[0])  # noqa: F821
try:
    inp, out, par = snakemake.input, snakemake.output, snakemake.params  # noqa: F821
    adata = anndata.read_h5ad(inp.adata)
    check_counts_kept(adata, par.method, snakemake.wildcards.dataset, inp.adata)  # noqa: F821
    n_features = int(min(par.n_features, adata.n_vars))
    # a dataset with batch_column: the batch-aware methods select within its batches (docs/methods.md)
    batch_key = "batch" if dataset_batches(adata) is not None and glfs.METHODS[par.method].batch else None
    if dataset_batches(adata) is not None and batch_key is None:
        log.info("%s takes no batches (MethodInfo.batch): selected on all cells of the batched dataset", par.method)
    log.info("%s on %s: X %d x %d, n_features=%d, params=%s", par.method, inp.adata, *adata.shape, n_features, dict(par.method_params))
    sel = glfs.tl.selection(
        adata,
        par.method,
        n_features,
        labels_key="label",
        default_graph=sp.load_npz(inp.graph).tocsr(),  # the dataset's graph (a method that builds its own ignores it)
        random_state=int(par.seed),
        batch_key=batch_key,
        **dict(par.method_params),
    )
    log.info("selected %d genes", int(np.sum(sel.selected)))
    write_tsv(selection_table(sel, adata.var_names), out.table)
    write_json(selection_meta(sel, n_features=n_features, graph=selection_graph(sel, inp.graph)), out.meta)
except Exception:
    log.exception("select_features failed")
    raise
