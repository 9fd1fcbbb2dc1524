"""AnnData adapter (scanpy style): ``glfs.tl.select(adata, method=...)``.

Writes, for ``key = key_added or method``:

- ``adata.var[f"{key}_score"]`` float score (NaN where a gene cannot be scored),
- ``adata.var[f"{key}_rank"]`` int, 1 = best (fixes each method's direction),
- ``adata.var[key]`` bool, selected (``sc.pp.pca(adata, mask_var=key)``),
- ``adata.var[f"{key}_weight"]`` for methods with weights (GLFS beta,
  Q-alpha weights); GLFS methods also keep ``adata.var["glfs_weight"]``
  (backward compatibility),
- ``adata.uns[key]["params"]`` plain values,
- ``adata.obsp["patient_similarity"]`` the graph used (when the method uses one
  and builds it; ``graph_key`` renames it, e.g. ``"cell_similarity"`` for cells),
- ``adata.var["highly_variable"]`` = the selection, only when asked
  (``mark_highly_variable=True``), so that ``sc.pp.pca(adata)`` uses it as it
  uses scanpy's HVG.

Methods that score raw counts (``hvg_seurat_v3``, ``hvg_pearson_residuals``,
``deviance``) read them from ``adata.layers["counts"]`` (scanpy's convention,
:data:`COUNTS_LAYER`; ``counts_layer`` renames it), or from X when X holds counts.

:func:`selection` is the adapter itself: it reads X, the graph, the labels and the raw
counts of an AnnData, runs :func:`glfs.select` and returns its :class:`glfs.Selection`,
writing nothing (the workflow's ``select_features`` step calls it and writes files).

Everything is computed before anything is written, so a failed call leaves
the AnnData unchanged.  What it does is logged at INFO on the ``glfs``
loggers (``logging.basicConfig(level=logging.INFO)`` shows it).
"""

from __future__ import annotations

import logging
import time
import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp

from glfs._anndata_writers import (
    CONVERGENCE_KEYS,
    COUNTS_LAYER,
    GRAPH_KEY,
    warn_replaced,
    write_graph,
    write_selection,
)
from glfs.api import check_seed, check_streams, method_info, n_to_select
from glfs.api import select as _select
from glfs.core._out_of_core import OutOfCore, out_of_core_kind
from glfs.core._result import Selection
from glfs.core._validation import check_graph, check_X
from glfs.core._value_checks import holds_counts, looks_like_counts
from glfs.graph._similarity import DEFAULT_GRAPH_PARAMS, similarity_graph

log = logging.getLogger(__name__)

__all__ = ["select", "selection", "write_selection", "write_graph", "GRAPH_KEY", "COUNTS_LAYER", "CONVERGENCE_KEYS"]


def select(
    adata,
    method: str = "laplacian_score",
    n_features_to_select: int | None = None,
    *,
    key_added: str | None = None,
    layer: str | None = None,
    obsp: str | None = None,
    labels_key: str | None = None,
    graph_params: dict | None = None,
    random_state: int | None = 0,
    inplace: bool = True,
    n_features: int | None = None,
    counts_layer: str = COUNTS_LAYER,
    graph_key: str | None = None,
    mark_highly_variable: bool = False,
    batch_key: str | None = None,
    subset: bool = False,
    n_top_genes: int | None = None,
    **params,
):
    """Select genes of an AnnData with any :func:`glfs.select` method.

    Parameters
    ----------
    adata : anndata.AnnData
        obs = samples (patients, cells), var = genes.
    method, n_features_to_select, random_state, **params
        As :func:`glfs.select`: ``n_features_to_select`` is required except
        for the published GLFS readings (``glfs_exact``, ``glfs_paper``,
        ``glfs_printed``), which otherwise keep the support of their lam
        search (``n_features``, its former name, is still accepted).
    key_added : str, optional
        Names every output (scanpy's convention); default the method name.  A
        non-empty string (an empty one is refused).
        Written: ``var[key]`` (bool, selected), ``var[f"{key}_score"]``,
        ``var[f"{key}_rank"]`` (1 = best), ``var[f"{key}_weight"]`` (methods
        with weights), ``uns[key]["params"]``, and a graph built here in
        ``obsp["patient_similarity"]`` (``obsp[f"{key_added}_patient_similarity"]``
        when ``key_added`` is given).
    layer : str, optional
        Use ``adata.layers[layer]`` instead of ``adata.X``.
    obsp : str, optional
        Use the precomputed graph ``adata.obsp[obsp]`` (e.g. scanpy's
        ``"connectivities"`` after ``sc.pp.neighbors``).  Otherwise a kNN graph
        is built from the expression with ``graph_params``.
    labels_key : str, optional
        ``adata.obs`` column with class labels, for supervised methods.
    inplace : bool, default True
        Write into ``adata``; otherwise return a DataFrame indexed like ``var``
        with columns ``score``, ``rank``, ``selected`` (and ``weight``).
    counts_layer : str, default "counts"
        The layer with the raw counts, for the methods that score counts
        (``glfs.METHODS[m].needs_counts``).  When it does not exist, X is used
        if it holds counts (non-negative integers); otherwise a ValueError
        names the layer.  Other methods ignore it.
    graph_key : str, optional
        ``obsp`` key of a graph built here; default ``"patient_similarity"``
        (``f"{key_added}_patient_similarity"`` with ``key_added``).  For cells,
        e.g. ``graph_key="cell_similarity"``.
    mark_highly_variable : bool, default False
        Also write the selection to ``var["highly_variable"]``, which scanpy's
        ``sc.pp.pca`` uses by default.  An existing ``highly_variable`` column
        (e.g. from ``sc.pp.highly_variable_genes``) is replaced with a
        ``UserWarning`` that says how many genes it had; scanpy's columns of that earlier call
        (``highly_variable_rank``, ``means``, ``variances``, ``variances_norm``, ...) are removed
        with it (they would describe another selection), named in the warning.
    batch_key : str, optional
        ``adata.obs`` column of each cell's batch (donor, sample; scanpy's ``batch_key``): the
        selection is made within batches (:func:`glfs.select`'s ``batches``; docs/methods.md,
        "Batch-aware selection"), and ``var[f"{key}_nbatches"]``, ``var[f"{key}_intersection"]``,
        ``var[f"{key}_median_rank"]`` and ``varm[f"{key}_batch_ranks"]`` are written beside the rest.
        A graph method builds its graph within each batch (``obsp`` given: its edges inside each batch).
    subset : bool, default False
        Keep only the selected genes, in rank order (best first); with ``inplace=False`` the
        returned table holds only them, in that order.
    n_top_genes : int, optional
        scanpy's name of ``n_features_to_select`` (either may be given; both, they must agree).

    Returns
    -------
    None or pandas.DataFrame
    """
    info = method_info(method)
    _check_key_added(key_added)
    n_features_to_select = _n_top_genes(n_features_to_select, n_top_genes)
    k = n_to_select(n_features_to_select, n_features)
    t0 = time.perf_counter()
    key = key_added or method
    graph_key = _graph_key(graph_key, key_added)
    sel, graph, counts_from = _run(
        adata,
        method,
        n_features_to_select,
        layer=layer,
        obsp=obsp,
        labels_key=labels_key,
        graph_params=graph_params,
        random_state=random_state,
        n_features=n_features,
        counts_layer=counts_layer,
        default_graph=None,
        params=params,
        batch_key=batch_key,
    )
    df = _selection_frame(sel, adata.var_names)
    if not inplace:
        return df.iloc[sel.indices] if subset else df
    # all computation done: now write (the one writer shared with the workflow)
    uns_params = {
        "n_features": -1 if k is None else int(k),
        "graph": "obsp:" + (obsp if obsp is not None else graph_key) if info.needs_graph else "none",
        "layer": layer if layer is not None else "X",
        "counts": counts_from,
        "highly_variable": bool(mark_highly_variable),
        "batch_key": batch_key,
    }
    _write_into(
        adata,
        sel,
        key,
        uns_params,
        mark_highly_variable=mark_highly_variable,
        subset=subset,
        graph=graph,
        graph_key=graph_key,
        write_graph_too=info.needs_graph and obsp is None,
    )
    log.info(
        "tl.select: %s done in %.1f s; wrote var[%r], var['%s_score'], var['%s_rank']",
        method,
        time.perf_counter() - t0,
        key,
        key,
        key,
    )
    return None


def _write_into(adata, sel, key, uns_params, *, mark_highly_variable, subset, graph, graph_key, write_graph_too):
    """:func:`select`'s writes, after all computation: the selection (``var``, ``uns``), scanpy's
    ``highly_variable`` columns when asked, the graph the method used (``obsp[graph_key]``: built by
    :func:`select`, or by the method itself, ``Selection.extra["graph"]``) when ``write_graph_too``,
    and the subset of the selected genes in rank order."""
    write_selection(adata, sel, key=key, uns_params=uns_params)
    if mark_highly_variable:
        _mark_highly_variable(adata, sel, key)
    if write_graph_too:
        write_graph(adata, sel.extra["graph"] if graph is None else graph, key=graph_key)
    if subset:  # the selected genes, best first (scanpy keeps var order; the rank order is the selection's)
        adata._inplace_subset_var(sel.indices)


def selection(
    adata,
    method: str = "laplacian_score",
    n_features_to_select: int | None = None,
    *,
    layer: str | None = None,
    obsp: str | None = None,
    labels_key: str | None = None,
    graph_params: dict | None = None,
    random_state: int | None = 0,
    n_features: int | None = None,
    counts_layer: str = COUNTS_LAYER,
    default_graph=None,
    batch_key: str | None = None,
    **params,
) -> Selection:
    """Run a :func:`glfs.select` method on an AnnData and return its Selection; nothing is written.

    The one adapter from an AnnData to :func:`glfs.select` (:func:`select` calls it, then writes):
    X is ``adata.X`` or ``adata.layers[layer]``; the graph is ``adata.obsp[obsp]``, else
    ``default_graph``, else built from X with ``graph_params`` (a method that builds its own graph,
    ``MethodInfo.own_graph``, does so instead); the labels are ``adata.obs[labels_key]`` (supervised
    methods); the raw counts are ``adata.layers[counts_layer]`` (methods that score counts, or take
    them when present), else X when X holds counts.

    Parameters
    ----------
    adata : anndata.AnnData
        obs = samples (patients, cells), var = genes.
    method, n_features_to_select, layer, obsp, labels_key, graph_params, random_state, n_features, counts_layer, **params
        As :func:`select`.
    default_graph : sparse (n_samples, n_samples), optional
        The graph :func:`glfs.select` would build from X (:func:`glfs.similarity_graph` with
        ``graph_params``), built before, e.g. by a workflow step: used in its place.  ``obsp``
        takes precedence, and a method that builds its own graph ignores it, as does a selection
        within batches (its graphs are built within each batch).
    batch_key : str, optional
        As :func:`select`: the ``adata.obs`` column of the batches.

    Returns
    -------
    Selection
        As :func:`glfs.select`; ``extra["graph"]`` holds the graph of a method that built its own.
    """
    sel, _, _ = _run(
        adata,
        method,
        n_features_to_select,
        layer=layer,
        obsp=obsp,
        labels_key=labels_key,
        graph_params=graph_params,
        random_state=random_state,
        n_features=n_features,
        counts_layer=counts_layer,
        default_graph=default_graph,
        params=params,
        batch_key=batch_key,
    )
    return sel


def _run(
    adata,
    method,
    n_features_to_select,
    *,
    layer,
    obsp,
    labels_key,
    graph_params,
    random_state,
    n_features,
    counts_layer,
    default_graph,
    params,
    batch_key=None,
):
    """(Selection, the graph given or built here or None, where the counts came from) of :func:`selection`."""
    _check_adata(adata)
    info = method_info(method)
    check_seed(random_state)  # before the graph is built
    batches = _batches(adata, batch_key)
    X = _expression(adata, layer)
    graph = _given_graph(adata, obsp, info, method)
    if out_of_core_kind(X) is not None:  # backed AnnData or dask X: read once here, then streamed by the scores
        X = check_X(X, read_only=True, lazy=True)
        check_streams(method, X, graph)
    counts, counts_from = _counts(adata, X, layer, counts_layer, info, method)
    log.info(
        "tl.select: %s on %d samples x %d genes (%s; %s)",
        method,
        adata.n_obs,
        adata.n_vars,
        f"layer {layer!r}" if layer is not None else "adata.X",
        info.description,
    )
    if not info.needs_counts:
        _warn_if_counts(X, layer)
    labels = _labels(adata, labels_key, info, method)
    if batches is not None and graph is None:
        log.info(
            "tl.select: %s within the batches of obs[%r]; graphs, if any, built within each batch", method, batch_key
        )
    else:
        graph = _graph_to_use(X, graph, info, obsp, graph_params, default_graph)
    log.info(
        "tl.select: scoring %d genes with %s (n_features_to_select=%s)",
        adata.n_vars,
        method,
        n_to_select(n_features_to_select, n_features),
    )
    t1 = time.perf_counter()
    sel = _select(
        X,
        method=method,
        graph=graph,
        n_features_to_select=n_features_to_select,
        n_features=n_features,
        labels=labels,
        random_state=random_state,
        counts=counts,
        batches=batches,
        **params,
    )
    log.info("tl.select: %s took %.1f s", method, time.perf_counter() - t1)
    return sel, graph, counts_from


def _check_adata(adata) -> None:
    """Refuse ``adata.raw`` (an anndata ``Raw``: nothing can be written into it) before any computation."""
    if type(adata).__name__ == "Raw":
        msg = (
            "adata is adata.raw (an anndata Raw, which has no uns, obsp or layers to write the selection into); "
            "pass adata.raw.to_adata() (a new AnnData of the raw values), or the AnnData itself with layer=..."
        )
        raise ValueError(msg)


def _n_top_genes(n_features_to_select, n_top_genes):
    """``n_features_to_select``, given under scanpy's name ``n_top_genes`` or its own (both: they must agree)."""
    if n_top_genes is None:
        return n_features_to_select
    if n_features_to_select is not None and n_features_to_select != n_top_genes:
        msg = (
            f"pass the number of genes once: n_top_genes ({n_top_genes!r}) and n_features_to_select "
            f"({n_features_to_select!r}) differ"
        )
        raise ValueError(msg)
    return n_top_genes


def _batches(adata, batch_key):
    """The batch of each cell, ``adata.obs[batch_key]`` (None without ``batch_key``); glfs.select checks the values."""
    if batch_key is None:
        return None
    if not isinstance(batch_key, str) or batch_key not in adata.obs:
        msg = (
            f"batch_key must name an adata.obs column (obs columns: {list(adata.obs.columns)[:20]}); got {batch_key!r}"
        )
        raise ValueError(msg)
    col = adata.obs[batch_key]
    return col.astype(object).where(col.notna(), None).to_numpy()


def _check_key_added(key_added) -> None:
    """``key_added`` is None or a non-empty string (it names every output of :func:`select`) that can name an
    HDF5 element (:func:`_check_h5_name`)."""
    if key_added is not None and (not isinstance(key_added, str) or not key_added.strip()):
        msg = (
            "key_added must be a non-empty string (it names every output: the var columns key_added, "
            "key_added_score, key_added_rank, uns[key_added] and the graph key_added_patient_similarity) "
            f"or None (the method name); got {key_added!r}"
        )
        raise ValueError(msg)
    if key_added is not None:
        _check_h5_name(key_added, "key_added")


def _check_h5_name(value: str, name: str) -> None:
    """ValueError when ``value`` cannot name an element of a saved ``.h5ad`` (an HDF5 link name): "/" separates
    HDF5 groups, and "." and ".." name a group itself; anndata writes such a key, and the file cannot be read back."""
    if "/" in value or value.strip() in (".", ".."):
        msg = (
            f"{name} must be a name without '/' and other than '.' or '..' (it names elements of the saved .h5ad, "
            f"an HDF5 file, where '/' separates groups); got {value!r}"
        )
        raise ValueError(msg)


def _graph_key(graph_key, key_added) -> str:
    """The ``obsp`` key of a graph built by :func:`select`: ``graph_key`` (a non-empty string) or its default.

    The default is ``GRAPH_KEY``, prefixed with ``f"{key_added}_"`` when ``key_added`` is given.
    """
    if graph_key is None:
        return GRAPH_KEY if key_added is None else f"{key_added}_{GRAPH_KEY}"
    if not isinstance(graph_key, str) or not graph_key:
        msg = f"graph_key must be a non-empty string; got {graph_key!r}"
        raise ValueError(msg)
    _check_h5_name(graph_key, "graph_key")
    return graph_key


def _expression(adata, layer):
    """The expression matrix: ``adata.layers[layer]``, or ``adata.X`` (refused when None)."""
    if layer is not None and layer not in adata.layers:
        msg = f"layer must name one of adata.layers {list(adata.layers)}; got {layer!r}"
        raise ValueError(msg)
    X = adata.layers[layer] if layer is not None else adata.X
    if X is None:
        msg = "adata.X is None; pass layer= naming the expression matrix"
        raise ValueError(msg)
    return X


def _counts(adata, X, layer, counts_layer, info, method):
    """(raw counts or None, where they come from) for a method that scores counts.

    ``adata.layers[counts_layer]`` when it exists; else None (glfs.select then
    scores X) when X holds counts; else a ValueError naming the layer.
    """
    if info.optional_counts:  # the counts help when they are there; never required
        if counts_layer in adata.layers:
            return adata.layers[counts_layer], f"layers:{counts_layer}"
        return None, None
    if not info.needs_counts:
        return None, None
    if counts_layer in adata.layers:
        log.info("tl.select: %s scores the raw counts in adata.layers[%r]", method, counts_layer)
        return adata.layers[counts_layer], f"layers:{counts_layer}"
    where = f"adata.layers[{layer!r}]" if layer is not None else "adata.X"
    if holds_counts(X if sp.issparse(X) or isinstance(X, OutOfCore) else np.asarray(X)):
        log.info("tl.select: %s scores %s, which holds raw counts", method, where)
        return None, "X" if layer is None else f"layers:{layer}"
    msg = (
        f"method {method!r} scores raw counts, but adata.layers has no {counts_layer!r} layer "
        f"(layers: {list(adata.layers)}) and {where} does not hold counts (non-integer values). "
        f"Keep the counts before normalising (adata.layers[{counts_layer!r}] = adata.X.copy()), "
        "or name their layer with counts_layer="
    )
    raise ValueError(msg)


#: The var columns of scanpy's highly_variable_genes that describe its var["highly_variable"]; an earlier call's
#: are removed when mark_highly_variable replaces that column (they would describe another selection).
SCANPY_HVG_COLUMNS = (
    "highly_variable_rank",
    "highly_variable_nbatches",
    "highly_variable_intersection",
    "means",
    "variances",
    "variances_norm",
    "dispersions",
    "dispersions_norm",
    "residual_variances",
)


def _mark_highly_variable(adata, sel, key):
    """var["highly_variable"] = the selection (sc.pp.pca's default mask), replacing an existing column with a warning.

    scanpy's columns of an earlier ``highly_variable_genes`` call (:data:`SCANPY_HVG_COLUMNS`) and its
    ``uns["hvg"]`` go with it, named in the warning; a selection within batches writes scanpy's
    ``highly_variable_nbatches`` and ``highly_variable_intersection`` (same meaning) beside it.
    """
    stale = [c for c in SCANPY_HVG_COLUMNS if c in adata.var]
    warn_replaced(
        adata,
        ["highly_variable", *stale],
        f"the {key!r} selection (mark_highly_variable=True); "
        f"scanpy's columns of the earlier selection are removed: {stale}"
        if stale
        else f"the {key!r} selection (mark_highly_variable=True)",
    )
    if stale:
        adata.var.drop(columns=stale, inplace=True)
        adata.uns.pop("hvg", None)
    adata.var["highly_variable"] = np.asarray(sel.selected, dtype=bool)
    for name in ("nbatches", "intersection"):
        if name in sel.extra:
            adata.var[f"highly_variable_{name}"] = np.asarray(sel.extra[name])


def _given_graph(adata, obsp, info, method):
    """The precomputed graph ``adata.obsp[obsp]`` (None when not given, or warned about and None when the method uses none)."""
    if obsp is None:
        return None
    if obsp not in adata.obsp:
        msg = (
            f"obsp must name a graph in adata.obsp {list(adata.obsp)}; got {obsp!r}. "
            "Run sc.pp.neighbors(adata) first for 'connectivities', or omit obsp to build a kNN graph"
        )
        raise ValueError(msg)
    if not info.needs_graph:
        msg = f"method {method!r} uses no graph; the graph passed is ignored (obsp={obsp!r})"
        warnings.warn(msg, UserWarning, stacklevel=3)
        return None
    return check_graph(adata.obsp[obsp], adata.n_obs, name=f"adata.obsp[{obsp!r}]")  # a corrupt graph: ValueError


def _labels(adata, labels_key, info, method):
    """Class labels ``adata.obs[labels_key]`` for supervised methods, else None."""
    if not info.needs_labels:
        return None
    if labels_key is None or labels_key not in adata.obs:
        msg = f"labels_key must name an adata.obs column for method {method!r}; got {labels_key!r}"
        raise ValueError(msg)
    return adata.obs[labels_key].to_numpy()


def _graph_to_use(X, graph, info, obsp, graph_params, default_graph):
    """The given graph; else, when the method needs one and does not build its own (``info.own_graph``: None,
    the method builds it), ``default_graph`` or a kNN graph built from X (``DEFAULT_GRAPH_PARAMS`` updated by
    ``graph_params``)."""
    if info.needs_graph and graph is None and info.own_graph:
        log.info("tl.select: %s builds its own cell graph", info.name)
        return None
    if info.needs_graph and graph is None and default_graph is not None:
        log.info("tl.select: using the graph given as default_graph")
        return default_graph
    if info.needs_graph and graph is None:
        gp = {**DEFAULT_GRAPH_PARAMS, **(graph_params or {})}
        log.info(
            "tl.select: building a kNN patient-similarity graph (n_neighbors=%s, kernel=%r)",
            gp["n_neighbors"],
            gp["kernel"],
        )
        return similarity_graph(X, **gp)
    if graph is not None:
        log.info("tl.select: using the graph adata.obsp[%r]", obsp)
    return graph


def _selection_frame(sel, var_names):
    """The DataFrame returned with ``inplace=False``: score, rank, selected (and weight), indexed like var."""
    df = pd.DataFrame(
        {
            "score": np.asarray(sel.scores),
            "rank": sel.rank,
            "selected": np.asarray(sel.selected),
        },
        index=var_names.copy(),
    )
    if sel.weights is not None:
        df["weight"] = np.asarray(sel.weights)
    for name in ("nbatches", "intersection", "median_rank"):  # a selection within batches (batch_key)
        if name in sel.extra:
            df[name] = np.asarray(sel.extra[name])
    return df


def _warn_if_counts(X, layer) -> None:
    """Log a warning when the matrix looks like raw counts (glfs.core._value_checks.looks_like_counts)."""
    if isinstance(X, OutOfCore):  # not read again for a warning
        return
    values = X.data if sp.issparse(X) else np.asarray(X)
    if values.size and looks_like_counts(values):
        where = f"adata.layers[{layer!r}]" if layer is not None else "adata.X"
        log.warning(
            "tl.select: %s looks like raw counts (non-negative integers with a large dynamic range); "
            "graph-based scores and GLFS then follow a few very highly expressed genes: "
            "normalise first (sc.pp.normalize_total(adata); sc.pp.log1p(adata))",
            where,
        )
