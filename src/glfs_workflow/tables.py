"""Selection tables of the workflow: ``results/{dataset}/selection/{method}.tsv`` and its JSON sidecar.

Table layout: one row per gene in ``var`` order, columns ``gene, score, rank,
selected, weight`` (weight NaN for methods without weights).
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import scipy.sparse as sp

from glfs.api import method_info, plain_value
from glfs.core import Selection, make_selection
from glfs.tl import CONVERGENCE_KEYS, COUNTS_LAYER, GRAPH_KEY, write_graph, write_selection

log = logging.getLogger(__name__)


TABLE_COLUMNS = ["gene", "score", "rank", "selected", "weight"]


def selection_table(sel: Selection, genes) -> pd.DataFrame:
    """Per-gene table of a Selection: gene, score, rank (1 = best), selected, weight."""
    genes = np.asarray(genes).astype(str)
    if genes.shape != (sel.n_features_in,):
        msg = f"genes must have one name per feature ({sel.n_features_in}); got shape {genes.shape}"
        raise ValueError(msg)
    weight = np.full(genes.size, np.nan) if sel.weights is None else np.asarray(sel.weights)
    return pd.DataFrame(
        {
            "gene": genes,
            "score": np.asarray(sel.scores),
            "rank": sel.rank,
            "selected": np.asarray(sel.selected),
            "weight": weight,
        }
    )


def selection_meta(sel: Selection, *, n_features, graph: str) -> dict:
    """Plain-value record of a Selection's parameters and diagnostics (the JSON sidecar)."""
    return {
        "method": sel.method,
        "n_features": -1 if n_features is None else int(n_features),
        "n_selected": int(np.sum(sel.selected)),
        "higher_is_better": bool(sel.higher_is_better),
        "has_weights": sel.weights is not None,
        "graph": graph,
        "params": {k: plain_value(v) for k, v in sel.params.items() if v is not None},
        # plain diagnostics only: a graph a method built itself (Selection.extra["graph"]) is not JSON
        "extra": {k: plain_value(v) for k, v in sel.extra.items() if not sp.issparse(v)},
    }


#: ``status`` of a method that raised on a dataset (its selection table, sidecar and evaluation rows).
FAILED = "failed"
#: Columns of a failed method's selection table (one row) and the two that evaluation tables gain when a
#: method of the dataset failed (``status``, ``error``; NaN numbers on the failed method's row).
FAILED_COLUMNS = ["method", "status", "error"]
#: Integer columns of the evaluation tables (read back as float when a failed row left them empty).
INTEGER_COLUMNS = ("n_features", "run", "seed", "n_clusters", "n_clusters_nlabels", "draw")


def failure_reason(exc: BaseException) -> str:
    """One line naming an exception: its type and first line of text."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def failed_table(method: str, reason: str) -> pd.DataFrame:
    """The selection table of a method that failed on the dataset: one row, ``method, status, error``."""
    return pd.DataFrame([{"method": method, "status": FAILED, "error": reason}], columns=FAILED_COLUMNS)


def failed_meta(method: str, reason: str, *, n_features) -> dict:
    """The JSON sidecar of a method that failed on the dataset."""
    return {"method": method, "status": FAILED, "error": reason, "n_features": int(n_features)}


def table_failure(df: pd.DataFrame | None) -> str | None:
    """The reason of a failed method's selection table (:func:`failed_table`), None for a selection."""
    if df is None or "status" not in df or not (df["status"].astype(str) == FAILED).any():
        return None
    return str(df.loc[df["status"].astype(str) == FAILED, "error"].iloc[0])


def split_failed(df: pd.DataFrame | None) -> tuple[pd.DataFrame | None, dict]:
    """An evaluation table without its failed methods' rows, and {method: reason} of those (the rows
    :func:`with_failures` adds).  A table without a ``status`` column has no failures."""
    if df is None or "status" not in df:
        return df, {}
    bad = df["status"].astype(str) == FAILED
    failed = dict(zip(df.loc[bad, "method"].astype(str), df.loc[bad, "error"].astype(str), strict=True))
    ok = df.loc[~bad].drop(columns=[c for c in ("status", "error") if c in df]).reset_index(drop=True)
    # the integer and boolean columns, read as float / object while the failed rows' empty cells were in
    for c in ok.columns:
        v = ok[c]
        if not len(v) or v.isna().any():
            continue
        if pd.api.types.is_float_dtype(v) and c in INTEGER_COLUMNS and np.array_equal(v, np.floor(v)):
            ok[c] = v.astype(np.int64)
        elif v.dtype == object and set(v.map(str)) <= {"True", "False"}:
            ok[c] = v.map(lambda x: str(x) == "True").astype(bool)
    return ok, failed


def with_failures(df: pd.DataFrame | None, failed: dict, columns: list) -> pd.DataFrame:
    """An evaluation table (``columns``) with one row per failed method (``failed``: {method: reason}):
    ``status`` failed, its ``error``, no numbers.  Unchanged (no ``status`` column) when nothing failed;
    else every row gets ``status`` (ok or failed) and ``error``, and the integer columns stay integers
    (nullable: empty on the failed rows)."""
    ok = pd.DataFrame(columns=columns) if df is None else df[columns]
    if not failed:
        return ok
    bad = pd.DataFrame({"method": list(failed), "status": FAILED, "error": list(failed.values())})
    out = pd.concat([ok.assign(status="ok", error=""), bad], ignore_index=True)
    for c in columns:
        if c in ok and pd.api.types.is_bool_dtype(ok[c]) and len(ok):
            out[c] = out[c].astype("boolean")
        elif c in ok and pd.api.types.is_integer_dtype(ok[c]) and len(ok):
            out[c] = out[c].astype("Int64")
    return out[[*columns, "status", "error"]]


def selection_graph(sel: Selection, graph_file) -> str:
    """The sidecar's record of the graph a selection used (``selection_meta``'s ``graph``): the dataset graph's
    file, ``"none"``, or ``"own: ..."`` for a method that builds its own (``MethodInfo.own_graph``)."""
    info = method_info(sel.method)
    if info.needs_graph and "batches" in sel.params and "graph" in sel.params:  # within batches (batch_column)
        return "own: " + str(sel.params["graph"])
    if info.own_graph:
        return "own: " + str(sel.params.get("graph_built", "built by the method"))
    return str(graph_file) if info.needs_graph else "none"


def _graph_record(graph: str) -> str:
    """uns[key]["params"]["graph"] of a selection: the dataset graph in obsp, none, or the method's own
    cell graph (an own_graph method's sidecar says "own: ..."; that graph is not the obsp one)."""
    if graph == "none" or str(graph).startswith("own"):
        return str(graph)
    return f"obsp:{GRAPH_KEY}"


def selection_from_table(df: pd.DataFrame, meta: dict) -> Selection:
    """Rebuild a Selection from its table and JSON sidecar (inverse of the two above)."""
    missing = [c for c in TABLE_COLUMNS if c not in df.columns]
    if missing:
        msg = f"selection table must have columns {TABLE_COLUMNS}; missing {missing}"
        raise ValueError(msg)
    rank = df["rank"].to_numpy(dtype=np.int64)
    ranking = np.argsort(rank, kind="stable")
    weights = df["weight"].to_numpy(dtype=np.float64) if meta.get("has_weights") else None
    return make_selection(
        meta["method"],
        df["score"].to_numpy(dtype=np.float64),
        higher_is_better=bool(meta["higher_is_better"]),
        n_features=None,
        ranking=ranking,
        selected=df["selected"].astype(bool).to_numpy(),
        weights=weights,
        params=meta.get("params", {}),
        extra={k: v for k, v in (meta.get("extra") or {}).items() if k in CONVERGENCE_KEYS},
    )


def path_table(meta: dict) -> pd.DataFrame | None:
    """The GLFS lam path from a selection's diagnostics, as columns lam, n_selected, objective.

    Accepts ``extra["path"]`` as a list of ``(lam, n_selected, objective)``
    rows (glfs.designs._gradient), a list of records, or a mapping of equal-length
    lists; returns None when the method recorded no path.
    """
    path = (meta.get("extra") or {}).get("path")
    if path is None:
        return None
    if isinstance(path, (list, tuple)) and path and isinstance(path[0], (list, tuple)):
        df = pd.DataFrame([list(p)[:3] for p in path], columns=["lam", "n_selected", "objective"][: len(path[0])])
    else:
        df = pd.DataFrame(path)
    if "n_nonzero" in df and "n_selected" not in df:
        df = df.rename(columns={"n_nonzero": "n_selected"})
    if "lam" not in df or "n_selected" not in df:
        log.warning("GLFS path has columns %s; expected lam and n_selected", list(df.columns))
        return None
    if "objective" not in df:
        df["objective"] = np.nan
    cols = ["lam", "n_selected", "objective"]
    return df[cols + [c for c in df.columns if c not in cols]]


#: Columns of results/{dataset}/glfs_path.tsv after its ``method`` column.
GLFS_PATH_COLUMNS = ["lam", "n_selected", "objective", "converged", "kkt_residual"]


def glfs_path_frame(meta: dict, *, source="the sidecar") -> pd.DataFrame:
    """results/{dataset}/glfs_path.tsv from the default GLFS variant's sidecar ``meta``.

    Columns ``method`` and :data:`GLFS_PATH_COLUMNS`: converged and kkt_residual come from the path
    records of glfs.designs._gradient (whether the point reached the KKT tolerance, and its scaled KKT
    residual) and are empty when the method records none.  No rows when it records no path.  Points that
    did not converge are counted in a warning.
    """
    df = path_table(meta)
    if df is None:
        log.warning("%s records no lam path; writing an empty table", source)
        df = pd.DataFrame(columns=GLFS_PATH_COLUMNS)
    df = df.rename(columns={"kkt": "kkt_residual"})
    for col in ("converged", "kkt_residual"):
        if col not in df:
            log.warning("%s: the path records no %r column; left empty", source, col)
            df[col] = pd.NA
    df = df[GLFS_PATH_COLUMNS]
    conv = df["converged"]
    if len(df) and conv.notna().all() and not conv.astype(bool).all():
        log.warning("%d of %d GLFS path points did not converge", int((~conv.astype(bool)).sum()), len(df))
    df.insert(0, "method", meta["method"])
    return df


def annotate_dataset(adata, W, graph_params: dict, selections, *, source="the AnnData") -> list[str]:
    """Write a dataset's graph and every method's selection into ``adata`` (results/{dataset}/adata.h5ad).

    The graph ``W`` goes where :func:`glfs._anndata_writers.write_graph` puts it, with the graph settings
    that were given (``graph_params`` without its None values) in ``uns["patient_similarity"]["params"]``;
    ``selections`` is an iterable of ``(table, meta, name)``: each method's selection table as read back
    from its file, its JSON sidecar and the table's name for errors (:func:`annotate_selection`).
    Returns the methods in order.
    """
    write_graph(adata, W)
    adata.uns["patient_similarity"] = {"params": {k: v for k, v in dict(graph_params).items() if v is not None}}
    methods = []
    for df, meta, name in selections:
        methods.append(annotate_selection(adata, df, meta, table=name, source=source))
        log.info("wrote var[%r], var[%r_score], var[%r_rank]", *[methods[-1]] * 3)
    return methods


def annotate_selection(adata, df: pd.DataFrame, meta: dict, *, table="selection table", source="the AnnData") -> str:
    """Write one method's selection table and sidecar into ``adata`` as :func:`glfs.tl.select` writes it.

    ``var[m]``, ``var[f"{m}_score"]``, ``var[f"{m}_rank"]``, ``var[f"{m}_weight"]``
    (methods with weights) and ``uns[m]["params"]`` for the method ``m`` of
    ``meta``; the table's genes must be ``adata.var_names`` in order.  Returns ``m``.
    """
    if list(df["gene"]) != list(adata.var_names):  # read_tsv reads ids as exact text
        diff = [i for i, (a, b) in enumerate(zip(df["gene"], adata.var_names)) if a != b]
        where = (
            f"row {diff[0] + 2}: {df['gene'].iloc[diff[0]]!r} vs {adata.var_names[diff[0]]!r}"
            if diff
            else f"{len(df)} rows vs {adata.n_vars} genes"
        )
        msg = f"{table}: genes differ from {source} var_names ({where})"
        raise ValueError(msg)
    sel = selection_from_table(df, meta)
    write_selection(
        adata,
        sel,
        key=sel.method,
        uns_params={"n_features": meta["n_features"], "graph": _graph_record(meta["graph"])},
    )
    return sel.method


# ---- the single-cell (Leiden) evaluation tables ----

#: Columns of results/{dataset}/clustering_leiden.tsv (glfs.evaluate.evaluate_ranking_leiden's records).
LEIDEN_COLUMNS = [
    "method",
    "n_features",
    "run",
    "seed",
    "ari",
    "nmi",
    "resolution",
    "n_clusters",
    "ari_nlabels",
    "nmi_nlabels",
    "resolution_nlabels",
    "n_clusters_nlabels",
    "nlabels_reached",
    "kmeans_ari",
    "kmeans_nmi",
    "rare_f1",  # glfs.evaluate.rare_type_f1 at the best resolution: the smaller half of the types, best-cluster F1
    "rare_f1_nlabels",  # the same at the label-count resolution
    "batch_mixing",  # NaN for a dataset without batch_column (glfs.evaluate._mixing.knn_batch_mixing)
]


def dataset_batches(adata):
    """The cells' batches of a prepared dataset (``obs['batch']`` from its ``batch_column``), or None for one batch."""
    if not adata.uns.get("dataset", {}).get("batch_column") or "batch" not in adata.obs:
        return None
    return adata.obs["batch"].astype(str).to_numpy()


def with_batch_mixing(df):
    """``df`` with a ``batch_mixing`` column (NaN where the evaluation had no batches)."""
    if "batch_mixing" not in df:
        df = df.assign(batch_mixing=np.nan)
    return df


def leiden_matrix(adata):
    """The log-normalised expression the Leiden protocol clusters, and how it was obtained.

    X of ``prepared.h5ad`` when the dataset was preprocessed; when it was not
    (``preprocess: none``) and X holds the raw counts (``layers["counts"]``),
    the counts normalised as a scanpy user would (library size to the median
    total, then log1p: glfs_workflow.preprocessing.preprocess "normalize_log1p").
    """
    from glfs_workflow.preprocessing import preprocess

    method = adata.uns.get("dataset", {}).get("preprocess", "none")
    if method == "none" and COUNTS_LAYER in adata.layers:
        counts = adata.layers[COUNTS_LAYER]
        # sparse counts stay sparse (float64: the values the dense normalisation gave)
        counts = (
            sp.csr_matrix(counts, dtype=np.float64) if sp.issparse(counts) else np.asarray(counts, dtype=np.float64)
        )
        X, _, used = preprocess(counts, list(adata.var_names), "normalize_log1p")
        how = f"raw counts normalised to {used['target_sum']:.4g} per cell + log1p for the evaluation"
    else:
        X, how = adata.X, f"X as prepared (preprocess {method})"
    return _sparse_if_mostly_zero(X), how


def _sparse_if_mostly_zero(X):
    """CSR when at least half the values are 0 (log-normalised counts: about 95 %): scanpy's PCA then
    multiplies the sparse top-k genes and centres implicitly, the same components (ARPACK) in a
    quarter of the time on the vendored cells (1.0 vs 4.0 s at 2,000 genes, 2 cores)."""
    import scipy.sparse as sp

    if sp.issparse(X):
        return X.tocsr()
    X = np.asarray(X)
    return sp.csr_matrix(X) if np.count_nonzero(X) <= X.size // 2 else X
