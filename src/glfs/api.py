"""One uniform entry point, :func:`select`, over every method of the library."""

from __future__ import annotations

import difflib
import inspect
import logging
import numbers
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from glfs.core._out_of_core import OutOfCore, out_of_core_kind
from glfs.core._result import Selection, make_selection
from glfs.core._validation import check_graph, check_labels, check_n_features, check_X
from glfs.core._value_checks import check_counts, check_scale
from glfs.core.limits import DENSE_ALTERNATIVE, check_dense_size
from glfs.designs import _budgeted as design
from glfs.designs import _gradient as gradient
from glfs.designs import _optimal as optimal
from glfs.designs import _ufi as ufi
from glfs.graph._similarity import DEFAULT_GRAPH_PARAMS, similarity_graph
from glfs.scores import _baselines as baselines
from glfs.scores import _batches as by_batch
from glfs.scores import _hvg as hvg
from glfs.scores import _lkr as lkr
from glfs.scores import _moran as moran
from glfs.scores._genewise import deviance_by_batch, deviance_score, fisher_score, laplacian_score, variance_score

log = logging.getLogger(__name__)

__all__ = [
    "select",
    "METHODS",
    "FAMILIES",
    "MethodInfo",
    "method_info",
    "methods_of",
    "method_params",
    "check_method_params",
    "check_streams",
    "classifier_rows",
    "plain_value",
    "DESIGN_GLFS",
    "SCANPY_FLAVORS",
]


# Families of methods; the variant lists of the workflow and the report derive from them.
FAMILIES = {
    "score": "gene-wise score",
    "optimal_design": "greedy optimal experimental design (He et al. 2011)",
    "glfs": "well-posed GLFS (budgeted A-optimal design, docs/methods/glfs-design.md)",
    "glfs_published": "GLFS as published (Wang & Goldenberg 2013), one reading of its equations",
    "lkr": "Laplacian-regularised kernel regression score (Cheung & Zeng 2009)",
    "baseline": "baseline without a graph",
    "hvg": "scanpy's highly variable genes, computed by scanpy (the single-cell bar)",
}


@dataclass(frozen=True, kw_only=True)
class MethodInfo:
    """One registered method: its function and plain facts about it, by name.

    ``fn(X, W, *, n_features, labels, random_state, **params)`` returns a
    :class:`glfs.Selection`; :func:`select` checks the arguments once before
    calling it (X, the graph W or None, labels, n_features).  ``n_features`` is the
    registry's internal name of :func:`select`'s ``n_features_to_select`` (the scoring
    functions and :func:`glfs.core.make_selection` share it); no public entry point takes it.  Every fact but
    the name, function, family and description has a default, so an entry
    states only what sets it apart.
    """

    name: str
    fn: Callable[..., Selection]
    family: str  # a key of FAMILIES
    description: str
    higher_is_better: bool = True  # direction of Selection.scores
    needs_graph: bool = False
    needs_labels: bool = False
    own_support: bool = False  # may decide the number of selected features itself (n_features=None)
    needs_counts: bool = False  # scores raw counts, fn's counts= (glfs.select's `counts`, tl.select's layers["counts"])
    own_graph: bool = False  # builds its own graph when none is given (instead of DEFAULT_GRAPH_PARAMS')
    optional_counts: bool = False  # scores X, and takes raw counts too when given (fn's counts=)
    batch: str | None = (
        None  # batches=: "ranks" scored within each batch, combined by rank (glfs.scores._batches); "own" fn takes batches= (scanpy's flavours)
    )
    # batch="ranks": every batch in one pass instead of fn once per batch, the same Selections (glfs.scores._batches.run_by_batch):
    # batch_fn(X, codes, n_batches, *, n_features, counts) -> [Selection of batch k for k in range(n_batches)]
    batch_fn: Callable | None = None
    objective: str | None = None  # GLFS methods: GLFSClassifier's objective ("design", "exact", "paper", "printed")
    dense_x: bool = False  # makes X dense: a large sparse X is refused (glfs.core.limits) before the graph is built
    streams: bool = False  # reads an out-of-core X block by block (an own_graph method only on a given graph)
    # Where its parameters (glfs.select's **params) are named: fn's signature (None); the signature of the
    # function fn passes them to; or a tuple of names fn passes on to a library not imported here (scanpy).
    params_from: Callable | tuple[str, ...] | None = None
    fixed_params: tuple[str, ...] = ()  # names in params_from's signature that fn sets itself

    @property
    def is_glfs(self) -> bool:
        """A GLFS method (the well-posed one or a published reading)."""
        return self.family in ("glfs", "glfs_published")


def _select_laplacian_score(X, W, *, n_features, labels=None, random_state=None):
    return make_selection("laplacian_score", laplacian_score(X, W), higher_is_better=False, n_features=n_features)


def _select_fisher_score(X, W, *, n_features, labels=None, random_state=None):
    return make_selection("fisher_score", fisher_score(X, labels), higher_is_better=True, n_features=n_features)


def _select_variance(X, W, *, n_features, labels=None, random_state=None):
    return make_selection("variance", variance_score(X), higher_is_better=True, n_features=n_features)


def _select_deviance(X, W, *, n_features, counts, labels=None, random_state=None):
    return make_selection("deviance", deviance_score(counts), higher_is_better=True, n_features=n_features)


def _select_deviance_batches(X, codes, n_batches, *, n_features, counts):
    return [
        make_selection("deviance", s, higher_is_better=True, n_features=n_features)
        for s in deviance_by_batch(counts, codes, n_batches)
    ]


# fmt: off
def _registry() -> dict[str, MethodInfo]:
    # Registry order is the order of derived lists (glfs_exact is the first published reading:
    # the workflow's results/{dataset}/glfs_path.tsv).
    M = MethodInfo
    entries = [
        M(name="laplacian_score", fn=_select_laplacian_score, family="score", higher_is_better=False, needs_graph=True,
          streams=True, batch="ranks", description="Laplacian score (He 2005), lower better"),
        M(name="fisher_score", fn=_select_fisher_score, family="score", needs_labels=True, streams=True,
          description="Fisher score (supervised), higher better"),
        M(name="variance", fn=_select_variance, family="baseline", streams=True,
          batch="ranks", description="per-gene variance baseline"),
        M(name="lapaofs", fn=optimal.select_lapaofs, family="optimal_design", needs_graph=True, dense_x=True,
          params_from=optimal.optimal_design_greedy,
          fixed_params=("criterion",), description="LapAOFS greedy A-optimal (He 2011)"),
        M(name="lapdofs", fn=optimal.select_lapdofs, family="optimal_design", needs_graph=True, dense_x=True,
          params_from=optimal.optimal_design_greedy,
          fixed_params=("criterion",), description="LapDOFS greedy D-optimal (He 2011)"),
        M(name="glfs", fn=design.select_glfs_design, family="glfs", needs_graph=True, objective="design",
          dense_x=True, params_from=design.glfs_design, fixed_params=("start",),
          description="well-posed GLFS: budgeted A-optimal design, greedy + exchange"),
        M(name="glfs_exact", fn=gradient.select_glfs_exact, family="glfs_published", needs_graph=True,
          objective="exact", own_support=True, dense_x=True, params_from=gradient.glfs_published, fixed_params=("objective",),
          description="GLFS, exact covariance trace"),
        M(name="glfs_paper", fn=gradient.select_glfs_paper, family="glfs_published", needs_graph=True,
          objective="paper", own_support=True, dense_x=True, params_from=gradient.glfs_published, fixed_params=("objective",),
          description="GLFS, Eq. 7 with its true gradient"),
        M(name="glfs_printed", fn=gradient.select_glfs_printed, family="glfs_published", needs_graph=True,
          objective="printed", own_support=True, dense_x=True, params_from=gradient.glfs_published, fixed_params=("objective",),
          description="GLFS, Eq. 7 values with printed Eq. 9"),
        M(name="lkr_score", fn=lkr.select_lkr_score, family="lkr", higher_is_better=False, needs_graph=True,
          dense_x=True, params_from=lkr.lkr_score, batch="ranks", description="LKR score (Cheung & Zeng 2009), unsupervised"),
        M(name="lkr_score_supervised", fn=lkr.select_lkr_score_supervised, family="lkr", higher_is_better=False,
          needs_labels=True, dense_x=True, params_from=lkr.lkr_score, fixed_params=("n_neighbors",),
          description="LKR score, class graph"),
        M(name="ufi", fn=ufi.select_ufi, family="baseline", dense_x=True, params_from=ufi.ufi,
          fixed_params=("full_ranking",), description="UFI feature selection (Zhang 2012); no graph"),
        M(name="spca", fn=baselines.select_spca, family="baseline", dense_x=True, params_from=baselines.spca_score,
          fixed_params=("return_components", "return_info"), description="sparse PCA loading mass"),
        M(name="q_alpha", fn=baselines.select_q_alpha, family="baseline", dense_x=True, params_from=baselines.q_alpha,
          fixed_params=("return_info",), description="Q-alpha (Wolf & Shashua 2005)"),
        # the single-cell baselines: scanpy's HVG flavours (glfs.scores._hvg; parameters passed on to scanpy)
        # and the binomial deviance
        M(name="hvg_seurat", fn=hvg.select_hvg_seurat, family="hvg", params_from=("n_bins",),
          batch="own", description="scanpy HVG, flavor 'seurat' (log-normalised input)"),
        M(name="hvg_cell_ranger", fn=hvg.select_hvg_cell_ranger, family="hvg", params_from=("n_bins",),
          batch="own", description="scanpy HVG, flavor 'cell_ranger' (log-normalised input)"),
        M(name="hvg_seurat_v3", fn=hvg.select_hvg_seurat_v3, family="hvg", needs_counts=True, params_from=("span",),
          batch="own", description="scanpy HVG, flavor 'seurat_v3' (raw counts)"),
        M(name="hvg_pearson_residuals", fn=hvg.select_hvg_pearson_residuals, family="hvg", needs_counts=True,
          params_from=("theta", "clip", "chunksize"), batch="own", description="scanpy HVG, Pearson residuals (raw counts)"),
        M(name="deviance", fn=_select_deviance, family="baseline", needs_counts=True, streams=True,
          batch="ranks", batch_fn=_select_deviance_batches, description="binomial deviance (Townes et al. 2019), raw counts"),
        # the graph-based single-cell selection (glfs.scores._moran; docs/methods/graph-moran.md)
        M(name="graph_moran", fn=moran.select_graph_moran, family="score", needs_graph=True, own_graph=True,
          optional_counts=True, streams=True, fixed_params=("batches",),
          batch="ranks", description="Moran's I on a kNN graph of the cells refined on its own top genes (single-cell)"),
    ]
    return {m.name: m for m in entries}
# fmt: on


METHODS: dict[str, MethodInfo] = _registry()

# The well-posed GLFS: the registered method with the budgeted-design objective.  The workflow's
# glfs-vs-greedy table and lambda1 sensitivity panel are checks of this method.
DESIGN_GLFS: str = next(name for name, m in METHODS.items() if m.objective == "design")


def methods_of(*families: str) -> list[str]:
    """Names of the registered methods of the given families, in registry order."""
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        msg = f"families must be among {sorted(FAMILIES)}; got {unknown}"
        raise ValueError(msg)
    return [name for name, m in METHODS.items() if m.family in families]


def classifier_rows(method: str) -> tuple[str, ...]:
    """Rows of the workflow's classification table (Table 3 protocol) fitted with a GLFS method.

    The method's own row (``GLFSClassifier(objective=info.objective)`` on the patient graph) and,
    for the budgeted design (``objective="design"``), ``f"{method}_supervised"``: the same
    classifier on the class graph of the training labels (``graph="labels"``).  Empty for a
    method that is not GLFS (``MethodInfo.is_glfs``).
    """
    info = method_info(method)
    if not info.is_glfs:
        return ()
    return (method, f"{method}_supervised") if info.objective == "design" else (method,)


#: scanpy's ``highly_variable_genes`` flavours and the registry name of each here (the one name a method has:
#: a flavour name is refused with the name to use, so that var/uns keys and configs always carry the registry name).
SCANPY_FLAVORS = {
    "seurat": "hvg_seurat",
    "cell_ranger": "hvg_cell_ranger",
    "seurat_v3": "hvg_seurat_v3",
    "pearson_residuals": "hvg_pearson_residuals",
}


def method_info(method: str) -> MethodInfo:
    """The registry entry of ``method``; a ValueError lists the known names and suggests the closest.

    A scanpy flavour name (``"seurat_v3"``, :data:`SCANPY_FLAVORS`) is refused with the registry name of
    that flavour (``"hvg_seurat_v3"``); any other unknown name with the closest known names
    (:func:`difflib.get_close_matches`).
    """
    if not isinstance(method, str):
        msg = f"method must be a method name (str), one of {sorted(METHODS)}; got {method!r} ({type(method).__name__})"
        raise ValueError(msg)
    if method not in METHODS:
        msg = f"method must be one of {sorted(METHODS)}; got {method!r}. {_did_you_mean(method)}"
        raise ValueError(msg)
    return METHODS[method]


def _did_you_mean(method: str) -> str:
    """The hint of :func:`method_info` for an unknown name: its scanpy flavour's method, or the closest names."""
    flavor = SCANPY_FLAVORS.get(method.lower().replace("-", "_"))
    if flavor is not None:
        return f"scanpy's flavor {method!r} is method {flavor!r} here (computed by scanpy): pass method={flavor!r}"
    close = difflib.get_close_matches(method.lower(), METHODS, n=3, cutoff=0.6)
    return f"Did you mean {' or '.join(repr(c) for c in close)}?" if close else "See glfs.METHODS."


def select(
    X,
    method: str = "laplacian_score",
    *,
    graph=None,
    n_features_to_select: int | None = None,
    labels=None,
    graph_params: dict | None = None,
    random_state: int | None = 0,
    counts=None,
    batches=None,
    **params,
) -> Selection:
    """Score, rank and select features with any method of the library.

    Parameters
    ----------
    X : array-like or sparse of shape (n_samples, n_features), or AnnData
        Samples (patients, cells) in rows, genes in columns.  Not modified.
        An AnnData is read through its ``.X``, its ``.raw`` through ``.raw.X``
        (nothing is written into it; :func:`glfs.tl.select` writes the result into ``.var``).  Real and
        finite; its largest absolute value must lie in ``[1e-50, 1e50]``
        (:data:`glfs.core._value_checks.SCALE_RANGE`: beyond it squares and products
        leave float64), else a ValueError says so.
    method : str
        One of :data:`METHODS` (``glfs.METHODS.keys()``).
    graph : sparse (n_samples, n_samples), optional
        Patient-similarity graph for graph-based methods; when omitted it is
        built with :func:`glfs.similarity_graph` and ``graph_params`` (default
        5 neighbours, heat kernel).  Methods that need no graph ignore it,
        with a ``UserWarning``.
    n_features_to_select : int in [1, X.shape[1]], optional
        How many genes to select (scikit-learn's name).  Required except for
        the published GLFS readings, which otherwise keep the support their
        lam search finds.
    labels : array-like of length n_samples, optional
        Class labels, for supervised methods (``fisher_score``,
        ``lkr_score_supervised``).
    random_state : int or None, default 0
        Seed for methods with randomness (sparse PCA, GLFS start point).
    counts : array-like or sparse of shape (n_samples, n_features), optional
        Raw counts, for the methods that score counts (``METHODS[m].needs_counts``:
        ``hvg_seurat_v3``, ``hvg_pearson_residuals``, ``deviance``).  When
        omitted, those methods take X itself if X holds counts (non-negative
        integers) and refuse otherwise; other methods ignore it.
    batches : array-like of length n_samples, optional
        One batch label per sample (scanpy's ``adata.obs[batch_key]``), for the methods with
        ``METHODS[m].batch``: scanpy's flavours pass them to scanpy (``batch_key``); the gene-wise
        scores are computed within each batch, their graph built (or a given graph cut) within
        it, and the batches combined by rank (:mod:`glfs.scores._batches`; docs/methods/batch-aware.md,
        "Batch-aware selection").  Needs ``n_features_to_select`` and X in memory.
    **params
        Method parameters (see each method's function).

    Returns
    -------
    Selection
        Frozen result: ``scores``, ``ranking`` (best first), ``selected``,
        ``weights``, ``params``.
    """
    info = method_info(method)
    check_seed(random_state)
    X = _matrix_of(X)
    _check_param_names(method, params)
    X = check_scale(_input(X))
    if isinstance(X, OutOfCore):
        check_streams(method, X, graph)
    n, d = X.shape
    if info.dense_x and sp.issparse(X):  # before the graph is built: refuse at once
        check_dense_size(method, f"a dense copy of the sparse X ({n} x {d})", float(n) * d, DENSE_ALTERNATIVE)
    if graph is not None and not info.needs_graph:
        msg = f"method {method!r} uses no graph; the graph passed is ignored"
        warnings.warn(msg, UserWarning, stacklevel=2)
    n_features = _n_features_of(info, method, n_features_to_select, d)
    if info.needs_labels:
        check_labels(labels, n)
    W = _graph_of(info, X, graph, graph_params, batches)
    if info.needs_counts or info.optional_counts:  # the one road of raw counts to a method: its counts=
        given = counts is not None or info.needs_counts
        params = {**params, "counts": _counts_for(method, X, counts) if given else None}
    log.info("select: method=%s, X %d x %d, n_features_to_select=%s", method, n, d, n_features)
    if batches is not None:
        sel = _select_batches(info, X, batches, W, n_features, graph_params, random_state, params)
    else:
        sel = info.fn(X, W, n_features=n_features, labels=labels, random_state=random_state, **params)
    if not isinstance(sel, Selection) or sel.scores.shape != (d,):
        msg = f"internal error: {method} did not return a Selection over {d} features"
        raise RuntimeError(msg)
    return sel


def _matrix_of(X):
    """X itself, or the matrix of an AnnData (its ``.X``) or of an AnnData's ``.raw`` (its ``.raw.X``)."""
    if _is_anndata(X):
        if X.X is None:
            msg = "X is an AnnData whose .X is None; pass adata.layers[...], or use glfs.tl.select(adata, layer=...)"
            raise ValueError(msg)
        log.info("select: X is an AnnData; using its .X (glfs.tl.select(adata, ...) writes the result into adata.var)")
        return X.X
    if _is_raw(X):  # adata.raw: its values are read as they are (was: "could not convert Raw")
        log.info("select: X is an AnnData's .raw (%d x %d); using adata.raw.X", *X.shape)
        return X.X
    return X


def _n_features_of(info, method: str, n_features_to_select, d: int):
    """The checked number of genes to select (None only for a method that chooses its own support)."""
    k = check_n_features(n_features_to_select, d, name="n_features_to_select", allow_none=True)
    if k is None and not info.own_support:
        msg = (
            f"n_features_to_select must be an integer in [1, {d}] for method {method!r} (only the published GLFS readings "
            "choose their own support); got None"
        )
        raise ValueError(msg)
    return k


def _graph_of(info, X, graph, graph_params, batches):
    """The graph a method gets: the given one (checked), one built with ``graph_params``, or None (no graph
    method; a method that builds its own; with batches, built within each batch by :func:`_select_batches`)."""
    if not info.needs_graph:
        return None
    if graph is not None:
        return check_graph(graph, X.shape[0])
    if info.own_graph or batches is not None:
        return None
    return similarity_graph(X, **{**DEFAULT_GRAPH_PARAMS, **(graph_params or {})})


def check_seed(random_state) -> None:
    """ValueError unless ``random_state`` is None or an integer seed numpy takes: checked before any work
    (a bad seed failed deep inside a method, after the graph, or was never looked at)."""
    if random_state is None:
        return
    if (
        isinstance(random_state, bool)
        or not isinstance(random_state, numbers.Integral)
        or not 0 <= random_state < 2**32
    ):
        msg = (
            f"random_state must be None or an integer seed in [0, 2**32 - 1]; got {random_state!r} "
            f"({type(random_state).__name__})"
        )
        raise ValueError(msg)


def _select_batches(info, X, batches, W, n_features, graph_params, random_state, params):
    """The method within batches (docs/methods/batch-aware.md, "Batch-aware selection"): scanpy's or glfs.scores._batches'."""
    if info.batch is None:
        aware = [m for m, i in METHODS.items() if i.batch is not None]
        msg = f"method {info.name!r} does not take batches (batch_key); the batch-aware methods are {aware}"
        raise ValueError(msg)
    backed = isinstance(X, OutOfCore) and X.kind != "dask"  # a dask X is cut to each batch's cells lazily
    if backed or n_features is None or (isinstance(X, OutOfCore) and info.batch != "ranks"):
        msg = (
            f"batches (batch_key) need X in memory or as a dask array (a method of glfs' own for the latter), and "
            f"n_features_to_select (each batch's number of top genes); got "
            f"{f'an out-of-core X ({X.describe()})' if isinstance(X, OutOfCore) else 'n_features_to_select=None'}"
        )
        raise ValueError(msg)
    by_batch.batch_codes(batches, X.shape[0])  # checked before any batch runs
    if info.batch == "own":
        return info.fn(X, W, n_features=n_features, labels=None, random_state=random_state, batches=batches, **params)
    gp = {**DEFAULT_GRAPH_PARAMS, **(graph_params or {})}
    params = dict(params)
    counts = params.pop("counts", None)
    return by_batch.run_by_batch(
        info,
        X,
        batches,
        n_features=n_features,
        graph=W,
        graph_params=gp,
        counts=counts,
        random_state=random_state,
        **params,
    )


# ---- input conversion: sparse, out-of-core ---------------------------------------------------
def _input(X):
    """X validated: a sparse or out-of-core X is read as it is (no dense or float64 copy); a dense X is copied
    to float64 as before (the methods may hand it to code that writes)."""
    lazy = isinstance(X, OutOfCore) or out_of_core_kind(X) is not None
    return check_X(X, read_only=sp.issparse(X) or lazy, lazy=lazy)


def check_streams(method: str, X, graph) -> None:
    """Refuse, naming the alternatives, a method that cannot stream the out-of-core X (``MethodInfo.streams``).

    An ``own_graph`` method streams X only on a given graph: the graph it builds itself is built in memory.
    """
    info = method_info(method)
    if info.streams and (graph is not None or not info.own_graph):
        return  # a graph not given is built by similarity_graph from streamed principal components
    if info.streams:
        why = (
            "it builds its own graph in memory: pass graph= (e.g. adata.obsp['connectivities'] "
            "after sc.pp.neighbors, or glfs.tl.select(..., obsp='connectivities'))"
        )
    else:
        why = "it needs X in memory"
    streaming = ", ".join(f"{m} (on a given graph)" if i.own_graph else m for m, i in METHODS.items() if i.streams)
    msg = (
        f"method {method!r} cannot stream an out-of-core X ({X.describe()}): {why}. "
        f"Methods that stream it: {streaming}; or load X first "
        f"(adata.to_memory(), or X.compute() for a dask array; {X.memory_hint()})"
    )
    raise ValueError(msg)


# ---- method parameters, checked without running the method ---------------------------------
# Every parameter of a method is named in one place: the signature of the function its registry row
# points at (MethodInfo.params_from, or fn itself), less the arguments glfs.select passes itself
# (_PASSED) and the names fn sets itself (MethodInfo.fixed_params).  glfs.select checks the names
# before the method runs; tests/core/test_validation.py checks that each method accepts the defaults of
# the names found here and refuses other names.
_PASSED = {"X", "W", "n_features", "n_features_to_select", "labels", "random_state", "counts"}
# Names of the gene count that a caller may pass to the wrong face: refused with the face's own name.
_GENE_COUNT_NAMES = ("n_features", "n_features_to_select", "n_top_genes")


def method_params(method: str):
    """The keyword parameters a method accepts (``**params`` of :func:`select`), without running it.

    Returns a dict name -> :class:`inspect.Parameter` (with the default and,
    where the function has one, the annotation), or None when the method's
    parameters are not known (a registered function that takes ``**params``
    and names no ``params_from``).
    """
    info = method_info(method)
    source = info.params_from or info.fn
    if isinstance(source, tuple):  # names passed on to a library (scanpy): its defaults apply
        return {p: inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY, default=None) for p in source}
    sig = inspect.signature(source)
    if source is info.fn and any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    skip = _PASSED | set(info.fixed_params)
    return {
        name: p
        for name, p in sig.parameters.items()
        if name not in skip and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }


def _expected_kind(p) -> str | None:
    """ "int", "int|None", "float", "bool" from a parameter's annotation or default; None = not checked."""
    ann = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", None)
    ann = None if ann is None or p.annotation is p.empty else ann.replace(" ", "")
    if ann in ("int", "float", "bool", "int|None", "float|None"):
        return ann
    d = p.default
    if isinstance(d, bool):
        return "bool"
    if isinstance(d, int):
        return "int"
    if isinstance(d, float):
        return "float"
    return None  # strings (e.g. ``scale``, which takes a number too), None, no default: left to the method


def _value_problem(value, kind: str) -> str | None:
    """Why ``value`` is not of the kind, in words; None when it is."""
    base, nullable = kind.split("|")[0], kind.endswith("|None")
    if value is None and nullable:
        return None
    suffix = " or null" if nullable else ""
    if base == "bool":
        return None if isinstance(value, (bool, np.bool_)) else "true or false"
    if isinstance(value, (bool, np.bool_)):
        return f"{'an integer' if base == 'int' else 'a number'}{suffix}"
    if base == "int":
        return None if isinstance(value, numbers.Integral) else f"an integer{suffix}"
    if isinstance(value, numbers.Real):
        return None
    if isinstance(value, str):  # a number YAML reads as a string (1e-9 without a dot); the methods read it with float()
        try:
            float(value)
        except ValueError:
            pass
        else:
            return None
    return f"a number{suffix}"


def check_method_params(method: str, params: dict) -> None:
    """Check the names of a method's parameters, and their kinds where cheap, without running it.

    Names: against :func:`method_params` (the signature of the function the
    method passes them to).  Values: integers where the parameter is an
    integer (5.0 is refused, as the methods refuse it), numbers (or numeric
    strings) where it is a number, true/false where it is a flag, known from
    the annotation or the default; ranges and choices (e.g. ``order``) are
    left to the method, which checks them when it runs.

    Raises
    ------
    ValueError
        Naming the parameter, the method and what was given.
    """
    known = _check_param_names(method, params)
    for name, value in (params if known is not None else {}).items():
        kind = _expected_kind(known[name])
        problem = kind and _value_problem(value, kind)
        if problem:
            msg = f"parameter {name!r} of method {method!r} must be {problem}; got {value!r} ({type(value).__name__})"
            raise ValueError(msg)


def _check_param_names(method: str, params) -> dict:
    """:func:`method_params` of ``method`` (None when unknown: nothing checked); a ValueError names a parameter
    that is not one of them."""
    known = method_params(method)
    if known is None:
        return None
    if not isinstance(params, dict):
        msg = f"parameters of method {method!r} must be a mapping name -> value; got {params!r}"
        raise ValueError(msg)
    for name in params:
        if name not in known:
            listed = f"its parameters are {sorted(known)}" if known else "it takes none"
            msg = f"parameter {name!r} is not a parameter of method {method!r}; {listed}"
            if name in _GENE_COUNT_NAMES:
                msg += (
                    ". The number of genes to select is n_features_to_select in glfs.select and FeatureSelector, "
                    "n_top_genes in glfs.tl.select (scanpy's name)"
                )
            raise ValueError(msg)
    return known


def _counts_for(method, X, counts):
    """The raw counts a count-based method scores: ``counts`` when given, else X when X holds counts."""
    if counts is None:
        return check_counts(
            X,
            name="X",
            hint=f"method {method!r} scores raw counts: pass them as counts=... (glfs.tl.select reads them from adata.layers[counts_layer])",
        )
    counts = check_counts(_input_counts(counts), name="counts", hint=f"method {method!r} scores raw counts")
    if counts.shape != X.shape:
        msg = f"counts must have the shape of X {X.shape}; got {counts.shape}"
        raise ValueError(msg)
    return counts


def _input_counts(counts):
    """The counts validated as X is (:func:`_input`): an out-of-core counts layer (backed, dask) is read once
    and streamed by the methods that stream, never loaded."""
    lazy = isinstance(counts, OutOfCore) or out_of_core_kind(counts) is not None
    return check_X(counts, name="counts", read_only=sp.issparse(counts) or lazy, lazy=lazy)


def _is_anndata(X) -> bool:
    """An AnnData (duck-typed: the core modules do not import anndata)."""
    return all(hasattr(X, a) for a in ("obs", "var", "obs_names", "var_names", "X"))


def _is_raw(X) -> bool:
    """An AnnData's ``.raw`` (duck-typed: X, var and to_adata, no obs)."""
    return all(hasattr(X, a) for a in ("X", "var", "var_names", "to_adata")) and not hasattr(X, "obs")


def plain_value(v):
    """Convert numpy scalars/arrays to plain Python values (for .uns and TSV)."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, dict):
        return {k: plain_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain_value(x) for x in v]
    return v
