"""Issue 30 item 8: a text matrix is refused before parsing when parsing it would take more memory
than the job has, and fetch.max_expanded_gb reaches the reader (glfs_workflow.memory)."""

import gzip
import re

import numpy as np
import pandas as pd
import pytest

from glfs_workflow import datasets, memory, readers

MB = 2**20


def _counts_text(n_genes, n_samples, seed=0):
    rng = np.random.default_rng(seed)
    head = "gene\t" + "\t".join(f"S{j}" for j in range(n_samples)) + "\n"
    rows = (f"G{i}\t" + "\t".join(map(str, r)) + "\n" for i, r in enumerate(rng.poisson(3.0, (n_genes, n_samples))))
    return head + "".join(rows)


@pytest.fixture
def no_parsing(monkeypatch):
    """pandas' parser fails the test if it is reached (the refusal must come before parsing)."""

    def parsed(*args, **kwargs):
        raise AssertionError("the text was parsed")

    monkeypatch.setattr(readers.pd, "read_csv", parsed)


def _cfg():
    return {"format": "tsv", "orientation": "genes_by_samples", "preprocess": "none"}


def test_configured_max_expanded_gb_refuses_a_gzip_matrix_before_parsing(tmp_path, no_parsing):
    text = _counts_text(400, 20)
    path = tmp_path / "m.tsv.gz"
    path.write_bytes(gzip.compress(text.encode()))
    cap_gb = 4096 / 2**30  # 4,096 bytes, far below the text
    assert len(text) > 4096
    with pytest.raises(
        readers.DataError,
        match=r"m\.tsv\.gz: gzip-compressed text expands to more than 4096 bytes "
        r"\(the limit, fetch\.max_expanded_gb\); stopped there.* raise fetch\.max_expanded_gb or store the matrix as \.h5ad",
    ):
        datasets.prepare_dataset("d", _cfg(), {"expression": path}, max_expanded_gb=cap_gb)


def test_the_same_matrix_is_read_under_a_cap_it_fits(tmp_path):
    text = _counts_text(400, 20)
    path = tmp_path / "m.tsv.gz"
    path.write_bytes(gzip.compress(text.encode()))
    a = datasets.prepare_dataset("d", _cfg(), {"expression": path}, max_expanded_gb=2 * len(text) / 2**30, mem_mb=4000)
    expected = pd.read_csv(path, sep="\t", index_col=0).to_numpy(dtype=float).T
    np.testing.assert_array_equal(a.X, expected)


def test_memory_for_parsing_is_the_jobs_mem_mb_less_what_the_process_holds(monkeypatch):
    monkeypatch.setattr(memory, "rss_bytes", lambda: 10 * MB)
    have, where = memory.job_memory_bytes(100)
    assert have == 90 * MB
    assert "mem_mb = 100" in where
    assert memory.text_cap(have) == 90 * MB // 13  # 13 bytes of memory per byte of text, measured
    assert memory.parse_estimate(1000, 200) == 13 * 1000 + 22 * 200
    monkeypatch.setattr(memory, "rss_bytes", lambda: 200 * MB)
    assert memory.job_memory_bytes(100)[0] == 0  # nothing left for the reading


def test_a_plain_matrix_larger_than_the_memory_allows_is_refused_by_its_size(tmp_path, monkeypatch, no_parsing):
    monkeypatch.setattr(memory, "rss_bytes", lambda: 0)
    text = _counts_text(20_000, 5)  # about 240 kB of text: more than 1 MB / 13
    path = tmp_path / "m.tsv"
    path.write_text(text)
    assert len(text) > MB // 13
    with pytest.raises(
        readers.DataError,
        match=rf"m\.tsv: reading this text matrix \({len(text)} bytes of text\) would take at least "
        r"[0-9.]+ GB .* more than the 0\.00 GB of the job's memory \(mem_mb = 1,.*refused before parsing. "
        r"Give the job more memory \(resources\.prepare\.mem_mb .*\), or convert the matrix to \.h5ad",
    ):
        datasets.prepare_dataset("d", _cfg(), {"expression": path}, mem_mb=1)


def test_many_small_values_are_counted_before_parsing(tmp_path, monkeypatch, no_parsing):
    monkeypatch.setattr(memory, "rss_bytes", lambda: 0)
    text = _counts_text(2_000, 20)  # about 2 bytes a value: within the text cap, not with its values
    n_values = text.count("\t") + text.count("\n") + 1
    mem = 13 * len(text) + 22 * n_values - 1  # one byte short of the estimate written out
    path = tmp_path / "m.tsv.gz"
    path.write_bytes(gzip.compress(text.encode()))
    assert len(text) <= mem // 13
    with pytest.raises(
        readers.DataError,
        match=rf"m\.tsv\.gz: reading this text matrix \({len(text)} bytes of text, {n_values} values\)",
    ):
        readers.read_matrix(path, mem_mb=mem / MB)


def test_a_gzip_matrix_is_streamed_only_up_to_the_memory_cap(tmp_path, monkeypatch, no_parsing):
    monkeypatch.setattr(memory, "rss_bytes", lambda: 0)
    body = b"gene\tS0\tS1\n" + b"G0\t1\t2\n" * (1 << 19)  # 4 MB of text, compressed to a few kB
    path = tmp_path / "m.tsv.gz"
    path.write_bytes(gzip.compress(body))
    with pytest.raises(
        readers.DataError,
        match=r"m\.tsv\.gz: reading this text matrix \(more than 80659 bytes of text \(stopped there\)\)",
    ):
        readers.read_matrix(path, mem_mb=1, keys={"memory": "more memory"})


def _huge_declared_h5ad(path, n=30_000, d=40_000):
    """A valid small .h5ad, then its X replaced by a compressed dense n x d float32 dataset never written
    (h5py stores no chunk of it: a file of kilobytes that loads as n * d * 4 bytes)."""
    import anndata as ad
    import h5py

    ad.AnnData(np.zeros((3, 2), np.float32)).write_h5ad(path)
    with h5py.File(path, "r+") as f:
        attrs = dict(f["X"].attrs)
        del f["X"]
        X = f.create_dataset("X", shape=(n, d), dtype="float32", chunks=(1000, 1000), compression="gzip")
        X.attrs.update(attrs)


def test_a_dense_x_declared_huge_in_a_small_h5ad_is_refused_before_reading(tmp_path, monkeypatch):
    import anndata as ad

    path = tmp_path / "huge.h5ad"
    _huge_declared_h5ad(path)
    assert path.stat().st_size < 1_000_000

    def no_read(*args, **kwargs):
        raise AssertionError("the file was read")

    monkeypatch.setattr(ad, "read_h5ad", no_read)
    monkeypatch.setattr(memory, "rss_bytes", lambda: 0)
    need = 30_000 * 40_000 * (4 + 8) / 2**30  # float32 as stored + the float64 copy
    with pytest.raises(
        readers.DataError,
        match=rf"huge\.h5ad: X is a dense 30000 x 40000 float32 matrix: reading it takes at least "
        rf"{need:.2f} GB of memory .* more than the 3\.91 GB of the job's memory \(mem_mb = 4000.*refused before reading. "
        r"Give the job more memory \(resources\.prepare\.mem_mb",
    ):
        datasets.prepare_dataset("d", {"format": "h5ad"}, {"expression": path}, mem_mb=4000)


def test_h5ad_size_from_metadata_matches_what_it_loads(tmp_path):
    import anndata as ad
    import scipy.sparse as sp

    X = sp.random(50, 40, density=0.1, format="csr", dtype=np.float32, random_state=0)
    ad.AnnData(X).write_h5ad(tmp_path / "s.h5ad")
    ad.AnnData(X.toarray()).write_h5ad(tmp_path / "d.h5ad")
    assert memory.h5ad_matrix_bytes(tmp_path / "s.h5ad") == (
        X.nnz * (4 + 4 + 12),
        f"a sparse 50 x 40 matrix with {X.nnz} stored values",
    )
    assert memory.h5ad_matrix_bytes(tmp_path / "d.h5ad") == (50 * 40 * (4 + 8), "a dense 50 x 40 float32 matrix")
    assert memory.h5ad_matrix_bytes(tmp_path / "d.h5ad", layer="none") is None  # the reader names a missing layer
    m = readers.read_matrix(tmp_path / "d.h5ad", mem_mb=4000)
    np.testing.assert_array_equal(m.X, X.toarray())


def test_an_h5ad_is_not_written_to_a_disk_without_room_for_it(tmp_path, monkeypatch):
    """Issue 30 (low): h5py's failure on a full disk ends the process with SIGSEGV when the failed write's
    objects are freed (h5py 3.16, HDF5 2.0; earlier builds printed ~700 lines of HDF5 errors); too little
    space is now refused before the write, in one line."""
    import collections

    import anndata as ad
    import scipy.sparse as sp

    from glfs_workflow import files

    X = sp.random(300, 200, density=0.1, format="csr", random_state=0)
    a = ad.AnnData(X, layers={"counts": X.astype(np.float32)})
    a.obs["batch"] = ["b0", "b1", "b2"] * 100
    files.write_h5ad_atomic(a, tmp_path / "ok.h5ad")  # (anndata makes obs["batch"] categorical here)
    need = int(1.05 * files.h5ad_bytes(a)) + 2**20
    assert (tmp_path / "ok.h5ad").stat().st_size <= need  # the estimate covers what is written

    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(files.shutil, "disk_usage", lambda p: usage(10**9, 10**9 - (need - 1), need - 1))

    def no_write(*args, **kwargs):
        raise AssertionError("written")

    monkeypatch.setattr(ad.AnnData, "write_h5ad", no_write)
    with pytest.raises(
        files.DiskFullError,
        match=rf"no space left on device while writing {re.escape(str(tmp_path / 'out' / 'x.h5ad'))} "
        rf"\(about {need} bytes needed, {need - 1} free; refused before writing\)",
    ):
        files.write_h5ad_atomic(a, tmp_path / "out" / "x.h5ad")
    assert list((tmp_path / "out").iterdir()) == []
