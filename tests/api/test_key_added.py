"""key_added over existing var columns (issue 30, item 7): one rule with mark_highly_variable -- a column
glfs did not write under that key is replaced with a warning that names it and what it held; a rerun with
the same key replaces its own columns without a word."""

import warnings

import numpy as np
import pytest

import glfs

ad = pytest.importorskip("anndata")


def _adata():
    rng = np.random.default_rng(0)
    a = ad.AnnData(rng.normal(size=(40, 8)))
    a.var["gene_ids"] = [f"ENSG{j:04d}" for j in range(8)]
    a.var["highly_variable"] = np.arange(8) < 3
    return a


@pytest.mark.parametrize(
    ("key", "said"),
    [
        ("gene_ids", r"var\['gene_ids'\] \(object, e.g. 'ENSG0000'\)"),
        ("highly_variable", r"var\['highly_variable'\] \(3 genes marked\)"),
    ],
)
def test_key_added_over_a_user_column_warns_naming_it(key, said):
    a = _adata()
    with pytest.warns(UserWarning, match=said + rf" is replaced by the 'variance' selection \(key_added='{key}'\)"):
        glfs.tl.select(a, method="variance", n_top_genes=2, key_added=key)
    assert a.var[key].dtype == bool and a.var[key].sum() == 2


def test_mark_highly_variable_says_the_same():
    a = _adata()
    with pytest.warns(
        UserWarning,
        match=r"var\['highly_variable'\] \(3 genes marked\) is replaced by the 'variance' selection \(mark_highly_variable=True\)",
    ):
        glfs.tl.select(a, method="variance", n_top_genes=2, mark_highly_variable=True)


def test_a_rerun_with_the_same_key_replaces_its_own_columns_quietly():
    a = _adata()
    glfs.tl.select(a, method="variance", n_top_genes=2, key_added="v")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        glfs.tl.select(a, method="variance", n_top_genes=3, key_added="v")
    assert a.var["v"].sum() == 3 and list(a.var["gene_ids"][:2]) == ["ENSG0000", "ENSG0001"]
