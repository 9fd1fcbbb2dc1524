"""The workflow's dataset kinds: the reader a config selects, which datasets count as single cells, and
scanpy's gene filter.

A dataset is a single-cell one when it is an ``.h5ad`` evaluated with the Leiden protocol, or when its
expression looks like raw counts; such a dataset gets the config's ``singlecell_methods`` and, before
selection, the gene filter of ``sc.pp.filter_genes(min_cells=...)`` counted on the raw counts.
"""

from __future__ import annotations

import contextlib
import logging
import urllib.parse
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from glfs.core import looks_like_counts
from glfs_workflow.readers import DataError, Matrix, infer_format

from .fetch import _spec, is_url

log = logging.getLogger(__name__)


def expression_format(cfg: dict) -> str | None:
    """The reader a dataset config selects, from ``format`` or the file name; None if unknown.

    Works on the config alone (no file is opened), so the workflow can decide
    at DAG-building time what :func:`prepare_dataset` will do.  The name is the
    file spec's ``filename`` when given, else the path or URL path.
    """
    fmt = cfg.get("format", "auto") or "auto"
    if fmt != "auto":
        return fmt
    spec = _spec(cfg["expression"])
    for name in (spec.get("filename"), spec.get("url")):
        if name:
            name = urllib.parse.urlparse(name).path if is_url(name) else name
            with contextlib.suppress(DataError):
                return infer_format(name)
    return None


#: Stored values of an .h5ad's expression that :func:`h5ad_holds_counts` reads at most (from the start).
COUNTS_SAMPLE = 1_000_000


def h5ad_holds_counts(path, layer: str | None = None) -> bool:
    """Whether an ``.h5ad``'s expression (X, or ``layers[layer]``) looks like raw counts, from its first
    :data:`COUNTS_SAMPLE` stored values (:func:`glfs.core.looks_like_counts`); False when it cannot be read.

    Cheap enough for the workflow to call while it builds its DAG (h5py, no AnnData): a sparse matrix's
    ``data``, a dense one's first rows.
    """
    import h5py

    try:
        with h5py.File(path, "r") as f:
            node = f["layers"][layer] if layer else f["X"]
            if isinstance(node, h5py.Group):  # sparse: its stored non-zeros
                values = node["data"][: min(COUNTS_SAMPLE, node["data"].shape[0])]
            else:
                rows = max(1, COUNTS_SAMPLE // max(1, int(np.prod(node.shape[1:]))))
                values = node[: min(rows, node.shape[0])]
    except (OSError, KeyError, TypeError, ValueError) as exc:
        log.debug("%s: cannot tell whether it holds counts (%s)", path, exc)
        return False
    return looks_like_counts(np.asarray(values, dtype=np.float64).reshape(-1))


def is_singlecell(cfg: dict, local_expression=None) -> bool:
    """Whether a dataset is a single-cell one: an ``.h5ad`` evaluated with the Leiden protocol (``evaluation``
    leiden or both), or whose expression looks like raw counts (:func:`h5ad_holds_counts` on
    ``local_expression``, its local file, when there is one).  Such a dataset gets the config's
    ``singlecell_methods`` unless it names its own, and the gene filter (``gene_filter.min_cells``)."""
    if expression_format(cfg) != "h5ad":
        return False
    if cfg.get("evaluation") in ("leiden", "both"):
        return True
    return (
        local_expression is not None
        and Path(local_expression).is_file()
        and h5ad_holds_counts(local_expression, cfg.get("layer"))
    )


#: Gene names the gene filter's record lists at most (uns["dataset"]["gene_filter"]["removed"]).
FILTER_NAMES_SHOWN = 20


def filter_genes(name: str, expr: Path, m: Matrix, min_cells) -> tuple[Matrix, dict | None]:
    """The gene filter of a single-cell dataset, scanpy's ``sc.pp.filter_genes(adata, min_cells=min_cells)``:
    keep the genes with a value above 0 in at least ``min_cells`` cells, counted on the input (the raw
    counts of a counts dataset, before any preprocessing).

    Returns the kept matrix and the record stored in ``uns["dataset"]["gene_filter"]``: ``min_cells``,
    ``n_genes_before``, ``n_removed``, ``n_genes_after``, ``counted_on`` and the first
    :data:`FILTER_NAMES_SHOWN` removed genes.  ``min_cells`` None (a bulk dataset): ``m`` unchanged and no
    record; 0: nothing removed, the record says so.  Every gene removed is an error naming the key.
    """
    if min_cells is None:
        return m, None
    min_cells = int(min_cells)
    X = m.X
    d = X.shape[1]
    if sp.issparse(X):
        X = X.tocsr()
        detected = np.bincount(X.indices[X.data > 0], minlength=d)
    else:
        detected, step = np.zeros(d, dtype=np.int64), max(1, 2**24 // max(d, 1))
        for i in range(0, X.shape[0], step):  # row blocks: no n x d temporary
            detected += np.count_nonzero(X[i : i + step] > 0, axis=0)
    keep = detected >= min_cells
    counts = _holds_raw_counts(X)
    record = {
        "min_cells": min_cells,
        "n_genes_before": int(d),
        "n_removed": int(d - keep.sum()),
        "n_genes_after": int(keep.sum()),
        "counted_on": "raw counts (cells with a count above 0)" if counts else "the input values (cells above 0)",
        "removed": ", ".join(str(g) for g in np.asarray(m.genes)[~keep][:FILTER_NAMES_SHOWN]),
    }
    if not keep.any():
        msg = (
            f"{expr}: the gene filter (min_cells={min_cells}) removes all {d} genes: none is detected in "
            f"{min_cells} cells (at most {int(detected.max()) if d else 0}); lower datasets.{name}.min_cells "
            "or gene_filter.min_cells (0: no filter)"
        )
        raise DataError(msg)
    log.info(
        "gene filter (min_cells=%d, scanpy's sc.pp.filter_genes): removed %d of %d genes detected in fewer cells",
        min_cells,
        record["n_removed"],
        d,
    )
    if keep.all():
        return m, record
    genes = [g for g, k in zip(m.genes, keep, strict=True) if k]
    var = m.var.iloc[np.flatnonzero(keep)].copy()
    kept = Matrix(X=X[:, np.flatnonzero(keep)], samples=m.samples, genes=genes, var=var, obs=m.obs)
    return kept, record


def _raw_counts(m: Matrix):
    """The input as a sparse CSR float32 matrix when it holds raw counts (non-negative integers, not all 0/1), else None."""
    return sp.csr_matrix(m.X, dtype=np.float32) if _holds_raw_counts(m.X) else None


def _holds_raw_counts(X) -> bool:
    """Whether X holds raw counts: non-negative integers, not all 0/1."""
    v = (X.data if sp.issparse(X) else X).reshape(-1)  # a sparse X: its non-zeros (the zeros are counts)
    if v.size == 0 or v.min() < 0 or v.max() <= 1:
        return False
    for i in range(0, v.size, 2**24):  # integers? in slices: no temporary of the matrix's size
        part = v[i : i + 2**24]
        if not np.array_equal(part, np.floor(part)):
            return False
    return True


#: The preprocessing options that keep a sparse matrix sparse (glfs_workflow.preprocessing.preprocess).
