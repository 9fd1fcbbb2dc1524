"""Issue 30 (low): random_state is checked up front, in glfs.select and glfs.tl.select, before any work."""

import numpy as np
import pytest

import glfs
from glfs.graph import _similarity as similarity


@pytest.mark.parametrize("seed", ["abc", -1, 1.5, True, 2**32, [1, 2]])
@pytest.mark.parametrize("method", ["laplacian_score", "variance", "spca"])
def test_a_bad_random_state_is_refused_before_any_work(method, seed, monkeypatch):
    X = np.random.default_rng(0).normal(size=(20, 6))

    def no_graph(*args, **kwargs):
        raise AssertionError("the graph was built before random_state was checked")

    monkeypatch.setattr(glfs.api, "similarity_graph", no_graph)
    with pytest.raises(ValueError, match=r"random_state must be None or an integer seed in \[0, 2\*\*32 - 1\]; got "):
        glfs.select(X, method, n_features_to_select=2, random_state=seed)


def test_tl_select_refuses_a_bad_random_state_before_its_graph(monkeypatch):
    ad = pytest.importorskip("anndata")
    a = ad.AnnData(np.random.default_rng(0).normal(size=(20, 6)))

    def no_graph(*args, **kwargs):
        raise AssertionError("the graph was built before random_state was checked")

    monkeypatch.setattr(similarity, "similarity_graph", no_graph)
    monkeypatch.setattr(glfs.tl, "_graph_to_use", no_graph)
    with pytest.raises(ValueError, match=r"random_state must be None or an integer seed .*got 'x' \(str\)"):
        glfs.tl.select(a, method="laplacian_score", n_top_genes=2, random_state="x")
    assert "laplacian_score" not in a.var


@pytest.mark.parametrize("seed", [None, 0, 7, np.int64(3), 2**32 - 1])
def test_good_seeds_pass(seed):
    X = np.random.default_rng(0).normal(size=(20, 6))
    assert glfs.select(X, "variance", n_features_to_select=2, random_state=seed).selected.sum() == 2
