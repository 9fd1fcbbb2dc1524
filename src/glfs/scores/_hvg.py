"""scanpy's highly-variable-gene selections as methods of the library, computed by scanpy.

X is (n_samples, n_features) = (cells, genes), dense or sparse.  Each function
calls ``scanpy.pp.highly_variable_genes`` (or scanpy's experimental Pearson
residuals flavour) on an AnnData view of X and turns scanpy's per-gene output
into a :class:`glfs.Selection`; nothing of what scanpy computes is written out
again here.  The selected genes are exactly those of scanpy's own call with
``n_top_genes = n_features`` (tests/scores/test_hvg.py checks this against scanpy).

| method | scanpy call | input | score (higher = more variable) |
|---|---|---|---|
| ``hvg_seurat`` | ``flavor="seurat"`` (Satija et al. 2015) | log-normalised | ``dispersions_norm`` |
| ``hvg_cell_ranger`` | ``flavor="cell_ranger"`` (Zheng et al. 2017) | log-normalised | ``dispersions_norm`` |
| ``hvg_seurat_v3`` | ``flavor="seurat_v3"`` (Stuart et al. 2019; needs scikit-misc) | raw counts | ``variances_norm`` |
| ``hvg_pearson_residuals`` | ``sc.experimental.pp.highly_variable_genes`` (Lause et al. 2021) | raw counts | ``residual_variances`` |

Ranking: ``seurat`` and ``cell_ranger`` rank by their score (NaN last, ties
in gene order).  ``seurat_v3`` and Pearson residuals rank by scanpy's own
``highly_variable_rank`` computed over all genes (scanpy sorts them the same
way whatever ``n_top_genes`` is, so the top n of this ranking is scanpy's
selection of n genes, for every n).

scanpy (and anndata) are imported when a method runs, not with ``glfs``: the
methods need ``pip install glfs[singlecell]``.  docs/methods/hvg-deviance.md, "Single-cell
baselines", gives the details.
"""

from __future__ import annotations

import logging
import math
import warnings
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp

from glfs.core._result import Selection, make_selection
from glfs.core._validation import check_positive, constant_features
from glfs.core.limits import check_bytes
from glfs.scores._batches import batch_columns

log = logging.getLogger(__name__)

__all__ = [
    "select_hvg_seurat",
    "select_hvg_cell_ranger",
    "select_hvg_seurat_v3",
    "select_hvg_pearson_residuals",
    "pearson_residuals_bytes",
    "plot_statistics",
]

#: The per-gene statistics of scanpy's ``highly_variable_genes(flavor="seurat")`` that
#: ``sc.pl.highly_variable_genes`` plots (with ``uns["hvg"]["flavor"]``).
PLOT_COLUMNS = ("means", "dispersions", "dispersions_norm")


def _scanpy():
    """scanpy and anndata, or an ImportError naming the extra to install."""
    try:
        import anndata
        import scanpy
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        msg = f"the scanpy baselines (hvg_*) need scanpy: pip install glfs[singlecell] ({exc})"
        raise ImportError(msg) from None
    return scanpy, anndata


#: The obs column of the batch labels in the AnnData handed to scanpy (its ``batch_key``).
BATCH_COLUMN = "batch"


def _adata(X, batches=None):
    """A bare AnnData over X (cells x genes) with gene names "0".."d-1" (scanpy's output is matched by name),
    and the batch labels as a categorical ``obs["batch"]`` when given."""
    import pandas as pd

    _, anndata = _scanpy()
    X = X.astype(np.float32) if sp.issparse(X) and X.dtype != np.float32 else X
    a = anndata.AnnData(X=X)
    a.var_names = [str(j) for j in range(X.shape[1])]
    if batches is not None:
        a.obs[BATCH_COLUMN] = pd.Categorical(np.asarray(batches).astype(str))
    return a


def _batch_kw(batches) -> dict:
    return {} if batches is None else {"batch_key": BATCH_COLUMN}


def _batch_ranking(df, selected, order, score):
    """scanpy's order with batch_key: its selection first, then ``order`` ((column, descending) pairs), the
    score (descending), gene order; NaN last in every key.  The top n is scanpy's selection whatever its sort's ties."""
    keys = [np.arange(len(df)), _key(df[score], True)]
    for col, desc in reversed(order):
        keys.append(_key(df[col], desc))
    keys.append(~np.asarray(selected, dtype=bool))
    return np.lexsort(keys)


def _key(column, descending):
    v = column.to_numpy(dtype=np.float64)
    v = -v if descending else v.copy()
    v[np.isnan(v)] = np.inf
    return v


def _batch_extra(df, batches) -> tuple[dict, dict]:
    """(params, extra) of a batched scanpy call: the batches, and scanpy's per-gene batch columns as
    :func:`glfs.scores._batches.batch_columns` (``median_rank`` = its ``highly_variable_rank`` + 1, where it has one)."""
    labels = sorted({str(b) for b in np.asarray(batches).astype(str)})
    nb = df["highly_variable_nbatches"].to_numpy(dtype=np.int64)
    inter = (
        df["highly_variable_intersection"].to_numpy(dtype=bool)
        if "highly_variable_intersection" in df
        else nb == len(labels)
    )
    median = (
        df["highly_variable_rank"].to_numpy(dtype=np.float64) + 1
        if "highly_variable_rank" in df
        else np.full(nb.size, np.nan)
    )
    return {"batches": labels}, batch_columns(nb, inter, median)


def _frame(df, d):
    """scanpy's per-gene DataFrame in gene order (it may come back sorted or indexed by name)."""
    df = df.copy()
    df.index = df.index.astype(str)
    return df.reindex([str(j) for j in range(d)])


@contextmanager
def _quiet():
    """Silence scanpy's informational warnings for one call (not globally)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.filterwarnings("ignore", message=".*n_top_genes.*")
        yield


def _binning_message(method, flavor, X, params, exc) -> str:
    """Why scanpy's binning of the genes by mean failed, and the way out (cell_ranger's bins are fixed percentiles:
    scanpy ignores n_bins there; genes that are zero in every cell all get the mean 1e-12)."""
    d = X.shape[1]
    head = f"{method}: scanpy's {flavor!r} flavour cuts the {d} genes into bins by their mean expression "
    failed = f"that failed ({type(exc).__name__}: {exc})."
    if flavor != "cell_ranger":
        return (
            f"{head}(n_bins={params.get('n_bins', 20)}) and normalises each gene's dispersion within its bin; {failed} "
            "It needs many genes with distinct means; pass fewer bins (n_bins) or more genes, or use deviance or "
            "hvg_pearson_residuals"
        )
    zero = int((np.asarray((X != 0).sum(axis=0)).ravel() == 0).sum())
    why = (
        f"{zero} of the {d} genes ({zero / d:.0%}) are zero in every cell and share one mean (scanpy's 1e-12), so the "
        "lowest percentiles coincide: drop them first (sc.pp.filter_genes(adata, min_cells=1))"
        if zero > 0.1 * d
        else "it needs many genes with distinct means"
    )
    return (
        f"{head}(the 10th, 15th, ..., 100th percentiles of the means; fixed, n_bins does not apply) and normalises "
        f"each gene's dispersion within its bin; {failed} {why[0].upper() + why[1:]}, or use hvg_seurat, deviance or "
        "hvg_pearson_residuals"
    )


def _dispersion_flavor(method, flavor, X, n_features, params, batches=None) -> Selection:
    sc, _ = _scanpy()
    d = X.shape[1]
    try:
        with _quiet():
            df = sc.pp.highly_variable_genes(
                _adata(X, batches),
                flavor=flavor,
                n_top_genes=int(n_features),
                inplace=False,
                **_batch_kw(batches),
                **params,
            )
    except (ValueError, IndexError) as exc:  # scanpy's binning of the genes by mean, in its own words
        raise ValueError(_binning_message(method, flavor, X, params, exc)) from None
    df = _frame(df, d)
    score = df["dispersions_norm"].to_numpy(dtype=np.float64)
    selected = df["highly_variable"].to_numpy(dtype=bool)
    log.info("%s: scanpy selected %d genes (n_top_genes=%d)", method, int(selected.sum()), n_features)
    if selected.sum() < n_features:
        msg = (
            f"{method}: scanpy selected {int(selected.sum())} of the {int(n_features)} genes asked (n_top_genes="
            f"{int(n_features)}; scanpy {flavor!r} marks only genes whose normalised dispersion passes its cut, "
            f"{int(np.isnan(score).sum())} of {d} genes have none); the selection has fewer genes than asked"
        )
        warnings.warn(msg, UserWarning, stacklevel=4)
        log.warning(msg)
    ranking, extra, batch_params = None, {}, {}
    if batches is not None:  # scanpy's order: the number of batches, then the mean normalised dispersion
        ranking = _batch_ranking(df, selected, [("highly_variable_nbatches", True)], "dispersions_norm")
        batch_params, extra = _batch_extra(df, batches)
    return make_selection(
        method,
        score,
        higher_is_better=True,
        n_features=n_features,
        selected=selected,
        ranking=ranking,
        params={"flavor": flavor, "n_top_genes": int(n_features), **params, **batch_params},
        extra=extra,
    )


def _ranked_flavor(method, X, n_features, params, call, score_column, batches=None, order=()) -> Selection:
    """seurat_v3 / Pearson residuals: scanpy's call over all genes gives the full rank; the top n are its selection.

    With batches scanpy's ranks depend on ``n_top_genes`` (the median of the within-batch ranks among
    each batch's top n), so it is called with ``n_top_genes=n_features`` and its order (``order``)
    ranks the genes: its selection first, the rest by the mean score.
    """
    d = X.shape[1]
    if batches is not None:
        with _quiet():
            df = _frame(
                call(_adata(X, batches), n_top_genes=int(n_features), inplace=False, batch_key=BATCH_COLUMN, **params),
                d,
            )
        selected = df["highly_variable"].to_numpy(dtype=bool)
        batch_params, extra = _batch_extra(df, batches)
        log.info(
            "%s: scanpy selected %d genes within %d batches", method, int(selected.sum()), len(batch_params["batches"])
        )
        return make_selection(
            method,
            df[score_column].to_numpy(dtype=np.float64),
            higher_is_better=True,
            n_features=n_features,
            ranking=_batch_ranking(df, selected, order, score_column),
            selected=selected,
            params={"n_top_genes": int(n_features), **params, **batch_params},
            extra=extra,
        )
    with _quiet():
        df = call(_adata(X), n_top_genes=d, inplace=False, **params)
    df = _frame(df, d)
    score = df[score_column].to_numpy(dtype=np.float64)
    rank = df["highly_variable_rank"].to_numpy(dtype=np.float64)
    # scanpy's order (highly_variable_rank, then gene order); genes scanpy cannot rank (NaN) last
    key = np.where(np.isnan(rank), np.inf, rank)
    ranking = np.argsort(key, kind="stable")
    selected = np.zeros(d, dtype=bool)
    top = ranking[: int(n_features)]
    selected[top[np.isfinite(key[top])]] = True
    log.info("%s: %d genes ranked by scanpy, %d selected", method, int(np.isfinite(key).sum()), int(selected.sum()))
    return make_selection(
        method,
        score,
        higher_is_better=True,
        n_features=n_features,
        ranking=ranking,
        selected=selected,
        params={"n_top_genes": int(n_features), **params},
    )


def select_hvg_seurat(X, W=None, *, n_features, labels=None, random_state=None, batches=None, **params) -> Selection:
    """scanpy ``highly_variable_genes(flavor="seurat")`` (Satija et al., Nat Biotechnol 2015).

    X : (n_samples, n_features) log-normalised expression (``normalize_total`` + ``log1p``).
    Score: normalised dispersion in mean bins, higher is better.  Cost O(nnz(X)).
    batches : one label per cell, passed to scanpy as its ``batch_key`` (its selection, its order:
    the number of batches, then the mean normalised dispersion; ``extra`` holds scanpy's columns).
    """
    return _dispersion_flavor("hvg_seurat", "seurat", X, n_features, params, batches)


def select_hvg_cell_ranger(
    X, W=None, *, n_features, labels=None, random_state=None, batches=None, **params
) -> Selection:
    """scanpy ``highly_variable_genes(flavor="cell_ranger")`` (Zheng et al., Nat Commun 2017).

    X : (n_samples, n_features) log-normalised expression.  Score: dispersion
    normalised by the median and MAD of its mean bin, higher is better.  Cost O(nnz(X)).
    batches : as :func:`select_hvg_seurat`.
    """
    return _dispersion_flavor("hvg_cell_ranger", "cell_ranger", X, n_features, params, batches)


def select_hvg_seurat_v3(
    X, W=None, *, n_features, counts, labels=None, random_state=None, batches=None, **params
) -> Selection:
    """scanpy ``highly_variable_genes(flavor="seurat_v3")`` (Stuart et al., Cell 2019); needs scikit-misc.

    counts : (n_samples, n_features) raw counts, the matrix scored (X is not read).  Score: variance of the
    standardised, clipped counts after a loess fit of log variance on log
    mean (``variances_norm``), higher is better.  Cost O(nnz(X)).
    batches : one label per cell, scanpy's ``batch_key`` (its order: the median within-batch rank,
    then the number of batches).  When scanpy's loess cannot fit a batch (too few cells or distinct
    means; scanpy issues 2669, 1825) the call is refused, as scanpy refuses it, with a ValueError that
    names each such batch and its size, and the fixes (a larger ``span``, larger batches).
    """
    sc, _ = _scanpy()

    def call(adata, **kw):
        try:
            return sc.pp.highly_variable_genes(adata, flavor="seurat_v3", **kw)
        except ImportError as exc:
            msg = f"hvg_seurat_v3 needs scikit-misc (scanpy's loess): pip install glfs[singlecell] ({exc})"
            raise ImportError(msg) from None
        except ValueError as exc:
            if not any(word in str(exc) for word in ("singularit", "svddc", "l2fit", "condition number", "span")):
                raise
            raise ValueError(_loess_failure_message(adata.X, exc, params.get("span", 0.3))) from None

    _refuse_too_few_for_loess(counts, params.get("span", 0.3))
    if batches is None:
        return _ranked_flavor("hvg_seurat_v3", counts, n_features, params, call, "variances_norm")
    return _seurat_v3_batches(counts, np.asarray(batches).astype(str), n_features, params, call)


#: Genes detected in fewer cells than this are "rare" in the loess refusal (scanpy's tutorials filter at 3).
RARE_CELLS = 3


def _loess_failure_message(counts, exc, span) -> str:
    """Why scanpy's seurat_v3 loess failed on these counts, counted, and the way out.

    The loess fits log variance on log mean over the genes that vary.  Genes detected in one or two cells
    (an unfiltered matrix has thousands) all share a few (mean, variance) points, and a local fit through
    tied points is singular; with few cells (a small batch) the means take few distinct values for the same
    reason.  The message counts both and names the fixes: scanpy's ``sc.pp.filter_genes(min_cells=3)``
    (the workflow's ``min_cells``) for rare genes (a wider ``span`` did not fit 15,200 genes seen in one or
    two cells of 24,000), and larger batches or a wider ``span`` for a small batch.
    """
    n, d = counts.shape
    detected = np.asarray((counts > 0).sum(axis=0)).ravel()
    varying = int(np.count_nonzero(~constant_features(counts)))
    rare = [int(np.count_nonzero(detected == k)) for k in range(1, RARE_CELLS)]
    means = np.asarray(counts.mean(axis=0)).ravel()
    rare_mask = (detected > 0) & (detected < RARE_CELLS)
    distinct = int(np.unique(means[rare_mask if sum(rare) >= 0.1 * max(varying, 1) else detected > 0]).size)
    head = (
        f"hvg_seurat_v3: scanpy's loess fit (scikit-misc, span={span}) of log variance on log mean failed on "
        f"{n} cells x {d} genes ({exc!s})"
    )
    fixes = (
        f"filter the genes first (scanpy: sc.pp.filter_genes(adata, min_cells={RARE_CELLS}); the workflow: "
        "gene_filter.min_cells or the dataset's min_cells)"
    )
    if sum(rare) >= 0.1 * max(varying, 1):
        seen = " and ".join(f"{c} in {k} cell{'s' if k > 1 else ''}" for k, c in enumerate(rare, start=1) if c)
        return (
            f"{head}: {sum(rare)} of the {varying} genes that vary are detected in fewer than {RARE_CELLS} cells "
            f"({seen}); these share only {distinct} distinct means, so the local fits through their tied points "
            f"are singular (a wider span does not untie them). Fix: {fixes}"
        )
    return (
        f"{head}: the {varying} genes that vary have only {distinct} distinct means on these {n} cells (a batch this "
        f"small gives few distinct means), so the local fits are singular. Fix: give the batch more cells (merge "
        f"small batches), widen the loess (span={min(1.0, 2 * float(span)):g}), or {fixes}"
    )


def _seurat_v3_batches(counts, labels, n_features, params, call) -> Selection:
    """seurat_v3 with scanpy's batch_key; refused, as scanpy refuses, when its loess cannot fit a batch.

    scanpy fits one loess per batch and raises scikit-misc's error at the first batch it cannot fit,
    without naming it.  Here every batch is checked first (fewer varying genes than the loess needs:
    scikit-misc would end the process, :func:`_refuse_too_few_for_loess`); when scanpy's call still fails,
    each batch is fitted alone to name those that fail.  The ValueError names every batch that cannot be
    fitted with its size, and the two fixes: a larger ``span`` (scanpy's fraction of the genes in each
    local fit) or fewer, larger batches.  No batch is left out silently."""
    order = [("highly_variable_rank", False), ("highly_variable_nbatches", True)]
    _refuse_batches(counts, labels, _loess_failures(counts, labels, call, params, alone=False), params)
    try:
        return _ranked_flavor("hvg_seurat_v3", counts, n_features, params, call, "variances_norm", labels, order)
    except ValueError as exc:
        failed = _loess_failures(counts, labels, call, params, alone=True)
        _refuse_batches(counts, labels, failed, params)
        raise exc from None  # every batch fits alone: scanpy's own error stands


def _loess_failures(counts, labels, call, params, *, alone: bool) -> dict:
    """{batch: why} of the batches seurat_v3's loess cannot fit: fewer varying genes than it needs, or
    (``alone``) scanpy's call on the batch alone fails."""
    span = params.get("span", 0.3)
    failed = {}
    for b in sorted(set(labels.tolist())):
        rows = np.flatnonzero(labels == b)
        try:
            _refuse_too_few_for_loess(counts[rows], span)
            if alone:
                with _quiet():
                    call(_adata(counts[rows]), n_top_genes=1, inplace=False, **params)
        except ValueError as exc:
            failed[b] = str(exc)
    return failed


def _refuse_batches(counts, labels, failed: dict, params) -> None:
    """A ValueError naming the batches seurat_v3's loess cannot fit (with their sizes) and the fixes; nothing when none."""
    if not failed:
        return
    sizes = {b: int(np.sum(labels == b)) for b in failed}
    all_sizes = {b: int(np.sum(labels == b)) for b in sorted(set(labels.tolist()))}
    first = next(iter(failed))
    msg = (
        f"batches: scanpy's seurat_v3 loess (span={params.get('span', 0.3)}) cannot fit {len(failed)} of "
        f"{len(all_sizes)} batches: {sizes} (cells per batch; first reason, batch {first!r}: {failed[first]}). "
        "scanpy raises here too. Give a larger span (e.g. span=0.5 or 0.8: more genes in each local fit), "
        "fewer and larger batches (merge the small ones, or a coarser batch column), or a flavour without a "
        "per-batch loess (hvg_pearson_residuals, hvg_cell_ranger)"
    )
    raise ValueError(msg)


def _refuse_too_few_for_loess(counts, span) -> None:
    """seurat_v3 fits a local quadratic (loess, degree 2) through span x (genes of non-zero variance) points:
    below 3 points per fit scikit-misc's loess crashes the process (SIGSEGV at 1-3 genes), so refuse first."""
    span = check_positive(span, "span")  # 0 divided by zero below, NaN failed in int()
    need = math.ceil(3 / span)
    varying = int(np.count_nonzero(~constant_features(counts)))
    if varying < need:
        msg = (
            f"hvg_seurat_v3: {varying} of {counts.shape[1]} genes vary across the cells; scanpy's loess fit "
            f"(degree 2, span={span}) needs at least {need} (3 genes in each local fit of span x genes), and "
            "scikit-misc ends the process on fewer. Use deviance or hvg_pearson_residuals on so few genes"
        )
        raise ValueError(msg)


def select_hvg_pearson_residuals(
    X, W=None, *, n_features, counts, labels=None, random_state=None, batches=None, **params
) -> Selection:
    """scanpy ``experimental.pp.highly_variable_genes(flavor="pearson_residuals")`` (Lause et al., Genome Biol 2021).

    counts : (n_samples, n_features) raw counts, the matrix scored (X is not read).  Score: variance of the analytic
    Pearson residuals of a negative binomial null (theta 100, clipped at
    sqrt(n)), higher is better.  Cost O(n d) time (computed in gene chunks).
    batches : one label per cell, scanpy's ``batch_key`` (its order: the number of batches, then the
    median within-batch rank).
    """
    n, d = counts.shape
    what = (
        f"scanpy's copies of the counts ({n} x {d}, {_nnz(counts):.3g} non-zeros: the cell and gene subsets, "
        "a CSC copy and the values as float64)"
        if sp.issparse(counts)
        else f"scanpy's copies of the dense counts ({n} x {d}: the cell and gene subsets and a float64 copy)"
    )
    check_bytes("hvg_pearson_residuals", what, pearson_residuals_bytes(counts), PEARSON_ALTERNATIVE, kind="copies of X")
    _refuse_empty_cells(counts)
    sc, _ = _scanpy()  # after the size check: importing scanpy takes seconds

    def call(adata, **kw):
        return sc.experimental.pp.highly_variable_genes(adata, flavor="pearson_residuals", **kw)

    order = [("highly_variable_nbatches", True), ("highly_variable_rank", False)]
    return _ranked_flavor(
        "hvg_pearson_residuals", counts, n_features, params, call, "residual_variances", batches, order
    )


def _refuse_empty_cells(X) -> None:
    """Pearson residuals divide by each cell's expected count (its total times the gene's share): one cell
    without counts makes every gene's residual variance NaN (scanpy then marks genes in gene order)."""
    totals = np.asarray(X.sum(axis=1)).ravel()
    empty = np.flatnonzero(totals <= 0)
    if empty.size:
        msg = (
            f"hvg_pearson_residuals: {empty.size} of {totals.size} cells have no counts (e.g. rows {empty[:5].tolist()}); "
            "the Pearson residuals divide by each cell's total count, so every gene's residual variance would be NaN. "
            "Remove the empty cells first (sc.pp.filter_cells(adata, min_counts=1))"
        )
        raise ValueError(msg)


#: What to do when scanpy's Pearson residuals would copy the counts beyond the size limit.
PEARSON_ALTERNATIVE = (
    "scanpy 1.11.5 copies the counts before it computes the residuals gene by gene (its chunksize is not used). "
    "deviance (the binomial deviance of Townes et al., a null model of the same kind) and hvg_seurat_v3 score "
    "sparse counts without a copy; or subsample the cells, or raise glfs.core.limits.DENSE_LIMIT_GB on a machine "
    "with the memory"
)


def _nnz(X) -> int:
    return int(X.nnz) if sp.issparse(X) else int(np.prod(X.shape))


def pearson_residuals_bytes(X) -> float:
    """Bytes of the copies of X that scanpy's Pearson residuals make (scanpy 1.11.5), beyond X itself.

    Read in scanpy's source (``experimental.pp._highly_variable_genes``) and
    checked with tracemalloc (tests/scores/test_hvg.py): :func:`_adata` first makes a
    sparse X float32; scanpy then copies the cell subset and the gene subset
    (every cell and every gene with a count, but copies all the same), converts
    the gene subset to CSC, and casts its values to float64 while the first
    copy is still held.  With float32 values and index arrays of ``b`` bytes
    that is ``max(3 (4 + b), 2 (4 + b) + 8)`` bytes per non-zero (24 at int32
    indices), plus about 64 bytes per cell and per gene for the index pointers
    and sums.  A dense X: two copies of X and one in float64, ``n d (2 s + 8)``
    for values of ``s`` bytes.  At a million cells x 20,000 genes with 5.5e8
    non-zeros this is 12.4 GB (2^30 bytes); scanpy failed there with a MemoryError under a
    16 GB address-space limit (docs/methods/size-limits.md, "Size limits").
    """
    n, d = X.shape
    if not sp.issparse(X):
        return float(n) * d * (2 * X.dtype.itemsize + 8)
    index = max(X.indices.dtype.itemsize, 4)
    entry = 4 + index
    per_nnz = max(3 * entry, 2 * entry + 8) + (entry if X.dtype != np.float32 else 0)
    return float(X.nnz) * per_nnz + 64.0 * (n + d)


def plot_statistics(X):
    """scanpy's per-gene ``means``, ``dispersions``, ``dispersions_norm`` of X (``flavor="seurat"``), computed by scanpy.

    X is (n_samples, n_features), in memory, log-normalised (as scanpy's ``seurat`` flavour expects).  These are the
    columns ``sc.pl.highly_variable_genes`` plots a selection against; :func:`glfs.tl.select` writes them with
    ``mark_highly_variable=True``.  Returns a DataFrame in gene order (index "0".."d-1"), or raises scanpy's
    ValueError when its binning of the genes by mean fails (too few distinct means).
    """
    sc, _ = _scanpy()
    with _quiet():
        df = sc.pp.highly_variable_genes(_adata(X), flavor="seurat", inplace=False)
    return _frame(df, X.shape[1])[list(PLOT_COLUMNS)]
