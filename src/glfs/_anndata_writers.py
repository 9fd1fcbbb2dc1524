"""Write a :class:`glfs.Selection` and a graph into an AnnData (the layout of :func:`glfs.tl.select`).

- ``var[f"{key}_score"]`` float, ``var[f"{key}_rank"]`` int (1 = best),
  ``var[key]`` bool (selected), ``var[f"{key}_weight"]`` for methods with weights
  (so ``var["glfs_weight"]`` for the well-posed GLFS),
- ``uns[key]["params"]`` plain values, with ``converged`` and ``n_iter`` of an
  iterative method whose Selection records them in ``extra``,
- ``obsp["patient_similarity"]`` the graph (when given),
- for a selection within batches (``glfs.select(..., batches=)``): ``var[f"{key}_nbatches"]``,
  ``var[f"{key}_intersection"]``, ``var[f"{key}_median_rank"]`` (scanpy's
  ``highly_variable_nbatches``, ``highly_variable_intersection``, ``highly_variable_rank`` + 1,
  for the key ``highly_variable``) and, for the gene-wise scores,
  ``varm[f"{key}_batch_ranks"]`` (genes x batches, 1 = best within the batch), an array whose columns are
  the batches in the order of the list ``uns[key]["params"]["batches"]`` (batch labels are never HDF5 keys, so
  any label, ``""``, ``"."`` or ``"P1/rep2"``, survives ``write_h5ad`` / ``read_h5ad``).

The workflow's ``annotate`` step writes its ``.h5ad`` with the same functions.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np

from glfs.api import plain_value
from glfs.core._result import Selection

log = logging.getLogger(__name__)


GRAPH_KEY = "patient_similarity"
#: The layer with the raw counts (scanpy's convention), for the methods that score counts.
COUNTS_LAYER = "counts"
# Selection.extra diagnostics that are copied into uns[key]["params"]
CONVERGENCE_KEYS = ("converged", "n_iter")
# Selection.extra per-gene columns of a selection within batches (glfs.scores._batches.batch_columns), written to var
BATCH_COLUMNS = ("nbatches", "intersection", "median_rank")


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
    weights only); default ``f"{key}_weight"``.  Everything is validated before anything is written, so a failure leaves
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
        # an iterative method's convergence diagnostics (q_alpha, spca), beside its parameters
        **{k: plain_value(sel.extra[k]) for k in CONVERGENCE_KEYS if k in sel.extra},
        **{k: plain_value(v) for k, v in sel.params.items() if v is not None},
        **(uns_params or {}),
    }
    params = {k: v for k, v in params.items() if v is not None}
    if "batch_ranks" in sel.extra:
        # batch labels are never HDF5 keys ("", ".", "P1" beside "P1/rep2" made the .h5ad unwritable): the
        # varm array's columns are the batches in this list's order
        params["batches"] = [plain_value(b) for b in sel.extra["batches"]]
    columns = [key, f"{key}_score", f"{key}_rank"] + (
        [weight_key or f"{key}_weight"] if sel.weights is not None else []
    )
    ours = isinstance(adata.uns.get(key), dict) and "method" in adata.uns[key].get("params", {})
    if not ours:  # a rerun with the same key replaces its own columns; anyone else's are said
        warn_replaced(
            adata, columns, f"the {sel.method!r} selection (key_added={key!r}); pass another key_added to keep"
        )
    score = np.asarray(sel.scores, dtype=np.float64)
    rank = sel.rank
    selected = np.asarray(sel.selected, dtype=bool)
    adata.var[f"{key}_score"] = score
    adata.var[f"{key}_rank"] = rank
    adata.var[key] = selected
    if sel.weights is not None:
        adata.var[weight_key or f"{key}_weight"] = np.asarray(sel.weights)
    for name in BATCH_COLUMNS:
        if name in sel.extra:
            adata.var[f"{key}_{name}"] = np.asarray(sel.extra[name])
    if "batch_ranks" in sel.extra:  # an array, its columns named by the parallel list uns[key]["params"]["batches"]
        adata.varm[f"{key}_batch_ranks"] = np.asarray(sel.extra["batch_ranks"]).T
    adata.uns[key] = {"params": params}


def warn_replaced(adata, columns, by: str) -> None:
    """Warn (``UserWarning`` and the log), naming each existing ``var`` column in ``columns`` that is about
    to be replaced, what it held and ``by`` what: the one rule for ``key_added`` and ``mark_highly_variable``."""
    old = [c for c in columns if c in adata.var]
    if not old:
        return
    held = ", ".join(f"var[{c!r}] ({_what(adata.var[c])})" for c in old)
    msg = f"{held} {'is' if len(old) == 1 else 'are'} replaced by {by}"
    warnings.warn(msg, UserWarning, stacklevel=4)
    log.warning(msg)


def _what(column) -> str:
    """What a var column holds, in a few words: "25 genes marked" or "object, e.g. 'ENSG0001'"."""
    if column.dtype == bool:
        return f"{int(column.sum())} genes marked"
    return f"{column.dtype}, e.g. {column.iloc[0]!r}" if len(column) else str(column.dtype)


def write_graph(adata, W, *, key: str = GRAPH_KEY) -> None:
    """Store the patient-similarity graph in ``adata.obsp[key]`` (default ``"patient_similarity"``)."""
    if W.shape != (adata.n_obs, adata.n_obs):
        msg = f"graph must be ({adata.n_obs}, {adata.n_obs}); got {W.shape}"
        raise ValueError(msg)
    adata.obsp[key] = W.tocsr()
