"""Rule select_features: one method on one dataset -> selection table (+ JSON sidecar)."""

import anndata
import numpy as np
import scipy.sparse as sp

import glfs
from glfs_workflow.files import write_json, write_tsv
from glfs_workflow.logs import log_to
from glfs_workflow.tables import selection_meta, selection_table
from glfs.api import method_info

log = log_to(snakemake.log[0])  # noqa: F821
try:
    inp, out, par = snakemake.input, snakemake.output, snakemake.params  # noqa: F821
    adata = anndata.read_h5ad(inp.adata)
    W = sp.load_npz(inp.graph).tocsr()
    info = method_info(par.method)
    labels = None
    if info.needs_labels:
        if "label" not in adata.obs:
            msg = f"method {par.method!r} needs labels; {inp.adata} has no obs['label']"
            raise ValueError(msg)
        labels = np.asarray(adata.obs["label"].astype(str))
    counts = None
    if info.needs_counts:
        if "counts" not in adata.layers:
            ds = snakemake.wildcards.dataset  # noqa: F821
            msg = (
                f"dataset {ds!r}: method {par.method!r} scores raw counts, but {inp.adata} has no layers['counts']: "
                f"the input of datasets.{ds}.expression does not hold raw counts (non-negative integers). "
                f"Name the .h5ad layer with the counts (datasets.{ds}.layer: counts) or leave {par.method!r} "
                f"out of datasets.{ds}.methods"
            )
            raise ValueError(msg)
        counts = adata.layers["counts"]
    elif info.optional_counts and "counts" in adata.layers:
        counts = adata.layers["counts"]
    n_features = int(min(par.n_features, adata.n_vars))
    log.info("%s on %s: X %d x %d, n_features=%d, params=%s", par.method, inp.adata, *adata.shape, n_features, dict(par.method_params))
    sel = glfs.select(
        adata.X,
        method=par.method,
        # glfs.select warns about an unused graph; a method that builds its own cell graph (own_graph) builds it
        graph=W if info.needs_graph and not info.own_graph else None,
        n_features=n_features,
        labels=labels,
        random_state=int(par.seed),
        counts=counts,
        **dict(par.method_params),
    )
    log.info("selected %d genes", int(np.sum(sel.selected)))
    write_tsv(selection_table(sel, adata.var_names), out.table)
    graph = ("own: " + str(sel.params.get("graph_built", "built by the method"))) if info.own_graph else (inp.graph if info.needs_graph else "none")
    write_json(selection_meta(sel, n_features=n_features, graph=graph), out.meta)
except Exception:
    log.exception("select_features failed")
    raise
