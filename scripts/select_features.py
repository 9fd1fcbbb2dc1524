"""Rule select_features_{dataset}: every method of one dataset -> its selection tables (+ JSON sidecars),
results/{dataset}/adata.h5ad with all of them, and, where they apply, glfs_path.tsv and glfs_vs_greedy.tsv.

One process per dataset, not one per (dataset, method) or per output: a bulk method's work is 0.02-0.3 CPU s
against 1.7-2.5 s of imports and snakemake's preamble in each job (studies/workflow-runtime.md, "Workflow runtime").  The
methods run one after another on the same prepared data and graph, each exactly as a job of its own would run
it (its own seed, parameters and files); ``params.methods``, ``output.tables`` and ``output.metas`` are in the
same order.  A method that raises on the dataset is recorded as failed, with its reason, in its table and
sidecar (glfs_workflow.tables.failed_table / failed_meta) and in ``uns["failed_selections"]`` of adata.h5ad;
the other methods still run.  Errors of the input (an unreadable file, counts missing for a count method)
still fail the job.  Then, from the files just written:
- ``output.glfs_vs_greedy`` (when the well-posed GLFS is among the methods): its criterion against greedy
  LapAOFS at ``params.ks`` genes (glfs_workflow.evaluation.glfs_vs_greedy);
- ``output.adata``: the prepared data with the graph and every method's selection (layout of glfs.tl.select;
  README, "Outputs"; glfs_workflow.tables.annotate_dataset);
- ``output.glfs_path`` (when a published GLFS reading is among the methods): its lam path
  (glfs_workflow.tables.glfs_path_frame).
"""

import json
import sys
from pathlib import Path

import anndata
import numpy as np

import glfs
from glfs_workflow.datasets import check_counts_kept
from glfs_workflow.evaluation import glfs_vs_greedy
from glfs_workflow.files import DiskFullError, read_tsv, write_h5ad_atomic, write_json, write_tsv
from glfs_workflow.logs import log_to
from glfs_workflow.readers import read_graph
from glfs_workflow.tables import (
    FAILED,
    annotate_dataset,
    dataset_batches,
    failed_meta,
    failed_table,
    failure_reason,
    glfs_path_frame,
    selection_graph,
    selection_meta,
    selection_table,
)

log = log_to(snakemake.log[0])  # noqa: F821
try:
    inp, out, par = snakemake.input, snakemake.output, snakemake.params  # noqa: F821
    dataset, methods = snakemake.wildcards.dataset, list(par.methods)  # noqa: F821
    adata = anndata.read_h5ad(inp.adata)
    # A count method on a dataset without counts: named in the dataset's own `methods`, it stops the job before
    # any method runs (a config error); from a default list, it is recorded as failed and the others run.
    no_counts = {}
    for method in methods:
        try:
            check_counts_kept(adata, method, dataset, inp.adata)
        except ValueError as exc:
            if par.methods_named:
                raise
            no_counts[method] = exc
    graph = read_graph(inp.graph, adata.n_obs)  # the dataset's graph (a method that builds its own ignores it)
    n_features = int(min(par.n_features, adata.n_vars))
    batched = dataset_batches(adata) is not None
    for method, table, meta in zip(methods, out.tables, out.metas, strict=True):
        # a dataset with batch_column: the batch-aware methods select within its batches (docs/methods/batch-aware.md)
        batch_key = "batch" if batched and glfs.METHODS[method].batch else None
        if batched and batch_key is None:
            log.info("%s takes no batches (MethodInfo.batch): selected on all cells of the batched dataset", method)
        params = dict(par.method_params[method])
        log.info("%s on %s: X %d x %d, n_features=%d, params=%s", method, inp.adata, *adata.shape, n_features, params)
        try:
            if method in no_counts:
                raise no_counts[method]
            sel = glfs.tl.selection(
                adata,
                method,
                n_features,
                labels_key="label",
                default_graph=graph,
                random_state=int(par.seed),
                batch_key=batch_key,
                **params,
            )
        except DiskFullError:
            raise
        except Exception as exc:  # this method on this dataset: recorded as failed, the others still run
            reason = failure_reason(exc)
            log.exception("%s failed on %s; recorded as failed, the other methods run: %s", method, dataset, reason)
            write_tsv(failed_table(method, reason), table)
            write_json(failed_meta(method, reason, n_features=n_features), meta)
            continue
        log.info("%s: selected %d genes", method, int(np.sum(sel.selected)))
        write_tsv(selection_table(sel, adata.var_names), table)
        write_json(selection_meta(sel, n_features=n_features, graph=selection_graph(sel, inp.graph)), meta)
    if hasattr(out, "glfs_vs_greedy"):
        X = adata.X.toarray() if hasattr(adata.X, "toarray") else adata.X
        write_tsv(glfs_vs_greedy(X, graph, par.ks, par.method_params[par.design_glfs]), out.glfs_vs_greedy)
    metas = {table: json.loads(Path(meta).read_text()) for table, meta in zip(out.tables, out.metas, strict=True)}
    failed = {m["method"]: m["error"] for m in metas.values() if m.get("status") == FAILED}
    done = [t for t in out.tables if metas[t].get("status") != FAILED]
    annotate_dataset(adata, graph, par.graph, [(read_tsv(t), metas[t], t) for t in done], source=inp.adata)
    if failed:  # the methods that raised on this dataset and why (no var columns of theirs)
        adata.uns["failed_selections"] = failed
        log.warning("%d of %d methods failed on %s: %s", len(failed), len(methods), dataset, failed)
    write_h5ad_atomic(adata, out.adata)
    if hasattr(out, "glfs_path"):
        i = methods.index(par.glfs_path_method)
        # a failed reading has no lam path: an empty table (glfs_path_frame logs it)
        write_tsv(glfs_path_frame(metas[out.tables[i]], source=out.metas[i]), out.glfs_path)
except DiskFullError as exc:  # one line, not h5py's error stack
    log.error("%s", exc)
    sys.stderr.write(f"select_features: {exc}\n")
    raise SystemExit(1) from None
except Exception:
    log.exception("select_features failed")
    raise
