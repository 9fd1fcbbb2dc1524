"""scanpy's HVG flavours at their limits (issue 30, item 4): seurat_v3 on too few genes is refused before
scikit-misc's loess ends the process (SIGSEGV at 1-3 genes), with the minimum it needs; the binning of the
dispersion flavours and the loess, when they fail, say why in our words.  Each call runs in a child process."""

import numpy as np
import pytest

import glfs

pytest.importorskip("scanpy")
pytest.importorskip("skmisc")


def _counts(d, n=200, seed=0):
    rng = np.random.default_rng(seed)
    return rng.poisson(rng.gamma(2.0, 1.0, size=d) * 2, size=(n, d)).astype(np.float64)


def _seurat_v3(d, n_features, span=None):
    params = {} if span is None else {"span": span}
    return glfs.select(
        _counts(d), method="hvg_seurat_v3", n_features_to_select=n_features, counts=_counts(d), **params
    ).indices


@pytest.mark.parametrize("d", [1, 2, 3, 9])
def test_seurat_v3_on_too_few_genes_is_refused_with_the_minimum(in_child, d):
    out = in_child(_seurat_v3, d, 1)
    assert out[0] == "error", out  # was ("signal", 11) at 1-3 genes
    assert out[1] == "ValueError" and f"{d} of {d} genes vary across the cells" in out[2], out
    assert "needs at least 10" in out[2] and "span=0.3" in out[2], out


def test_the_minimum_follows_span(in_child):
    out = in_child(_seurat_v3, 9, 2, 0.5)  # ceil(3 / 0.5) = 6 genes suffice for the refusal rule
    assert not (out[0] == "error" and "vary across the cells" in out[2]), out
    assert out[0] != "signal", out


def _cell_ranger_on_equal_means(d):
    X = np.tile(np.log1p(np.arange(40.0))[:, None], (1, d))  # every gene the same: one mean, bin edges collide
    X[:, 0] += 0.01
    return glfs.select(X, method="hvg_cell_ranger", n_features_to_select=2).indices


def test_cell_ranger_binning_failure_is_explained(in_child):
    out = in_child(_cell_ranger_on_equal_means, 30)
    assert out[0] == "error" and out[1] == "ValueError", out
    assert out[2].startswith("hvg_cell_ranger: scanpy's 'cell_ranger' flavour cuts the 30 genes into bins"), out
    assert "n_bins" in out[2], out


def _cell_ranger_with_zero_genes(d, n_zero):
    X = np.log1p(_counts(d))
    X[:, :n_zero] = 0.0  # genes never seen in these cells (3,930 of 20,670 in a simulated bladder counterpart)
    return glfs.select(X, method="hvg_cell_ranger", n_features_to_select=2).indices


def test_cell_ranger_names_the_genes_that_are_zero_in_every_cell(in_child):
    """cell_ranger's bins are fixed percentiles of the means (scanpy ignores n_bins there): with a fifth of the genes
    at one mean the lowest edges coincide.  The message said 'pass fewer bins (n_bins)', which cannot help."""
    out = in_child(_cell_ranger_with_zero_genes, 100, 20)
    assert out[0] == "error" and out[1] == "ValueError", out
    assert "20 of the 100 genes (20%) are zero in every cell" in out[2], out
    assert "sc.pp.filter_genes(adata, min_cells=1)" in out[2] and "pass fewer bins" not in out[2], out
    assert in_child(_cell_ranger_with_zero_genes, 100, 5)[0] == "ok"  # a twentieth: the edges stay distinct
