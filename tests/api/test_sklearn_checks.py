"""scikit-learn's own estimator checks (``parametrize_with_checks``) for glfs.sklearn's two estimators.

Cheap settings keep the few hundred fits fast: the Laplacian score (the default of
FeatureSelector) and the Fisher score (supervised: y required), and GLFSClassifier
with its default selection (the well-posed GLFS, ``objective="design"``) on a
two-point gene-set grid with 2-fold inner CV.  Every check is expected to pass;
a check that cannot pass for a principled reason goes into
``EXPECTED_FAILED_CHECKS`` with the reason.
"""

import inspect
import pickle

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import glfs
from glfs.sklearn import FeatureSelector, GLFSClassifier

ESTIMATORS = [
    FeatureSelector(),
    FeatureSelector(method="fisher_score", n_features_to_select=2),
    # n_neighbors 3: the checks fit on as few as 10 samples, CV training folds of 5 (more neighbours are refused)
    GLFSClassifier(n_genes_grid=(1, 2), cv=2, n_neighbors=3),
]

#: check name -> reason, per estimator class (none needed today).
EXPECTED_FAILED_CHECKS: dict[str, dict[str, str]] = {
    "FeatureSelector": {},
    "GLFSClassifier": {},
}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED_CHECKS[type(estimator).__name__]


# xfail_strict (scikit-learn >= 1.8): an expected failure that passes is an error; 1.6 and 1.7 lack the keyword
_STRICT = {"xfail_strict": True} if "xfail_strict" in inspect.signature(parametrize_with_checks).parameters else {}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks, **_STRICT)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


# ---------------------------------------------------------------- what the checks do not pin down
def _two_class(seed=0, n=30, d=8):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    X = rng.normal(size=(n, d))
    X[:, 0] += 3.0 * y  # gene 0 separates the classes
    return X, y


def test_decision_function_is_zero_at_the_papers_threshold():
    # Eq. 11 predicts classes_[1] where the LapRLS output is >= 0.5; decision_function is that output - 0.5
    X, y = _two_class()
    clf = GLFSClassifier(n_genes_grid=(1, 2), cv=2).fit(X, y)
    raw = (X[:, clf.support_] - clf.mean_x_) @ clf.coef_ + clf.mean_y_
    np.testing.assert_allclose(clf.decision_function(X), raw - 0.5, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[(raw >= 0.5).astype(int)])
    assert np.mean(clf.predict(X) == y) >= 0.9


@pytest.mark.parametrize(
    "estimator",
    [FeatureSelector(method="variance", n_features_to_select=2), GLFSClassifier(n_genes_grid=(1, 2), cv=2)],
    ids=["FeatureSelector", "GLFSClassifier"],
)
def test_fitted_estimator_pickles_with_its_results(estimator):
    X, y = _two_class(seed=1)
    fitted = estimator.fit(X, y)
    back = pickle.loads(pickle.dumps(fitted))
    if isinstance(fitted, FeatureSelector):
        np.testing.assert_array_equal(back.get_support(), fitted.get_support())
        assert dict(back.selection_.params) == dict(fitted.selection_.params)
        assert not back.selection_.scores.flags.writeable  # frozen result stays frozen
    else:
        np.testing.assert_array_equal(back.predict(X), fitted.predict(X))


def test_selection_with_a_glfs_path_pickles():
    X, _ = _two_class(seed=2)
    W = glfs.similarity_graph(X, n_neighbors=3)
    sel = glfs.select(X, method="glfs_exact", graph=W, n_features_to_select=2, n_lams=2, max_iter=20)
    back = pickle.loads(pickle.dumps(sel))
    np.testing.assert_array_equal(back.ranking, sel.ranking)
    assert dict(back.params) == dict(sel.params)
    assert back.extra["path"] == sel.extra["path"]


@pytest.mark.parametrize(
    ("estimator", "match"),
    [
        (FeatureSelector(n_features_to_select=2.5), r"n_features_to_select must be a positive integer; got 2\.5"),
        (FeatureSelector(n_features_to_select=True), r"n_features_to_select must be a positive integer; got True"),
        (FeatureSelector(n_features_to_select=0), r"n_features_to_select must be a positive integer; got 0"),
        (GLFSClassifier(cv=1), r"cv must be an integer >= 2; got 1"),
    ],
    ids=[
        "selector-float",
        "selector-bool",
        "selector-zero",
        "classifier-cv",
    ],
)
def test_parameters_are_checked_in_fit_not_init(estimator, match):
    X, y = _two_class(seed=3)
    with pytest.raises(ValueError, match=match):
        estimator.fit(X, y)


def test_the_former_name_n_features_is_gone():
    """One name for the gene count on the scikit-learn face (the package is unreleased: no deprecation path)."""
    X, y = _two_class(seed=4)
    assert "n_features" not in FeatureSelector().get_params()
    with pytest.raises(TypeError, match="n_features"):
        FeatureSelector(n_features=3)
    assert FeatureSelector(n_features_to_select=3).fit(X).get_support().sum() == 3
