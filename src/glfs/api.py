"""One uniform entry point, :func:`select`, over every method of the library."""

from __future__ import annotations

import importlib
import logging
import warnings
from dataclasses import dataclass

import numpy as np

from ._result import Selection, make_selection
from ._validation import check_graph, check_labels, check_n_features, check_X
from .graph import label_graph, similarity_graph
from .scores import fisher_score, laplacian_score, variance_score

log = logging.getLogger(__name__)

__all__ = ["select", "METHODS", "method_info"]


@dataclass(frozen=True)
class MethodInfo:
    name: str
    target: str  # "module:function" returning a Selection
    needs_graph: bool
    needs_labels: bool
    own_support: bool  # may decide the number of selected features itself (n_features=None)
    description: str


def _select_laplacian_score(X, W, *, n_features, labels=None, random_state=None, **params):
    _no_params("laplacian_score", params)
    s = laplacian_score(X, W)
    return make_selection("laplacian_score", s, higher_is_better=False, n_features=n_features)


def _select_fisher_score(X, W, *, n_features, labels=None, random_state=None, **params):
    _no_params("fisher_score", params)
    s = fisher_score(X, labels)
    return make_selection("fisher_score", s, higher_is_better=True, n_features=n_features)


def _select_variance(X, W, *, n_features, labels=None, random_state=None, **params):
    _no_params("variance", params)
    s = variance_score(X)
    return make_selection("variance", s, higher_is_better=True, n_features=n_features)


def _no_params(method, params):
    if params:
        msg = f"method {method!r} takes no parameters; got {sorted(params)}"
        raise ValueError(msg)


_M = MethodInfo
METHODS: dict[str, MethodInfo] = {
    m.name: m
    for m in [
        _M("laplacian_score", "glfs.api:_select_laplacian_score", True, False, False, "Laplacian score (He 2005), lower better"),
        _M("fisher_score", "glfs.api:_select_fisher_score", False, True, False, "Fisher score (supervised), higher better"),
        _M("variance", "glfs.api:_select_variance", False, False, False, "per-gene variance baseline"),
        _M("lapaofs", "glfs.optimal:select_lapaofs", True, False, False, "LapAOFS greedy A-optimal (He 2011)"),
        _M("lapdofs", "glfs.optimal:select_lapdofs", True, False, False, "LapDOFS greedy D-optimal (He 2011)"),
        _M("glfs", "glfs.design:select_glfs_design", True, False, False, "well-posed GLFS: budgeted A-optimal design, greedy + exchange"),
        _M("glfs_paper", "glfs.gradient:select_glfs_paper", True, False, True, "GLFS, Eq. 7 with its true gradient"),
        _M("glfs_exact", "glfs.gradient:select_glfs_exact", True, False, True, "GLFS, exact covariance trace"),
        _M("glfs_printed", "glfs.gradient:select_glfs_printed", True, False, True, "GLFS, Eq. 7 values with printed Eq. 9"),
        _M("lkr_score", "glfs.lkr:select_lkr_score", True, False, False, "LKR score (Cheung & Zeng 2009), unsupervised"),
        _M("lkr_score_supervised", "glfs.lkr:select_lkr_score_supervised", False, True, False, "LKR score, class graph"),
        _M("ufi", "glfs.ufi:select_ufi", False, False, False, "UFI feature selection (Zhang 2012); no graph"),
        _M("spca", "glfs.baselines:select_spca", False, False, False, "sparse PCA loading mass"),
        _M("q_alpha", "glfs.baselines:select_q_alpha", False, False, False, "Q-alpha (Wolf & Shashua 2005)"),
    ]
}


def method_info(method: str) -> MethodInfo:
    if method not in METHODS:
        msg = f"method must be one of {sorted(METHODS)}; got {method!r}"
        raise ValueError(msg)
    return METHODS[method]


def _resolve(target: str):
    mod, fn = target.split(":")
    return getattr(importlib.import_module(mod), fn)


def select(
    X,
    method: str = "laplacian_score",
    *,
    graph=None,
    n_features: int | None = None,
    labels=None,
    graph_params: dict | None = None,
    random_state: int | None = 0,
    **params,
) -> Selection:
    """Score, rank and select features with any method of the library.

    Parameters
    ----------
    X : array-like or sparse of shape (n_samples, n_features), or AnnData
        Samples (patients, cells) in rows, genes in columns.  Not modified.
        An AnnData is read through its ``.X`` (nothing is written into it;
        :func:`glfs.tl.select` writes the result into ``.var``).
    method : str
        One of :data:`METHODS` (``glfs.METHODS.keys()``).
    graph : sparse (n_samples, n_samples), optional
        Patient-similarity graph for graph-based methods; when omitted it is
        built with :func:`glfs.similarity_graph` and ``graph_params`` (default
        5 neighbours, heat kernel).  Methods that need no graph ignore it,
        with a ``UserWarning``.
    n_features : int in [1, n_features], optional
        How many to select.  Required except for GLFS, which otherwise keeps
        the support its lam search finds.
    labels : array-like of length n_samples, optional
        Class labels, for supervised methods (``fisher_score``,
        ``lkr_score_supervised``).
    random_state : int or None, default 0
        Seed for methods with randomness (sparse PCA, GLFS start point).
    **params
        Method parameters (see each method's function).

    Returns
    -------
    Selection
        Frozen result: ``scores``, ``ranking`` (best first), ``selected``,
        ``weights``, ``params``.
    """
    info = method_info(method)
    if _is_anndata(X):
        if X.X is None:
            msg = "X is an AnnData whose .X is None; pass adata.layers[...], or use glfs.tl.select(adata, layer=...)"
            raise ValueError(msg)
        log.info("select: X is an AnnData; using its .X (glfs.tl.select(adata, ...) writes the result into adata.var)")
        X = X.X
    X = check_X(X)
    n, d = X.shape
    if graph is not None and not info.needs_graph:
        msg = f"method {method!r} uses no graph; the graph passed is ignored"
        warnings.warn(msg, UserWarning, stacklevel=2)
    n_features = check_n_features(n_features, d, allow_none=info.own_support)
    if n_features is None and not info.own_support:
        msg = f"n_features must be an integer in [1, {d}] for method {method!r}; got None"
        raise ValueError(msg)
    if info.needs_labels:
        check_labels(labels, n)
    W = None
    if info.needs_graph:
        if graph is None:
            gp = {"n_neighbors": 5, "kernel": "heat", **(graph_params or {})}
            W = similarity_graph(X, **gp)
        else:
            W = check_graph(graph, n)
    fn = _resolve(info.target)
    log.info("select: method=%s, X %d x %d, n_features=%s", method, n, d, n_features)
    sel = fn(X, W, n_features=n_features, labels=labels, random_state=random_state, **params)
    if not isinstance(sel, Selection) or sel.scores.shape != (d,):
        msg = f"internal error: {method} did not return a Selection over {d} features"
        raise RuntimeError(msg)
    return sel


def _is_anndata(X) -> bool:
    """An AnnData (duck-typed: the core modules do not import anndata)."""
    return all(hasattr(X, a) for a in ("obs", "var", "obs_names", "var_names", "X"))


def _plain(v):
    """Convert numpy scalars/arrays to plain Python values (for .uns and TSV)."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v
