"""The default graph is written once: glfs.graph._similarity.DEFAULT_GRAPH_PARAMS, read from similarity_graph's signature.

Every entry point that builds a graph when given none (glfs.select, glfs.tl.select,
glfs.simulation._simulate.recovery_experiment) must build it with similarity_graph's own
defaults, and the scikit-learn estimators' constructor defaults (literal, as
scikit-learn requires) must equal them.  A spy on similarity_graph records what
each entry point passes, so a literal written again with another value fails here.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import glfs
import glfs.api
import glfs.graph._similarity
import glfs.simulation._simulate
import glfs.tl
from glfs.graph._similarity import DEFAULT_GRAPH_PARAMS, similarity_graph
from glfs.sklearn import FeatureSelector, GLFSClassifier

SIGNATURE = inspect.signature(similarity_graph)


def _own_default(name):
    return SIGNATURE.parameters[name].default


def test_default_is_similarity_graphs_own():
    assert dict(DEFAULT_GRAPH_PARAMS) == {"n_neighbors": _own_default("n_neighbors"), "kernel": _own_default("kernel")}
    with pytest.raises(TypeError):
        DEFAULT_GRAPH_PARAMS["n_neighbors"] = 3  # read-only: a caller cannot change the default for everyone


@pytest.mark.parametrize("estimator", [FeatureSelector, GLFSClassifier])
def test_sklearn_constructor_defaults_equal_the_default(estimator):
    params = estimator().get_params()
    assert {k: params[k] for k in DEFAULT_GRAPH_PARAMS} == dict(DEFAULT_GRAPH_PARAMS)


def _effective(calls):
    """The n_neighbors and kernel of each recorded similarity_graph call, its own defaults filled in."""
    out = []
    for args, kwargs in calls:
        bound = SIGNATURE.bind(*args, **kwargs)
        bound.apply_defaults()
        out.append({k: bound.arguments[k] for k in ("n_neighbors", "kernel")})
    return out


@pytest.fixture
def spy(monkeypatch):
    """Record every similarity_graph call made through glfs.api, glfs.tl, glfs.simulation._simulate,
    glfs.scores._batches and glfs.graph._similarity (each imports it by name at the top of the module)."""
    import glfs.scores._batches
    import glfs.simulation._simulate
    import glfs.tl

    calls = []

    def recording(*args, **kwargs):
        calls.append((args, kwargs))
        return similarity_graph(*args, **kwargs)

    monkeypatch.setattr(glfs.api, "similarity_graph", recording)
    monkeypatch.setattr(glfs.graph._similarity, "similarity_graph", recording)
    monkeypatch.setattr(glfs.tl, "similarity_graph", recording)
    monkeypatch.setattr(glfs.simulation._simulate, "similarity_graph", recording)
    monkeypatch.setattr(glfs.scores._batches, "similarity_graph", recording)
    return calls


def _data(n=20, d=6):
    return np.random.default_rng(0).normal(size=(n, d))


def test_select_builds_the_default_graph(spy):
    glfs.select(_data(), "laplacian_score", n_features_to_select=2)
    assert _effective(spy) == [{"n_neighbors": _own_default("n_neighbors"), "kernel": _own_default("kernel")}]


def test_tl_select_builds_the_default_graph(spy):
    import anndata as ad

    glfs.tl.select(ad.AnnData(_data()), "laplacian_score", n_top_genes=2)
    assert _effective(spy) == [{"n_neighbors": _own_default("n_neighbors"), "kernel": _own_default("kernel")}]


def test_simulation_builds_the_default_graph(spy):
    glfs.simulation._simulate.recovery_experiment("laplacian_score", [(0.1, 4)], replicates=1, n_samples=20)
    expected = {"n_neighbors": _own_default("n_neighbors"), "kernel": _own_default("kernel")}
    assert spy and all(e == expected for e in _effective(spy))


def test_graph_params_override_one_key(spy):
    glfs.select(_data(), "laplacian_score", n_features_to_select=2, graph_params={"n_neighbors": 3})
    assert _effective(spy) == [{"n_neighbors": 3, "kernel": _own_default("kernel")}]
