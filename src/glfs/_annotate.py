"""Workflow adapters: selection tables, precomputed Selections into AnnData, atomic writes.

Used by the workflow's ``scripts/``; not part of the stable API.  The AnnData
layout written by :func:`write_selection` is the one of the README's
"Outputs" section and of :func:`glfs.tl.select`:

- ``var[f"{key}_score"]`` float, ``var[f"{key}_rank"]`` int (1 = best),
  ``var[key]`` bool (selected), ``var["glfs_weight"]`` for GLFS methods
  (``var[f"{key}_weight"]`` when ``key`` is not the method name),
- ``uns[key]["params"]`` plain values,
- ``obsp["patient_similarity"]`` the graph (when given).

Table layout of ``results/{dataset}/selection/{method}.tsv``: one row per gene
in ``var`` order, columns ``gene, score, rank, selected, weight`` (weight NaN
for methods without weights).
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
from pathlib import Path

import numpy as np
import pandas as pd

from ._result import Selection, make_selection
from .api import _plain

log = logging.getLogger(__name__)

GRAPH_KEY = "patient_similarity"
TABLE_COLUMNS = ["gene", "score", "rank", "selected", "weight"]


# ---- scripts -------------------------------------------------------------------


def _terminate(signum, frame):
    """SIGTERM (snakemake interrupted) -> SystemExit, so ``finally`` blocks remove temporaries."""
    raise SystemExit(128 + signum)


def log_to(path) -> logging.Logger:
    """Send logging (and warnings) of a workflow script to its ``log:`` file; return the script's logger.

    Also turns SIGTERM into a clean exit, so an interrupted job leaves no temporary file.
    """
    signal.signal(signal.SIGTERM, _terminate)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(
        filename=str(path),
        filemode="w",
        level=logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s: %(message)s",
        force=True,
    )
    logging.captureWarnings(True)
    return logging.getLogger("glfs.workflow")


def concat_tsv(inputs, output) -> pd.DataFrame:
    """Concatenate TSV tables (same columns) into one, written atomically."""
    frames = [read_tsv(p) for p in inputs]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    write_tsv(df, output)
    return df


# ---- atomic output ------------------------------------------------------------


@contextlib.contextmanager
def atomic_path(path, suffix=None):
    """Yield a temporary path (str) next to ``path``; fsync and rename it onto ``path`` only on success.

    A failing writer leaves neither a partial ``path`` nor the temporary file;
    temporaries of an earlier killed run are removed first (``glfs.io``).
    """
    from .io import _atomic_path

    path = Path(path)
    with _atomic_path(path, suffix=suffix if suffix is not None else "".join(path.suffixes)) as tmp:
        yield str(tmp)


def write_tsv(df: pd.DataFrame, path) -> None:
    """Write a DataFrame as TSV (no index), atomically."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, sep="\t", index=False, na_rep="NaN")


def write_json(obj, path) -> None:
    """Write plain data as JSON, atomically."""
    with atomic_path(path) as tmp, open(tmp, "w") as fh:
        json.dump(_plain(obj), fh, indent=1, sort_keys=True, default=str)


# Columns of the workflow's tables that hold ids: always read as text, never as
# numbers or missing values (a gene "NA", "007" or "1e3" stays that string).
TEXT_COLUMNS = ("gene", "method", "dataset", "sample", "label", "rule", "job", "variant", "item")


def read_tsv(path) -> pd.DataFrame:
    """Read a table written by :func:`write_tsv`: id columns as exact text, the rest parsed.

    The id columns (:data:`TEXT_COLUMNS`) keep every value as written
    (pandas' defaults would turn ``NA``/``null`` into NaN and ``007`` into 7);
    in the other columns only ``NaN``, ``nan`` and empty cells are missing.
    Quoted cells (ids with tabs or newlines) are read back exactly.
    """
    header = pd.read_csv(path, sep="\t", nrows=0).columns
    text = [c for c in header if c in TEXT_COLUMNS]
    return pd.read_csv(
        path,
        sep="\t",
        dtype={c: str for c in text},
        keep_default_na=False,
        na_values={c: ["NaN", "nan", ""] for c in header if c not in text},
    )


# ---- selection tables -----------------------------------------------------------


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
        "params": {k: _plain(v) for k, v in sel.params.items() if v is not None},
        "extra": {k: _plain(v) for k, v in sel.extra.items()},
    }


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
    )


def path_table(meta: dict) -> pd.DataFrame | None:
    """The GLFS lam path from a selection's diagnostics, as columns lam, n_selected, objective.

    Accepts ``extra["path"]`` as a list of ``(lam, n_selected, objective)``
    rows (glfs.gradient), a list of records, or a mapping of equal-length
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


# ---- AnnData ---------------------------------------------------------------------


def write_selection(
    adata,
    sel: Selection,
    *,
    key: str | None = None,
    weight_key: str | None = None,
    uns_params: dict | None = None,
) -> None:
    """Write a precomputed Selection into ``adata.var`` / ``adata.uns`` (layout of glfs.tl.select).

    ``weight_key`` names the ``var`` column of the weights (methods with
    weights only); default ``"glfs_weight"`` when ``key`` is the method name,
    else ``f"{key}_weight"``.  Everything is validated before anything is written, so a failure leaves
    ``adata`` unchanged.
    """
    key = key or sel.method
    if adata.n_vars != sel.n_features_in:
        msg = f"selection {sel.method!r} covers {sel.n_features_in} genes; adata has {adata.n_vars}"
        raise ValueError(msg)
    params = {
        "method": sel.method,
        "n_selected": int(np.sum(sel.selected)),
        "higher_is_better": bool(sel.higher_is_better),
        **{k: _plain(v) for k, v in sel.params.items() if v is not None},
        **(uns_params or {}),
    }
    params = {k: v for k, v in params.items() if v is not None}
    score = np.asarray(sel.scores, dtype=np.float64)
    rank = sel.rank
    selected = np.asarray(sel.selected, dtype=bool)
    adata.var[f"{key}_score"] = score
    adata.var[f"{key}_rank"] = rank
    adata.var[key] = selected
    if sel.weights is not None:
        if weight_key is None:
            weight_key = "glfs_weight" if key == sel.method else f"{key}_weight"
        adata.var[weight_key] = np.asarray(sel.weights)
    adata.uns[key] = {"params": params}


def write_graph(adata, W) -> None:
    """Store the patient-similarity graph in ``adata.obsp["patient_similarity"]``."""
    if W.shape != (adata.n_obs, adata.n_obs):
        msg = f"graph must be ({adata.n_obs}, {adata.n_obs}); got {W.shape}"
        raise ValueError(msg)
    adata.obsp[GRAPH_KEY] = W.tocsr()
