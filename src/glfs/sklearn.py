"""scikit-learn adapters: a feature selector for pipelines, and the GLFS/LapRLS classifier."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted

from .api import method_info, select

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
    n_features : int or None, default 50
        Capped at the number of input features.
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

    Examples
    --------
    >>> from sklearn.pipeline import Pipeline
    >>> from sklearn.svm import LinearSVC
    >>> pipe = Pipeline([("select", FeatureSelector(n_features=20)), ("clf", LinearSVC())])
    """

    def __init__(
        self,
        method="laplacian_score",
        n_features=50,
        n_neighbors=5,
        kernel="heat",
        random_state=0,
        method_params=None,
    ):
        self.method = method
        self.n_features = n_features
        self.n_neighbors = n_neighbors
        self.kernel = kernel
        self.random_state = random_state
        self.method_params = method_params

    def fit(self, X, y=None):
        info = method_info(self.method)
        X = np.asarray(X, dtype=np.float64) if not hasattr(X, "tocsr") else X
        d = X.shape[1]
        k = None if self.n_features is None else min(int(self.n_features), d)
        self.selection_ = select(
            X,
            method=self.method,
            n_features=k,
            labels=y if info.needs_labels else None,
            graph_params={"n_neighbors": self.n_neighbors, "kernel": self.kernel},
            random_state=self.random_state,
            **(self.method_params or {}),
        )
        self.n_features_in_ = d
        self.scores_ = np.asarray(self.selection_.scores)
        self.ranking_ = np.asarray(self.selection_.ranking)
        return self

    def _get_support_mask(self):
        check_is_fitted(self, "selection_")
        return np.asarray(self.selection_.selected)
