"""The supervised classification protocol (Wang & Goldenberg 2013, Table 3).

X is always (n_samples, n_features) = (patients, genes).  Cross-validation
folds (:func:`cv_splitter`), the elastic net on a 0-1 response
(:class:`ElasticNetClassifier`), the tuned scikit-learn baselines of the
paper's Table 3 (:func:`baseline_classifiers`), the genes a fitted classifier
uses (:func:`n_genes_used`) and the train/test protocol
(:func:`evaluate_classifier`) and its random-genes floor
(:func:`laprls_random_floor`).  Pure functions of arrays; no file I/O.  The
public names are re-exported by :mod:`glfs.evaluate`.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import ElasticNet

from glfs.core._validation import check_X
from glfs.designs._gradient import laprls_fit
from glfs.designs._gradient_model import DEFAULT_LAMBDA1, DEFAULT_LAMBDA2
from glfs.evaluate._clustering import _as_dense
from glfs.graph._similarity import label_graph

log = logging.getLogger(__name__)

__all__ = [
    "cv_splitter",
    "ElasticNetClassifier",
    "baseline_classifiers",
    "n_genes_used",
    "evaluate_classifier",
    "laprls_random_floor",
]


def cv_splitter(y, n_folds: int = 10, random_state=0):
    """Stratified, shuffled, seeded K-fold; K capped at the smallest class size (>= 2)."""
    from sklearn.model_selection import StratifiedKFold

    _, counts = np.unique(np.asarray(y), return_counts=True)
    k = int(max(2, min(int(n_folds), int(counts.min()))))
    if k != n_folds:
        log.warning(
            "cv_splitter: %d folds requested, smallest class has %d samples; using %d", n_folds, counts.min(), k
        )
    return StratifiedKFold(n_splits=k, shuffle=True, random_state=None if random_state is None else int(random_state))


class ElasticNetClassifier(ClassifierMixin, BaseEstimator):
    """Elastic net on a 0-1 coded response, class 1 when the fit exceeds 0.5.

    The classifier of Zou & Hastie (2005, Sec. 6) on the leukaemia data, whose
    row the GLFS paper quotes: scikit-learn ``ElasticNet`` (coordinate
    descent) on y in {0, 1}.  With more than two classes, one elastic net per
    class indicator (one-vs-rest) and the class with the largest fit wins.
    ``alpha``, ``l1_ratio``, ``tol``, ``max_iter`` as in ``ElasticNet``.
    Fitted attributes ``classes_``, ``coef_`` (n_classes or 1, n_features).
    X : array-like of shape (n_samples, n_features).
    """

    def __init__(self, alpha=0.1, l1_ratio=0.5, tol=1e-3, max_iter=5000):
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.tol = tol
        self.max_iter = max_iter

    def fit(self, X, y):
        self.classes_, codes = np.unique(np.asarray(y), return_inverse=True)
        if self.classes_.size < 2:
            msg = f"y must have at least 2 classes; got {self.classes_.size}"
            raise ValueError(msg)
        targets = [1] if self.classes_.size == 2 else range(self.classes_.size)
        self.models_ = []
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=ConvergenceWarning)
            for c in targets:
                m = ElasticNet(alpha=self.alpha, l1_ratio=self.l1_ratio, tol=self.tol, max_iter=self.max_iter)
                self.models_.append(m.fit(X, (codes == c).astype(np.float64)))
        self.coef_ = np.vstack([m.coef_ for m in self.models_])
        return self

    def decision_function(self, X):
        F = np.column_stack([m.predict(X) for m in self.models_])
        return F[:, 0] - 0.5 if self.classes_.size == 2 else F

    def predict(self, X):
        f = self.decision_function(X)
        if self.classes_.size == 2:
            return self.classes_[(f > 0).astype(int)]
        return self.classes_[np.argmax(f, axis=1)]


def baseline_classifiers(cv, *, random_state=0) -> dict:
    """The supervised baselines of the paper's Table 3, each tuned by inner CV (GridSearchCV).

    - ``elastic_net``: standardise, :class:`ElasticNetClassifier` (the
      elastic net on a 0-1 response, as Zou & Hastie 2005, Sec. 6), grid over
      alpha and l1_ratio;
    - ``linear_svm``: standardise, linear SVM (LinearSVC), grid over C;
    - ``l2_logistic``: standardise, L2 logistic regression, grid over C;
    - ``nearest_shrunken_centroids``: scikit-learn NearestCentroid with a
      grid over ``shrink_threshold`` (Tibshirani et al. 2002).

    Hyper-parameters are chosen by accuracy over the folds of ``cv``; every
    grid is ordered from the strongest regularisation to the weakest, so ties
    (common with 38 training samples) go to the sparsest / most regularised
    model, the usual "simplest model within the best CV error" choice.  Returns a dict
    name -> unfitted estimator.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV
    from sklearn.neighbors import NearestCentroid
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    rs = None if random_state is None else int(random_state)
    grids = {
        "elastic_net": (
            make_pipeline(StandardScaler(), ElasticNetClassifier()),
            {
                "elasticnetclassifier__alpha": np.logspace(0, -2, 5).tolist(),
                "elasticnetclassifier__l1_ratio": [0.2, 0.5, 0.8],
            },
        ),
        "linear_svm": (
            make_pipeline(StandardScaler(), LinearSVC(max_iter=20000, random_state=rs)),
            {"linearsvc__C": np.logspace(-5, 0, 6).tolist()},
        ),
        "l2_logistic": (
            make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)),
            {"logisticregression__C": np.logspace(-5, 0, 6).tolist()},
        ),
        "nearest_shrunken_centroids": (
            NearestCentroid(),
            {"shrink_threshold": [6.0, 5.0, 4.0, 3.0, 2.0, 1.0, 0.5, None]},
        ),
    }
    return {name: GridSearchCV(est, grid, cv=cv, scoring="accuracy", refit=True) for name, (est, grid) in grids.items()}


def n_genes_used(estimator, n_features: int) -> int:
    """Number of genes a fitted classifier uses.

    Linear models: genes with a non-zero coefficient.  Nearest centroids:
    genes whose (shrunken) class centroids are not all equal.  Feature
    selectors (``get_support``): the support size.  Otherwise ``n_features``.
    """
    est = getattr(estimator, "best_estimator_", estimator)
    if hasattr(est, "steps"):
        est = est.steps[-1][1]
    if hasattr(est, "get_support"):
        return int(np.sum(est.get_support()))
    for attr in ("n_selected_", "n_genes_"):
        if hasattr(est, attr):
            return int(getattr(est, attr))
    if hasattr(est, "coef_"):
        coef = np.atleast_2d(np.asarray(est.coef_))
        return int(np.sum(np.any(coef != 0, axis=0)))
    if hasattr(est, "centroids_"):
        c = np.asarray(est.centroids_)
        return int(np.sum(np.ptp(c, axis=0) > 0))
    return int(n_features)


def _fixed_estimator(fitted):
    """Clone of a fitted estimator with its tuned hyper-parameters frozen (for the CV error)."""
    from sklearn.base import clone

    if hasattr(fitted, "best_estimator_"):
        return clone(fitted.best_estimator_)
    est = clone(fitted)
    params = est.get_params(deep=False)
    # estimators that tune lam internally expose the chosen value as lam_
    if "lam" in params and hasattr(fitted, "lam_"):
        est.set_params(lam=fitted.lam_)
    return est


def _search_cv_errors(fitted, cv, X_train, y_train):
    """The CV errors at the tuned hyper-parameters from a fitted search's own folds, or None.

    A ``GridSearchCV`` scored by accuracy over the same ``cv`` has already fitted the
    estimator with its chosen hyper-parameters on every training fold: its fold accuracies
    times the fold sizes are the errors that :func:`cross_val_predict` of the frozen
    estimator would count again (the same folds, the same fits).  None when the search used
    other folds or another score, or a fold's score is missing.
    """
    results = getattr(fitted, "cv_results_", None)
    if results is None or getattr(fitted, "cv", None) is not cv or getattr(fitted, "scoring", None) != "accuracy":
        return None
    sizes = [te.size for _, te in cv.split(X_train, y_train)]
    acc = np.array([results[f"split{i}_test_score"][fitted.best_index_] for i in range(len(sizes))], dtype=float)
    if not np.all(np.isfinite(acc)):
        return None
    return int(sum(round((1.0 - a) * s) for a, s in zip(acc, sizes)))


def evaluate_classifier(estimator, X_train, y_train, X_test, y_test, *, cv) -> dict:
    """Train/test protocol of Wang & Goldenberg 2013, Table 3, for one classifier.

    The estimator (which tunes its own hyper-parameters on the training set,
    e.g. GridSearchCV or GLFSClassifier) is fitted on the training samples
    only and tested once on the test samples.  The CV error is the number of
    training samples misclassified by ``cv``-fold cross-validation of the
    estimator with its tuned hyper-parameters frozen (the convention of Zou &
    Hastie 2005 whose rows the paper quotes; it is optimistic, because the
    hyper-parameters were chosen on the same folds).  A ``GridSearchCV`` scored by
    accuracy on the same ``cv`` gives them from its own fold fits at the chosen
    hyper-parameters (the same fits; not refitted).  An estimator that tunes
    ``lam`` by its own CV and exposes ``lams_``, ``lam_`` and ``cv_errors_``
    (GLFSClassifier) reports its CV errors at the chosen lam instead, which is
    the same quantity without refitting.

    X_train, X_test : array-like of shape (n_samples, n_features).

    Returns
    -------
    dict with ``cv_errors, cv_n, test_errors, test_n, n_genes`` and ``params``
    (the tuned hyper-parameters).  Fewer errors is better.
    """
    from sklearn.model_selection import cross_val_predict

    X_train = _as_dense(check_X(X_train, name="X_train"))
    X_test = _as_dense(check_X(X_test, name="X_test"))
    y_train = np.asarray(y_train)
    y_test = np.asarray(y_test)
    if X_train.shape[1] != X_test.shape[1]:
        msg = f"X_train and X_test must have the same genes; got {X_train.shape[1]} and {X_test.shape[1]}"
        raise ValueError(msg)
    fitted = estimator.fit(X_train, y_train)
    test_pred = fitted.predict(X_test)
    if hasattr(fitted, "cv_errors_") and hasattr(fitted, "lam_") and hasattr(fitted, "lams_"):
        # estimators that tune lam by their own CV report the errors per lam (GLFSClassifier)
        at = np.flatnonzero(np.asarray(fitted.lams_) == fitted.lam_)
        cv_errors = int(np.asarray(fitted.cv_errors_)[at[0]]) if at.size else None
    else:
        cv_errors = None
    if cv_errors is None:
        cv_errors = _search_cv_errors(fitted, cv, X_train, y_train)
    if cv_errors is None:
        cv_pred = cross_val_predict(_fixed_estimator(fitted), X_train, y_train, cv=cv)
        cv_errors = int(np.sum(cv_pred != y_train))
    params = getattr(fitted, "best_params_", None)
    if params is None and hasattr(fitted, "lam_"):
        params = {"lam": fitted.lam_}
    return {
        "cv_errors": cv_errors,
        "cv_n": int(y_train.size),
        "test_errors": int(np.sum(test_pred != y_test)),
        "test_n": int(y_test.size),
        "n_genes": n_genes_used(fitted, X_train.shape[1]),
        "params": {k: (v.item() if isinstance(v, np.generic) else v) for k, v in (params or {}).items()},
    }


def laprls_random_floor(X, y, train, cv, n_genes: int, *, draws: int, random_state=0, reference=None) -> dict:
    """The classification floor: LapRLS on ``n_genes`` random genes, as :class:`glfs.GLFSClassifier` fits it.

    X is (n_samples, n_features); ``y`` the labels (two classes), ``train`` a boolean mask of the
    training samples, ``cv`` the splitter of the baselines (:func:`cv_splitter`).  Same classifier
    as the supervised GLFS row: :func:`glfs.designs._gradient.laprls_fit` (Wang & Goldenberg 2013, Eq. 11)
    with the class graph of the training labels and GLFSClassifier's default lambda1 and lambda2,
    genes and 0/1 targets centred on the training means, class 1 when the score >= 0.5; only the
    genes differ: ``draws`` seeded random sets.  Returns one row of the classification table:
    the median CV and test errors over the draws (``draws`` odd, so the median is one draw's);
    ``params`` says so, names ``reference`` (the row whose gene count this is) and gives the ranges.
    """
    X, y, train = np.asarray(X), np.asarray(y), np.asarray(train, dtype=bool)
    classes = np.unique(y[train])
    y01 = (y == classes[1]).astype(np.float64)

    def fit_predict(tr, te, genes):
        Xtr = X[tr][:, genes]
        mx, my = Xtr.mean(axis=0), float(y01[tr].mean())
        coef = laprls_fit(Xtr - mx, y01[tr] - my, label_graph(y01[tr]), DEFAULT_LAMBDA1, DEFAULT_LAMBDA2)
        return ((X[te][:, genes] - mx) @ coef + my >= 0.5).astype(float)

    tr_idx, te_idx = np.flatnonzero(train), np.flatnonzero(~train)
    cv_err, test_err = [], []
    for s in np.random.SeedSequence(random_state).generate_state(draws):
        genes = np.sort(np.random.default_rng(int(s)).choice(X.shape[1], size=n_genes, replace=False))
        errors = 0
        for ftr, fte in cv.split(X[tr_idx], y[tr_idx]):
            errors += int(np.sum(fit_predict(tr_idx[ftr], tr_idx[fte], genes) != y01[tr_idx[fte]]))
        cv_err.append(errors)
        test_err.append(int(np.sum(fit_predict(tr_idx, te_idx, genes) != y01[te_idx])))
    lams = (
        f"lambda1 = lambda2 = {DEFAULT_LAMBDA1:g}"
        if DEFAULT_LAMBDA1 == DEFAULT_LAMBDA2
        else f"lambda1 = {DEFAULT_LAMBDA1:g}, lambda2 = {DEFAULT_LAMBDA2:g}"
    )
    params = {
        "statistic": f"median over {draws} seeded random gene sets",
        "n_genes_as": reference,
        "classifier": f"LapRLS, class graph, {lams} (as GLFSClassifier)",
        "cv_errors_range": [min(cv_err), max(cv_err)],
        "test_errors_range": [min(test_err), max(test_err)],
    }
    return {
        "cv_errors": int(np.median(cv_err)),
        "cv_n": int(train.sum()),
        "test_errors": int(np.median(test_err)),
        "test_n": int((~train).sum()),
        "n_genes": int(n_genes),
        "params": params,
    }
