"""scikit-learn adapters: a feature selector for pipelines, and the GLFS/LapRLS classifier."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.feature_selection import SelectorMixin
from sklearn.model_selection import StratifiedKFold
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from glfs.api import method_info, select
from glfs.core._validation import check_int, check_labels, check_X, constant_features
from glfs.designs._budgeted import glfs_design
from glfs.designs._gradient import glfs_path, laprls_fit
from glfs.designs._gradient_model import DEFAULT_LAMBDA1, DEFAULT_LAMBDA2
from glfs.graph._similarity import DEFAULT_GRAPH_PARAMS, label_graph, similarity_graph

__all__ = ["FeatureSelector", "GLFSClassifier"]


class FeatureSelector(SelectorMixin, BaseEstimator):
    """Select genes with any :func:`glfs.select` method inside a scikit-learn Pipeline.

    The patient-similarity graph is built on the training samples in ``fit``
    (kNN with ``n_neighbors`` and ``kernel``), so the selector never sees test
    samples.  ``y`` is used only by supervised methods (``fisher_score``,
    ``lkr_score_supervised``).

    Parameters
    ----------
    method : str, default "laplacian_score"
    n_features_to_select : int or None, default 50
        How many genes to select; capped at the number of input features.
    n_neighbors : int, default 5
    kernel : str, default "heat"
    random_state : int, default 0
    method_params : dict, optional
        Extra parameters passed to the method.

    Attributes
    ----------
    selection_ : glfs.Selection
    scores_ : ndarray of shape (n_features_in_,)
    ranking_ : ndarray of shape (n_features_in_,)
    n_features_in_ : int
    feature_names_in_ : ndarray of str, shape (n_features_in_,)
        Only when X in ``fit`` is a DataFrame with string column names.

    Notes
    -----
    Parameters are checked in ``fit`` (scikit-learn's convention); X is
    validated by :func:`sklearn.utils.validation.validate_data` (dense or CSR,
    at least 2 samples, finite).  ``tests/api/test_sklearn_checks.py`` runs
    scikit-learn's estimator checks on it.

    Examples
    --------
    >>> from sklearn.pipeline import Pipeline
    >>> from sklearn.svm import LinearSVC
    >>> pipe = Pipeline([("select", FeatureSelector(n_features_to_select=20)), ("clf", LinearSVC())])
    """

    def __init__(
        self,
        method="laplacian_score",
        n_features_to_select=50,
        n_neighbors=DEFAULT_GRAPH_PARAMS["n_neighbors"],
        kernel=DEFAULT_GRAPH_PARAMS["kernel"],
        random_state=0,
        method_params=None,
    ):
        self.method = method
        self.n_features_to_select = n_features_to_select
        self.n_neighbors = n_neighbors
        self.kernel = kernel
        self.random_state = random_state
        self.method_params = method_params

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # the scores take CSR input (glfs.select)
        try:
            tags.target_tags.required = method_info(self.method).needs_labels
        except ValueError:  # an unknown method is reported by fit
            pass
        return tags

    def fit(self, X, y=None, batches=None):
        """Score the genes of X (n_samples, n_features) and select ``n_features_to_select`` of them.

        ``y`` (one label per sample) only for supervised methods.  ``batches`` (one batch label per
        sample, scanpy's ``batch_key``; in a Pipeline ``pipe.fit(X, y, select__batches=b)``) selects
        within batches (:func:`glfs.select`'s ``batches``; the per-batch ranks and
        ``nbatches`` are in ``selection_.extra``).  Sets ``n_features_in_`` (and
        ``feature_names_in_`` for a DataFrame).
        """
        info = method_info(self.method)
        if info.needs_labels and y is None:
            msg = (
                f"labels must be given as y for the supervised method {self.method!r} (one per sample): "
                "FeatureSelector requires y to be passed, but the target y is None"
            )
            raise ValueError(msg)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, ensure_min_samples=2)
        d = X.shape[1]
        k = self.n_features_to_select
        k = None if k is None else min(check_int(k, "n_features_to_select", 1), d)
        self.selection_ = select(
            X,
            method=self.method,
            n_features_to_select=k,
            labels=y if info.needs_labels else None,
            graph_params={"n_neighbors": self.n_neighbors, "kernel": self.kernel},
            random_state=self.random_state,
            batches=batches,
            **(self.method_params or {}),
        )
        self.scores_ = np.asarray(self.selection_.scores)
        self.ranking_ = np.asarray(self.selection_.ranking)
        return self

    def _get_support_mask(self):
        check_is_fitted(self, "selection_")
        return np.asarray(self.selection_.selected)


class GLFSClassifier(ClassifierMixin, BaseEstimator):
    """GLFS gene selection + LapRLS classifier (Wang & Goldenberg, ICML 2013, Sec. 3.4, Eq. 11).

    ``fit`` (on the training samples only): build the patient graph on X (kNN,
    or the supervised class graph with ``graph="labels"``, as the paper's
    abstract describes the supervised use), select genes, choose the size of the
    gene set by stratified ``cv``-fold cross-validation *inside the training
    set* (the graph and the selection are recomputed on every fold's training
    part, so no label of a held-out fold touches its selection), then fit
    LapRLS (Eq. 3) on the genes selected on the whole training set.

    Selection, by ``objective``:

    - ``"design"`` (default): the well-posed GLFS (:func:`glfs.designs._budgeted.glfs_design`,
      registry name ``"glfs"``) for every k of ``n_genes_grid``; CV chooses k.
    - ``"exact"``, ``"paper"``, ``"printed"``: the published readings; the GLFS
      lam path (:func:`glfs.glfs_path`) and CV chooses lam.

    CV ties go to the smallest gene set.  Two classes of any labels; internally
    coded 0/1 (``classes_[0]`` -> 0) as in the paper.  Prediction:
    ``classes_[1]`` when w'x >= 0.5; ``decision_function`` is w'x - 0.5
    (positive means ``classes_[1]``, scikit-learn's convention).  Intercept: the paper's Eq. 11 has none; we
    centre the selected genes and y on the training means, which is exactly
    LapRLS with an unpenalised intercept (L 1 = 0, so the Laplacian term does not
    see the intercept).

    Parameters
    ----------
    objective : {"design", "exact", "paper", "printed"}, default "design"
    graph : {"knn", "labels"}, default "knn"
        Unsupervised kNN patient graph (:func:`glfs.similarity_graph`) or the
        supervised class graph (:func:`glfs.label_graph`), for the selection and
        for LapRLS.
    n_neighbors : int, default 5
    kernel : str, default "heat"
    lambda1, lambda2 : float, default 0.01
        LapRLS weights of the classifier (Eq. 3); the published variants also
        select with them.  The "design" selection uses its own scale-free
        ``graph_weight``/``ridge`` (pass them in ``glfs_params``).
    cv : int, default 10
        Folds (capped at the size of the smaller class).
    random_state : int, default 0
        Seed of the fold shuffling.
    n_genes_grid : sequence of int, default (2, 4, 8, 16, 32, 50)
        Candidate gene-set sizes for ``objective="design"`` (capped at the
        number of genes).
    glfs_params : dict, optional
        Extra parameters of :func:`glfs.designs._budgeted.glfs_design` ("design") or
        :func:`glfs.glfs_path` (published variants).
    graph_params : dict, optional
        Further keyword arguments of :func:`glfs.similarity_graph` for the kNN
        graph (e.g. ``t``, ``mu``, ``method``, ``n_pcs``); ``n_neighbors`` and
        ``kernel`` are this estimator's own parameters and may not be repeated
        here.  Ignored with ``graph="labels"``.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    lams_ : ndarray
        The CV grid: lam values (published variants, from the path on the whole
        training set) or gene-set sizes k ("design").
    lam_ : float
        The chosen grid value.
    cv_errors_ : ndarray of shape (len(lams_),)
        Misclassified held-out samples summed over the folds, per grid value.
    grid_sizes_ : ndarray of int
        Gene-set size at each grid value (on the whole training set).
    support_ : ndarray of bool, shape (n_features_in_,)
    n_genes_ : int
    coef_ : ndarray of shape (n_genes_,)
    path_ : glfs.GLFSResult (published variants) or None
    selection_converged_ : bool
        Whether the final selection converged (exchange: no improving swap;
        path: the chosen point converged, if the path reports it).
    n_features_in_ : int
    feature_names_in_ : ndarray of str, shape (n_features_in_,)
        Only when X in ``fit`` is a DataFrame with string column names.

    Notes
    -----
    Cost: (cv + 1) selections; "design": one greedy + exchange per k and fold
    (feature space, no n x n matrix).
    """

    def __init__(
        self,
        objective="design",
        graph="knn",
        n_neighbors=DEFAULT_GRAPH_PARAMS["n_neighbors"],
        kernel=DEFAULT_GRAPH_PARAMS["kernel"],
        lambda1=DEFAULT_LAMBDA1,
        lambda2=DEFAULT_LAMBDA2,
        cv=10,
        random_state=0,
        n_genes_grid=(2, 4, 8, 16, 32, 50),
        glfs_params=None,
        graph_params=None,
    ):
        self.objective = objective
        self.graph = graph
        self.n_neighbors = n_neighbors
        self.kernel = kernel
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.cv = cv
        self.random_state = random_state
        self.n_genes_grid = n_genes_grid
        self.glfs_params = glfs_params
        self.graph_params = graph_params

    def _graph(self, X, y01):
        if self.graph == "labels":
            return label_graph(y01)
        if self.graph == "knn":
            if self.n_neighbors >= X.shape[0]:  # refused as similarity_graph refuses it, never capped
                msg = (
                    f"n_neighbors must be smaller than the number of samples the graph is built on ({X.shape[0]}: "
                    f"all of X, or a training fold of the cv={self.cv} folds); got {self.n_neighbors}"
                )
                raise ValueError(msg)
            return similarity_graph(X, n_neighbors=self.n_neighbors, kernel=self.kernel, **(self.graph_params or {}))
        msg = f"graph must be 'knn' or 'labels'; got {self.graph!r}"
        raise ValueError(msg)

    def _path(self, X, y01, lams=None):
        W = self._graph(X, y01)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = glfs_path(
                X,
                W,
                lams,
                objective=self.objective,
                lambda1=self.lambda1,
                lambda2=self.lambda2,
                **(self.glfs_params or {}),
            )
        return W, res

    def _supports(self, X, y01, grid=None):
        """(W, grid, supports (len(grid), d) bool, converged (len(grid),) bool, path or None)."""
        if self.objective == "design":
            W = self._graph(X, y01)
            supports, conv = [], []
            for k in grid:
                res = glfs_design(X, W, int(min(k, X.shape[1])), **(self.glfs_params or {}))
                sup = np.zeros(X.shape[1], dtype=bool)
                sup[res.selected] = True
                supports.append(sup)
                conv.append(res.converged)
            return W, np.asarray(grid, dtype=np.float64), np.array(supports), np.array(conv), None
        W, res = self._path(X, y01, grid)
        lams = np.array([p[0] for p in res.path])
        conv = np.asarray(getattr(res, "converged", [True] * lams.size), dtype=bool)
        return W, lams, res.path_weights > 0, conv, res

    @staticmethod
    def _fit_rls(X, y01, W, support, lambda1, lambda2):
        mx = X[:, support].mean(axis=0)
        my = float(y01.mean())
        if not support.any():
            return mx, my, np.zeros(0)
        coef = laprls_fit(X[:, support] - mx, y01 - my, W, lambda1, lambda2)
        return mx, my, coef

    def _check_params(self):
        if self.objective not in ("design", "exact", "paper", "printed"):
            msg = f"objective must be one of ('design', 'exact', 'paper', 'printed'); got {self.objective!r}"
            raise ValueError(msg)
        check_int(self.cv, "cv", 2)
        gp = self.graph_params
        if gp is not None and (not isinstance(gp, dict) or {"n_neighbors", "kernel"} & set(gp)):
            msg = (
                "graph_params must be a dict of further similarity_graph arguments without 'n_neighbors' or "
                f"'kernel' (they are GLFSClassifier's own parameters); got {gp!r}"
            )
            raise ValueError(msg)
        grid = np.asarray(self.n_genes_grid)
        if grid.ndim != 1 or grid.size == 0 or not np.issubdtype(grid.dtype, np.integer) or grid.min() < 1:
            msg = f"n_genes_grid must be a non-empty sequence of positive integers; got {self.n_genes_grid!r}"
            raise ValueError(msg)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # two classes (Eq. 11 regresses on 0/1)
        tags.input_tags.sparse = True  # densified, as the selection is dense
        return tags

    def fit(self, X, y):
        """Select genes and fit LapRLS on X (n_samples, n_features) and two-class labels y."""
        self._check_params()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, ensure_min_samples=2)
        check_classification_targets(y)
        X = check_X(X, dense=True)
        n, d = X.shape
        classes, codes = check_labels(y, n, name="y")
        if classes.size != 2:
            msg = (
                f"y must have exactly 2 classes for GLFSClassifier; got {classes.size} ({list(classes)}). "
                "Only binary classification is supported."
            )
            raise ValueError(msg)
        y01 = codes.astype(np.float64)
        grid0 = sorted({int(min(k, d)) for k in self.n_genes_grid}) if self.objective == "design" else None
        W, grid, supports, conv, path = self._supports(X, y01, grid0)
        n_splits = int(min(self.cv, np.bincount(codes).min()))
        errors = np.zeros(grid.size)
        if n_splits >= 2:
            folds = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=self.random_state)
            for tr, te in folds.split(X, codes):
                Xtr = X[tr]
                if constant_features(Xtr).all():
                    continue
                fold_grid = grid0 if self.objective == "design" else grid
                Wtr, _, sup_tr, _, _ = self._supports(Xtr, y01[tr], fold_grid)
                for k in range(grid.size):
                    sup = sup_tr[k]
                    mx, my, coef = self._fit_rls(Xtr, y01[tr], Wtr, sup, self.lambda1, self.lambda2)
                    score = (X[te][:, sup] - mx) @ coef + my
                    errors[k] += np.sum((score >= 0.5).astype(int) != codes[te])
        sizes = supports.sum(axis=1)
        # fewest CV errors; ties to the smallest gene set (then the first grid value)
        best = int(np.lexsort((np.arange(grid.size), sizes, errors))[0])
        self.classes_ = classes
        self.lams_ = grid
        self.cv_errors_ = errors
        self.grid_sizes_ = sizes
        self.lam_ = float(grid[best])
        self.support_ = supports[best].copy()
        self.n_genes_ = int(self.support_.sum())
        self.selection_converged_ = bool(conv[best])
        self.path_ = path
        self.mean_x_, self.mean_y_, self.coef_ = self._fit_rls(X, y01, W, self.support_, self.lambda1, self.lambda2)
        return self

    def _rls_score(self, X):
        """w'(x - mean_x) + mean_y: the LapRLS prediction on the 0/1 scale (Eq. 11), shape (n_samples,)."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        if hasattr(X, "toarray"):
            X = X.toarray()
        return (X[:, self.support_] - self.mean_x_) @ self.coef_ + self.mean_y_

    def decision_function(self, X):
        """LapRLS prediction minus 0.5, shape (n_samples,): positive means ``classes_[1]`` (scikit-learn's convention)."""
        return self._rls_score(X) - 0.5

    def predict(self, X):
        """``classes_[1]`` where the LapRLS prediction is >= 0.5, else ``classes_[0]``."""
        positive = self._rls_score(X) >= 0.5
        return self.classes_[positive.astype(int)]
