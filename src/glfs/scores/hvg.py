"""scanpy's highly-variable-gene selections as methods of the library, computed by scanpy.

X is (n_samples, n_features) = (cells, genes), dense or sparse.  Each function
calls ``scanpy.pp.highly_variable_genes`` (or scanpy's experimental Pearson
residuals flavour) on an AnnData view of X and turns scanpy's per-gene output
into a :class:`glfs.Selection`; nothing of what scanpy computes is written out
again here.  The selected genes are exactly those of scanpy's own call with
``n_top_genes = n_features`` (tests/test_hvg.py checks this against scanpy).

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
methods need ``pip install glfs[singlecell]``.  docs/methods.md, "Single-cell
baselines", gives the details.
"""

from __future__ import annotations

import logging
import math
import warnings
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp

from glfs.core._validation import constant_features
from glfs.core.limits import check_bytes
from glfs.core.result import Selection, make_selection

log = logging.getLogger(__name__)

__all__ = [
    "select_hvg_seurat",
    "select_hvg_cell_ranger",
    "select_hvg_seurat_v3",
    "select_hvg_pearson_residuals",
    "pearson_residuals_bytes",
]

def _scanpy():
    """scanpy and anndata, or an ImportError naming the extra to install."""
    try:
        import anndata
        import scanpy
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        msg = f"the scanpy baselines (hvg_*) need scanpy: pip install glfs[singlecell] ({exc})"
        raise ImportError(msg) from None
    return scanpy, anndata


def _adata(X):
    """A bare AnnData over X (cells x genes) with gene names "0".."d-1" (scanpy's output is matched by name)."""
    _, anndata = _scanpy()
    X = X.astype(np.float32) if sp.issparse(X) and X.dtype != np.float32 else X
    a = anndata.AnnData(X=X)
    a.var_names = [str(j) for j in range(X.shape[1])]
    return a


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


def _dispersion_flavor(method, flavor, X, n_features, params) -> Selection:
    sc, _ = _scanpy()
    d = X.shape[1]
    try:
        with _quiet():
            df = sc.pp.highly_variable_genes(_adata(X), flavor=flavor, n_top_genes=int(n_features), inplace=False, **params)
    except (ValueError, IndexError) as exc:  # scanpy's binning of the genes by mean, in its own words
        msg = (
            f"{method}: scanpy's {flavor!r} flavour cuts the {d} genes into bins by their mean expression "
            f"(n_bins={params.get('n_bins', 20)}) and normalises each gene's dispersion within its bin; that failed "
            f"({type(exc).__name__}: {exc}). It needs many genes with distinct means (cell_ranger: distinct 10th-100th "
            "percentiles of the means); pass fewer bins (n_bins) or more genes, or use deviance or hvg_pearson_residuals"
        )
        raise ValueError(msg) from None
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
    return make_selection(
        method, score, higher_is_better=True, n_features=n_features, selected=selected,
        params={"flavor": flavor, "n_top_genes": int(n_features), **params},
    )


def _ranked_flavor(method, X, n_features, params, call, score_column) -> Selection:
    """seurat_v3 / Pearson residuals: scanpy's call over all genes gives the full rank; the top n are its selection."""
    d = X.shape[1]
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
        method, score, higher_is_better=True, n_features=n_features, ranking=ranking, selected=selected,
        params={"n_top_genes": int(n_features), **params},
    )


def select_hvg_seurat(X, W=None, *, n_features, labels=None, random_state=None, **params) -> Selection:
    """scanpy ``highly_variable_genes(flavor="seurat")`` (Satija et al., Nat Biotechnol 2015).

    X : (n_samples, n_features) log-normalised expression (``normalize_total`` + ``log1p``).
    Score: normalised dispersion in mean bins, higher is better.  Cost O(nnz(X)).
    """
    return _dispersion_flavor("hvg_seurat", "seurat", X, n_features, params)


def select_hvg_cell_ranger(X, W=None, *, n_features, labels=None, random_state=None, **params) -> Selection:
    """scanpy ``highly_variable_genes(flavor="cell_ranger")`` (Zheng et al., Nat Commun 2017).

    X : (n_samples, n_features) log-normalised expression.  Score: dispersion
    normalised by the median and MAD of its mean bin, higher is better.  Cost O(nnz(X)).
    """
    return _dispersion_flavor("hvg_cell_ranger", "cell_ranger", X, n_features, params)


def select_hvg_seurat_v3(X, W=None, *, n_features, counts, labels=None, random_state=None, **params) -> Selection:
    """scanpy ``highly_variable_genes(flavor="seurat_v3")`` (Stuart et al., Cell 2019); needs scikit-misc.

    counts : (n_samples, n_features) raw counts, the matrix scored (X is not read).  Score: variance of the
    standardised, clipped counts after a loess fit of log variance on log
    mean (``variances_norm``), higher is better.  Cost O(nnz(X)).
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
            msg = (
                f"hvg_seurat_v3: scanpy's loess fit (scikit-misc) of log variance on log mean failed on {adata.n_vars} "
                f"genes ({exc!s}); it needs many genes with distinct means (use hvg_pearson_residuals or deviance on so few)"
            )
            raise ValueError(msg) from None

    _refuse_too_few_for_loess(counts, params.get("span", 0.3))
    return _ranked_flavor("hvg_seurat_v3", counts, n_features, params, call, "variances_norm")


def _refuse_too_few_for_loess(counts, span) -> None:
    """seurat_v3 fits a local quadratic (loess, degree 2) through span x (genes of non-zero variance) points:
    below 3 points per fit scikit-misc's loess crashes the process (SIGSEGV at 1-3 genes), so refuse first."""
    need = math.ceil(3 / float(span))
    varying = int(np.count_nonzero(~constant_features(counts)))
    if varying < need:
        msg = (
            f"hvg_seurat_v3: {varying} of {counts.shape[1]} genes vary across the cells; scanpy's loess fit "
            f"(degree 2, span={span}) needs at least {need} (3 genes in each local fit of span x genes), and "
            "scikit-misc ends the process on fewer. Use deviance or hvg_pearson_residuals on so few genes"
        )
        raise ValueError(msg)


def select_hvg_pearson_residuals(X, W=None, *, n_features, counts, labels=None, random_state=None,
                                 **params) -> Selection:
    """scanpy ``experimental.pp.highly_variable_genes(flavor="pearson_residuals")`` (Lause et al., Genome Biol 2021).

    counts : (n_samples, n_features) raw counts, the matrix scored (X is not read).  Score: variance of the analytic
    Pearson residuals of a negative binomial null (theta 100, clipped at
    sqrt(n)), higher is better.  Cost O(n d) time (computed in gene chunks).
    """
    n, d = counts.shape
    what = (f"scanpy's copies of the counts ({n} x {d}, {_nnz(counts):.3g} non-zeros: the cell and gene subsets, "
            "a CSC copy and the values as float64)" if sp.issparse(counts) else
            f"scanpy's copies of the dense counts ({n} x {d}: the cell and gene subsets and a float64 copy)")
    check_bytes("hvg_pearson_residuals", what, pearson_residuals_bytes(counts), PEARSON_ALTERNATIVE,
                kind="copies of X")
    _refuse_empty_cells(counts)
    sc, _ = _scanpy()  # after the size check: importing scanpy takes seconds

    def call(adata, **kw):
        return sc.experimental.pp.highly_variable_genes(adata, flavor="pearson_residuals", **kw)

    return _ranked_flavor("hvg_pearson_residuals", counts, n_features, params, call, "residual_variances")


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
    checked with tracemalloc (tests/test_hvg.py): :func:`_adata` first makes a
    sparse X float32; scanpy then copies the cell subset and the gene subset
    (every cell and every gene with a count, but copies all the same), converts
    the gene subset to CSC, and casts its values to float64 while the first
    copy is still held.  With float32 values and index arrays of ``b`` bytes
    that is ``max(3 (4 + b), 2 (4 + b) + 8)`` bytes per non-zero (24 at int32
    indices), plus about 64 bytes per cell and per gene for the index pointers
    and sums.  A dense X: two copies of X and one in float64, ``n d (2 s + 8)``
    for values of ``s`` bytes.  At a million cells x 20,000 genes with 5.5e8
    non-zeros this is 12.4 GB (2^30 bytes); scanpy failed there with a MemoryError under a
    16 GB address-space limit (docs/methods.md, "Size limits").
    """
    n, d = X.shape
    if not sp.issparse(X):
        return float(n) * d * (2 * X.dtype.itemsize + 8)
    index = max(X.indices.dtype.itemsize, 4)
    entry = 4 + index
    per_nnz = max(3 * entry, 2 * entry + 8) + (entry if X.dtype != np.float32 else 0)
    return float(X.nnz) * per_nnz + 64.0 * (n + d)
