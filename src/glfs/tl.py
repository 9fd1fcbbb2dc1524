"""AnnData adapter (scanpy style): ``glfs.tl.select(adata, method=...)``.

Writes, for ``key = key_added or method``:

- ``adata.var[f"{key}_score"]`` float score (NaN where a gene cannot be scored),
- ``adata.var[f"{key}_rank"]`` int, 1 = best (fixes each method's direction),
- ``adata.var[key]`` bool, selected (``sc.pp.pca(adata, mask_var=key)``),
- ``adata.var[f"{key}_weight"]`` for methods with weights (GLFS beta,
  Q-alpha weights); GLFS methods also keep ``adata.var["glfs_weight"]``
  (backward compatibility),
- ``adata.uns[key]["params"]`` plain values, with ``n_top_genes`` and, for a graph built here,
  ``graph_params``: the resolved settings of that graph (:func:`graph_settings`),
- ``adata.obsp["glfs_connectivities"]`` the graph used (when the method uses one
  and builds it; ``f"{key_added}_connectivities"`` with ``key_added``, as scanpy's
  ``pp.neighbors(key_added=...)`` names its graph; ``graph_key`` renames it),
- ``adata.var["highly_variable"]`` = the selection, only when asked
  (``mark_highly_variable=True``), so that ``sc.pp.pca(adata)`` uses it as it
  uses scanpy's HVG, with ``uns["hvg"]`` and the per-gene statistics that
  ``sc.pl.highly_variable_genes`` plots.

The workflow writes its own ``.h5ad`` files with the same writers and its own contract
(``obsp["patient_similarity"]``, ``uns[m]["params"]["n_features"]``; DESIGN.md, section 7).

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

import inspect
import logging
import time
import warnings
from collections.abc import Mapping

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
from glfs.api import check_method_params, check_seed, check_streams, method_info
from glfs.api import select as _select
from glfs.core._out_of_core import OutOfCore, out_of_core_kind
from glfs.core._result import Selection
from glfs.core._validation import check_graph, check_labels, check_n_features, check_X, check_X_kind
from glfs.core._value_checks import holds_counts, looks_like_counts
from glfs.graph._neighbors import approx_backend, choose_neighbor_method
from glfs.graph._similarity import DEFAULT_GRAPH_PARAMS, similarity_graph
from glfs.scores._hvg import plot_statistics

log = logging.getLogger(__name__)

__all__ = [
    "select",
    "selection",
    "graph_settings",
    "write_selection",
    "write_graph",
    "GRAPH_KEY",
    "CONNECTIVITIES_KEY",
    "COUNTS_LAYER",
    "CONVERGENCE_KEYS",
]

#: The ``obsp`` key of a graph :func:`select` builds (``f"{key_added}_connectivities"`` with ``key_added``):
#: a weighted kNN adjacency of the cells or patients, named as scanpy's ``pp.neighbors`` names its own
#: (``obsp["connectivities"]``, ``obsp[f"{key_added}_connectivities"]``) and prefixed so that it never
#: replaces scanpy's.  The workflow keeps ``GRAPH_KEY`` (``"patient_similarity"``) in its own files.
CONNECTIVITIES_KEY = "glfs_connectivities"

# similarity_graph's own defaults (read once, from its signature), which graph_settings resolves
_GRAPH_DEFAULTS = {
    name: p.default
    for name, p in inspect.signature(similarity_graph).parameters.items()
    if name not in ("X", "batches")
}


def select(
    adata,
    method: str = "laplacian_score",
    n_top_genes: int | None = None,
    *,
    key_added: str | None = None,
    layer: str | None = None,
    obsp: str | None = None,
    labels_key: str | None = None,
    graph_params: dict | None = None,
    random_state: int | None = 0,
    inplace: bool = True,
    counts_layer: str = COUNTS_LAYER,
    graph_key: str | None = None,
    mark_highly_variable: bool = False,
    batch_key: str | None = None,
    subset: bool = False,
    **params,
):
    """Select genes of an AnnData with any :func:`glfs.select` method.

    Parameters
    ----------
    adata : anndata.AnnData
        obs = samples (patients, cells), var = genes.
    method, random_state, **params
        As :func:`glfs.select`.  An unknown name is refused with the closest
        names; scanpy's flavour names (``"seurat_v3"``) with the method of
        that flavour (``"hvg_seurat_v3"``).
    n_top_genes : int, optional
        How many genes to select (scanpy's name; :func:`glfs.select`'s
        ``n_features_to_select``).  Required except for the published GLFS
        readings (``glfs_exact``, ``glfs_paper``, ``glfs_printed``), which
        otherwise keep the support of their lam search.
    key_added : str, optional
        Names every output (scanpy's convention); default the method name.  A
        non-empty string (an empty one is refused).
        Written: ``var[key]`` (bool, selected), ``var[f"{key}_score"]``,
        ``var[f"{key}_rank"]`` (1 = best), ``var[f"{key}_weight"]`` (methods
        with weights), ``uns[key]["params"]``, and a graph built here in
        ``obsp["glfs_connectivities"]`` (``obsp[f"{key_added}_connectivities"]``
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
        ``obsp`` key of a graph built here; default ``"glfs_connectivities"``
        (``f"{key_added}_connectivities"`` with ``key_added``; :data:`CONNECTIVITIES_KEY`).
        A later call can reuse it with ``obsp=``, as can ``sc.tl.leiden(adata, obsp=...)``.
    mark_highly_variable : bool, default False
        Also write the selection to ``var["highly_variable"]``, which scanpy's
        ``sc.pp.pca`` uses by default, and ``uns["hvg"]`` (``{"flavor": ..., "selection": key}``)
        with the per-gene statistics ``sc.pl.highly_variable_genes`` plots the selection against:
        those of an earlier ``sc.pp.highly_variable_genes`` call are kept (``means``,
        ``dispersions``/``variances`` and their normalised forms describe the genes, not a
        selection), else scanpy's ``flavor="seurat"`` statistics of the expression matrix are
        computed by scanpy (``means``, ``dispersions``, ``dispersions_norm``; in-memory X with
        scanpy installed; otherwise ``uns["hvg"]`` is not written and the log says why).
        An existing ``highly_variable`` column is replaced with a ``UserWarning`` that says how
        many genes it had; the columns of the earlier call that describe its selection
        (``highly_variable_rank``, ``highly_variable_nbatches``, ``highly_variable_intersection``)
        are removed with it, named in the warning.
    batch_key : str, optional
        ``adata.obs`` column of each cell's batch (donor, sample; scanpy's ``batch_key``): the
        selection is made within batches (:func:`glfs.select`'s ``batches``; docs/methods/batch-aware.md,
        "Batch-aware selection"), and ``var[f"{key}_nbatches"]``, ``var[f"{key}_intersection"]``,
        ``var[f"{key}_median_rank"]`` and ``varm[f"{key}_batch_ranks"]`` are written beside the rest.
        A graph method builds its graph within each batch (``obsp`` given: its edges inside each batch).
    subset : bool, default False
        Keep only the selected genes, in ``var`` order (as scanpy's ``subset``; their rank is in
        ``var[f"{key}_rank"]``); with ``inplace=False`` the returned table holds only them, in
        ``var`` order.  Refused on a backed AnnData (anndata cannot subset it in place), before anything
        is written.

    Returns
    -------
    None or pandas.DataFrame
    """
    info = method_info(method)
    _check_key_added(key_added)
    t0 = time.perf_counter()
    key = key_added or method
    if subset and inplace:
        _check_subset(adata, key)
    graph_key = _graph_key(graph_key, key_added)
    sel, graph, counts_from = _run(
        adata,
        method,
        n_top_genes,
        layer=layer,
        obsp=obsp,
        labels_key=labels_key,
        graph_params=graph_params,
        random_state=random_state,
        counts_layer=counts_layer,
        default_graph=None,
        params=params,
        batch_key=batch_key,
    )
    df = _selection_frame(sel, adata.var_names)
    if not inplace:
        return df[df["selected"].to_numpy()] if subset else df
    hvg_stats = _hvg_statistics(adata, layer) if mark_highly_variable else None
    # all computation done: now write (the one writer shared with the workflow)
    uns_params = {
        "n_top_genes": -1 if n_top_genes is None else int(n_top_genes),
        "graph": "obsp:" + (obsp if obsp is not None else graph_key) if info.needs_graph else "none",
        "graph_params": _graph_record(adata, info, sel, obsp, graph_params, layer, batch_key),
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
        hvg_stats=hvg_stats,
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


def _write_into(
    adata, sel, key, uns_params, *, mark_highly_variable, hvg_stats, subset, graph, graph_key, write_graph_too
):
    """:func:`select`'s writes, after all computation: the selection (``var``, ``uns``), scanpy's
    ``highly_variable`` columns and ``uns["hvg"]`` when asked, the graph the method used (``obsp[graph_key]``:
    built by :func:`select`, or by the method itself, ``Selection.extra["graph"]``) when ``write_graph_too``,
    and the subset of the selected genes in ``var`` order (scanpy's ``subset``)."""
    write_selection(adata, sel, key=key, uns_params=uns_params)
    if mark_highly_variable:
        _mark_highly_variable(adata, sel, key, hvg_stats)
    if write_graph_too:
        write_graph(adata, sel.extra["graph"] if graph is None else graph, key=graph_key)
    if subset:
        adata._inplace_subset_var(np.asarray(sel.selected, dtype=bool))


def selection(
    adata,
    method: str = "laplacian_score",
    n_top_genes: int | None = None,
    *,
    layer: str | None = None,
    obsp: str | None = None,
    labels_key: str | None = None,
    graph_params: dict | None = None,
    random_state: int | None = 0,
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
    method, n_top_genes, layer, obsp, labels_key, graph_params, random_state, counts_layer, **params
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
        n_top_genes,
        layer=layer,
        obsp=obsp,
        labels_key=labels_key,
        graph_params=graph_params,
        random_state=random_state,
        counts_layer=counts_layer,
        default_graph=default_graph,
        params=params,
        batch_key=batch_key,
    )
    return sel


def _run(
    adata,
    method,
    n_top_genes,
    *,
    layer,
    obsp,
    labels_key,
    graph_params,
    random_state,
    counts_layer,
    default_graph,
    params,
    batch_key=None,
):
    """(Selection, the graph given or built here or None, where the counts came from) of :func:`selection`."""
    _check_adata(adata)
    info = method_info(method)
    check_seed(random_state)  # before the graph is built
    check_method_params(method, params)  # an unknown parameter (e.g. n_features) is named first
    check_n_features(n_top_genes, adata.n_vars, name="n_top_genes", allow_none=True)  # named as on this face
    if n_top_genes is None and not info.own_support:
        msg = (
            f"n_top_genes must be an integer in [1, {adata.n_vars}] for method {method!r} (only the published GLFS "
            "readings choose their own support); got None"
        )
        raise ValueError(msg)
    batches = _batches(adata, batch_key)
    X = _expression(adata, layer)
    graph = _given_graph(adata, obsp, info, method)
    if out_of_core_kind(X) is not None:  # backed AnnData or dask X: read once here, then streamed by the scores
        X = check_X(X, read_only=True, lazy=True)
        check_streams(method, X, graph)
    else:  # complex, text, structured or masked values: glfs.select's refusal, before counts or a graph read X
        check_X_kind(X, "X" if layer is None else f"adata.layers[{layer!r}]")
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
    log.info("tl.select: scoring %d genes with %s (n_top_genes=%s)", adata.n_vars, method, n_top_genes)
    t1 = time.perf_counter()
    sel = _select(
        X,
        method=method,
        graph=graph,
        n_features_to_select=n_top_genes,
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
    values = col.astype(object).where(col.notna(), None).to_numpy()
    check_labels(values, adata.n_obs, name=f"adata.obs[{batch_key!r}] (batch_key)", min_classes=1)  # its name
    return values


def _check_subset(adata, key) -> None:
    """Refuse ``subset=True`` on a backed AnnData before anything is computed or written: anndata cannot subset
    its genes in place (it raised only after the selection had been written to ``var`` and ``uns``)."""
    if getattr(adata, "isbacked", False):
        mode = getattr(getattr(adata, "file", None), "_filemode", None)
        msg = (
            f"subset=True cannot subset a backed AnnData (backed mode {mode!r}, file {adata.filename}): anndata "
            "cannot drop genes of a backed AnnData in place; nothing was written. Pass subset=False and then "
            f"take adata[:, adata.var[{key!r}]].to_memory(), or load the AnnData first (adata = adata.to_memory())"
        )
        raise ValueError(msg)


def _check_key_added(key_added) -> None:
    """``key_added`` is None or a non-empty string (it names every output of :func:`select`) that can name an
    HDF5 element (:func:`_check_h5_name`)."""
    if key_added is not None and (not isinstance(key_added, str) or not key_added.strip()):
        msg = (
            "key_added must be a non-empty string (it names every output: the var columns key_added, "
            "key_added_score, key_added_rank, uns[key_added] and the graph key_added_connectivities) "
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

    The default is :data:`CONNECTIVITIES_KEY`; ``f"{key_added}_connectivities"`` when ``key_added`` is given.
    """
    if graph_key is None:
        return CONNECTIVITIES_KEY if key_added is None else f"{key_added}_connectivities"
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


#: The var columns of scanpy's highly_variable_genes that describe its selection (var["highly_variable"]); an
#: earlier call's are removed when mark_highly_variable replaces that column (they would describe another selection).
SCANPY_SELECTION_COLUMNS = ("highly_variable_rank", "highly_variable_nbatches", "highly_variable_intersection")


def _hvg_statistics(adata, layer):
    """The per-gene statistics ``sc.pl.highly_variable_genes`` plots, to be written with ``mark_highly_variable``.

    None when an earlier ``sc.pp.highly_variable_genes`` call left its own (``uns["hvg"]`` and ``var["means"]``:
    they are kept), or when they cannot be computed here (out-of-core X, scanpy not installed, scanpy's binning
    fails: logged); else scanpy's ``flavor="seurat"`` statistics of the expression matrix
    (:func:`glfs.scores._hvg.plot_statistics`), a DataFrame of ``adata.n_vars`` rows.
    """
    hvg = adata.uns.get("hvg")
    if isinstance(hvg, Mapping) and "flavor" in hvg and "means" in adata.var:
        return None
    X = _expression(adata, layer)
    why = None
    if isinstance(X, OutOfCore) or out_of_core_kind(X) is not None:
        why = "X is out of core (it is not read again for a plot)"
    else:
        try:
            return plot_statistics(X)
        except ImportError as exc:
            why = str(exc)
        except (ValueError, IndexError) as exc:  # scanpy's binning of the genes by mean
            why = f"scanpy's flavor='seurat' statistics failed: {exc}"
    log.warning(
        "tl.select: mark_highly_variable wrote var['highly_variable'] but not uns['hvg'] or the statistics "
        "sc.pl.highly_variable_genes plots (%s); run sc.pp.highly_variable_genes(adata) for them",
        why,
    )
    return None


def _mark_highly_variable(adata, sel, key, stats):
    """var["highly_variable"] = the selection (sc.pp.pca's default mask), replacing an existing column with a warning;
    ``uns["hvg"]`` and the statistics ``sc.pl.highly_variable_genes`` plots (``stats``, or an earlier call's).

    scanpy's columns of an earlier ``highly_variable_genes`` call that describe its selection
    (:data:`SCANPY_SELECTION_COLUMNS`) go with it, named in the warning; its per-gene statistics (``means``,
    ``dispersions``, ``variances``, ...) describe the genes and stay, as does its ``uns["hvg"]["flavor"]``
    (which says which of them the plot reads).  A selection within batches writes scanpy's
    ``highly_variable_nbatches`` and ``highly_variable_intersection`` (same meaning) beside it.
    """
    stale = [c for c in SCANPY_SELECTION_COLUMNS if c in adata.var]
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
    adata.var["highly_variable"] = np.asarray(sel.selected, dtype=bool)
    for name in ("nbatches", "intersection"):
        if name in sel.extra:
            adata.var[f"highly_variable_{name}"] = np.asarray(sel.extra[name])
    if stats is not None:
        warn_replaced(adata, list(stats.columns), "scanpy's flavor='seurat' statistics (mark_highly_variable=True)")
        for column in stats.columns:
            adata.var[column] = stats[column].to_numpy()
        adata.uns["hvg"] = {"flavor": "seurat", "selection": key}
    elif isinstance(adata.uns.get("hvg"), Mapping) and "means" in adata.var:  # an earlier call's statistics
        adata.uns["hvg"] = {**adata.uns["hvg"], "selection": key}


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
    labels = adata.obs[labels_key].to_numpy()
    check_labels(labels, adata.n_obs, name=f"adata.obs[{labels_key!r}] (labels_key)")  # errors name the column
    return labels


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


def _graph_record(adata, info, sel, obsp, graph_params, layer, batch_key):
    """``uns[key]["params"]["graph_params"]``: the resolved settings of a graph built here (:func:`graph_settings`);
    ``{"built_by": method}`` for a method that built its own (its settings are among its params); None when the
    method uses no graph or was given one (``obsp``)."""
    if not info.needs_graph or obsp is not None:
        return None
    if info.own_graph:
        return {"built_by": info.name}
    return graph_settings(_expression(adata, layer), graph_params, within_batches=batch_key is not None)


def graph_settings(X, graph_params: dict | None = None, *, within_batches: bool = False) -> dict:
    """The settings of the graph :func:`glfs.select` builds on X with ``graph_params``, resolved, as plain values.

    What ``DEFAULT_GRAPH_PARAMS`` and ``graph_params`` leave to :func:`glfs.similarity_graph` is resolved as it
    resolves it: the search (``choose_neighbor_method``: ``"exact"`` or ``"approx"`` and its index), the principal
    components searched (``n_pcs``; 0 = all genes, as scanpy's ``pp.neighbors(n_pcs=0)``), the metric, and
    whether X is read out of core.  :func:`select` writes this dict to ``uns[key]["params"]["graph_params"]``.

    Parameters
    ----------
    X : array-like, sparse or out-of-core of shape (n_samples, n_features)
        The matrix the graph is built on (only its shape and kind are read).
    graph_params : dict, optional
        As :func:`select`.
    within_batches : bool, default False
        The graph is built within each batch (``batch_key``).

    Returns
    -------
    dict
        ``n_neighbors``, ``kernel``, ``metric``, ``search``, ``approx_index`` (approximate search only),
        ``n_pcs``, ``out_of_core``, ``within_batches``, ``random_state`` (None dropped), and ``t``/``mu``
        when given.
    """
    gp = {**DEFAULT_GRAPH_PARAMS, **(graph_params or {})}
    given = {name: gp.get(name, default) for name, default in _GRAPH_DEFAULTS.items()}
    n, d = X.shape
    out_of_core = isinstance(X, OutOfCore) or out_of_core_kind(X) is not None
    kernel = given["kernel"]
    metric = given["metric"] or ("cosine" if kernel == "cosine" else "euclidean")
    search, n_pcs = choose_neighbor_method(n, d, given["method"], given["n_pcs"])
    # the rule reads the size and the settings, never the storage (an out-of-core X below 8,192 samples is read
    # into memory for a search on all genes): in memory, backed and dask record the same settings but out_of_core
    settings = {
        "n_neighbors": int(given["n_neighbors"]),
        "kernel": kernel,
        "metric": metric,
        "search": search,
        "approx_index": approx_backend() if search == "approx" else None,
        "n_pcs": 0 if n_pcs is None else int(n_pcs),
        "out_of_core": bool(out_of_core),
        "within_batches": bool(within_batches),
        "random_state": given["random_state"],
        "t": given["t"],
        "mu": given["mu"] if kernel == "snf" else None,
    }
    return {k: v for k, v in settings.items() if v is not None}


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
