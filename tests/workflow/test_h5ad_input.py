"""The workflow's .h5ad reader on files as they really arrive (issue 41, items 3, 4, 6, 7, 20, 21).

Each file is a small valid AnnData changed with h5py the way a careless or hostile producer would: an element
that declares far more memory than the file holds (a compressed dataset never written reads as its fill value),
an HDF5 external link to another file, complex or structured values, a var column ``gene_id``, obs labels stored
as fixed-length ASCII strings.  The expected outcome is stated independently: the declared sizes come from the
shapes written here, the labels from the strings written here."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from glfs_workflow.errors import DataError
from glfs_workflow.memory import rss_bytes
from glfs_workflow.readers import read_matrix

ad = pytest.importorskip("anndata")
h5py = pytest.importorskip("h5py")

N, D = 30, 12


def _adata():
    rng = np.random.default_rng(0)
    a = ad.AnnData(rng.poisson(2.0, size=(N, D)).astype(np.float32))
    a.obs_names = [f"s{i}" for i in range(N)]
    a.var_names = [f"g{j}" for j in range(D)]
    return a


def _write(path, a=None):
    (a if a is not None else _adata()).write_h5ad(path)
    return path


def _mem_mb(extra_mb: float) -> float:
    """A job memory of ``extra_mb`` MB above what this process already holds."""
    return rss_bytes() / 2**20 + extra_mb


def _declare(f, where: str, shape, dtype=np.float64):
    """A compressed dataset never written: a few bytes on disk, its whole shape in memory once read."""
    ds = f.create_dataset(where, shape=shape, dtype=dtype, chunks=True, compression="gzip")
    ds.attrs["encoding-type"] = "array"
    ds.attrs["encoding-version"] = "0.2.0"
    return ds


@pytest.mark.parametrize(
    ("where", "shape"),
    [("uns/big", (40 * 2**20,)), ("obsm/big", (N, 2**20 + 2**19)), ("varm/big", (D, 4 * 2**20))],
)
def test_an_element_beyond_x_declaring_more_memory_than_the_job_has_is_refused(tmp_path, where, shape):
    path = _write(tmp_path / "a.h5ad")
    with h5py.File(path, "r+") as f:
        _declare(f, where, shape)
    assert path.stat().st_size < 2**20  # the file is small; its declared element is 300 MB or more
    with pytest.raises(DataError, match=r"whole file") as e:
        read_matrix(path, mem_mb=_mem_mb(150))
    assert str(path) in str(e.value) and where in str(e.value)


def test_many_strings_are_counted_at_their_memory_not_their_pointer(tmp_path):
    from glfs_workflow.h5ad import BYTES_PER_STRING, whole_file_bytes

    path = _write(tmp_path / "a.h5ad")
    with h5py.File(path, "r+") as f:
        ds = f.create_dataset("uns/names", shape=(10**6,), dtype=h5py.string_dtype(), chunks=True, compression="gzip")
        ds.attrs["encoding-type"] = "string-array"
        ds.attrs["encoding-version"] = "0.2.0"
    total, _ = whole_file_bytes(path)
    assert total >= 10**6 * BYTES_PER_STRING


def test_a_layer_file_is_bounded_whole_as_well(tmp_path):
    """With ``layer:`` set, X (and every other element) is read too: counted."""
    a = _adata()
    a.layers["counts"] = a.X.copy()
    path = _write(tmp_path / "a.h5ad", a)
    with h5py.File(path, "r+") as f:
        _declare(f, "uns/big", (40 * 2**20,))
    with pytest.raises(DataError, match=r"whole file.*layers\['counts'\]"):
        read_matrix(path, layer="counts", mem_mb=_mem_mb(150))


def test_a_small_file_within_the_budget_is_read(tmp_path):
    path = _write(tmp_path / "a.h5ad")
    m = read_matrix(path, mem_mb=_mem_mb(150))
    np.testing.assert_array_equal(m.X, _adata().X.astype(np.float64))


def test_an_external_link_is_refused_naming_the_file_and_the_link(tmp_path):
    other = tmp_path / "elsewhere.h5"
    with h5py.File(other, "w") as g:
        ds = g.create_dataset("arr", data=np.arange(5.0))
        ds.attrs["encoding-type"] = "array"
        ds.attrs["encoding-version"] = "0.2.0"
    path = _write(tmp_path / "a.h5ad")
    with h5py.File(path, "r+") as f:
        f["uns/outside"] = h5py.ExternalLink(str(other), "/arr")
    with h5py.File(path, "r") as f:  # the premise: h5py (and so anndata) follows the link
        np.testing.assert_array_equal(f["uns/outside"][()], np.arange(5.0))
    with pytest.raises(DataError, match="external link") as e:
        read_matrix(path)
    assert str(path) in str(e.value) and "uns/outside" in str(e.value) and "elsewhere.h5" in str(e.value)


@pytest.mark.parametrize("sparse", [False, True])
def test_complex_x_is_refused_not_cast_to_its_real_part(tmp_path, sparse):
    a = _adata()
    Xc = a.X.astype(np.complex128) + 1j
    a = ad.AnnData(sp.csr_matrix(Xc) if sparse else Xc, obs=a.obs, var=a.var)
    path = _write(tmp_path / "a.h5ad", a)
    with pytest.raises(DataError, match="complex") as e:
        read_matrix(path)
    assert str(path) in str(e.value)


def test_structured_x_is_refused_naming_the_file(tmp_path):
    path = _write(tmp_path / "a.h5ad")
    with h5py.File(path, "r+") as f:
        del f["X"]
        rec = np.zeros((N, D), dtype=[("a", "f8"), ("b", "i4")])
        ds = f.create_dataset("X", data=rec)
        ds.attrs["encoding-type"] = "array"
        ds.attrs["encoding-version"] = "0.2.0"
    with pytest.raises(DataError, match="must hold numbers") as e:
        read_matrix(path)
    assert str(path) in str(e.value)


def test_a_var_gene_id_column_is_kept(tmp_path):
    a = _adata()
    ensembl = [f"ENSG{j:011d}" for j in range(D)]
    a.var["gene_id"] = ensembl
    m = read_matrix(_write(tmp_path / "a.h5ad", a))
    assert m.var["gene_id"].tolist() == ensembl and m.genes == [f"g{j}" for j in range(D)]


def test_ascii_string_labels_are_read_as_text(tmp_path):
    path = _write(tmp_path / "a.h5ad")
    labels = np.array([b"a", b"b"] * (N // 2), dtype="S1")  # HDF5 fixed-length ASCII strings
    with h5py.File(path, "r+") as f:
        ds = f.create_dataset("obs/kind", data=labels)
        ds.attrs["encoding-type"] = "array"
        ds.attrs["encoding-version"] = "0.2.0"
        order = list(f["obs"].attrs["column-order"])
        f["obs"].attrs["column-order"] = np.array([*order, "kind"], dtype=object)
    m = read_matrix(path)
    assert m.obs["kind"].tolist() == ["a", "b"] * (N // 2)
