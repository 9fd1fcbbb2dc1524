"""The workflow's ``.h5ad`` reader: the whole file bounded from its HDF5 metadata, links out of it refused.

``anndata.read_h5ad`` loads every element of the file (X, layers, obs, var, uns, obsm, varm, obsp, varp), not
only the matrix the workflow uses, and follows HDF5 external links to other files by path.  Before anything is
read, :func:`check_h5ad_file` walks the file's links without following them (h5py gives each dataset's shape and
dtype from the metadata, without reading it): an external link, a dataset stored in another file (HDF5 external
storage) or a virtual dataset is refused, since its bytes lie outside the input's checksum and provenance; and
the memory reading takes (every dataset as stored, a string :data:`BYTES_PER_STRING` bytes, plus the float64
copy of the matrix) is checked against the job's budget.  :func:`read_h5ad` then reads the file and refuses a
matrix that is not real numbers (complex, structured, strings) naming the file.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import DataError
from .memory import ParseBudget, h5ad_matrix_bytes

log = logging.getLogger(__name__)

#: Bytes a string of the file takes once read (a Python str and its pointer in an object array or index): 30
#: million gene names of 8-12 characters took 2.8 GB resident (issue 41, item 4), 93 bytes each.
BYTES_PER_STRING = 100

_GB = 2**30


def _walk(group, prefix: str = ""):
    """(path, h5py.Dataset) of every dataset under ``group``, following hard links only; DataError at a link
    out of the file (external link) or a dataset whose values live elsewhere (external storage, virtual)."""
    import h5py

    for name in group:
        path = f"{prefix}/{name}"
        link = group.get(name, getlink=True)
        if isinstance(link, h5py.ExternalLink):
            msg = (
                f"{path} is an HDF5 external link to {link.filename!r} (object {link.path!r}): data outside the "
                "file, its checksum and its provenance is not read; copy it into the file (h5py: "
                "f.copy or write the array) or remove the link"
            )
            raise DataError(msg)
        if isinstance(link, h5py.SoftLink):
            continue  # a name for an object of this file, counted where it is stored
        node = group.get(name)
        if isinstance(node, h5py.Group):
            yield from _walk(node, path)
        elif isinstance(node, h5py.Dataset):
            if node.external or node.is_virtual:
                kind = "stored in external files" if node.external else "a virtual dataset (its values in other files)"
                msg = f"{path} is {kind}: data outside the file, its checksum and its provenance is not read"
                raise DataError(msg)
            yield path, node


def _dataset_bytes(node) -> int:
    """Bytes a dataset takes once read, from its shape and dtype (strings: :data:`BYTES_PER_STRING` each)."""
    import h5py

    n = int(np.prod(node.shape, dtype=np.float64)) if node.shape is not None else 0
    if h5py.check_string_dtype(node.dtype) is not None or node.dtype.kind in "OSU":
        return n * (BYTES_PER_STRING + node.dtype.itemsize)
    return n * node.dtype.itemsize


def whole_file_bytes(path) -> tuple[int, str]:
    """(bytes reading every dataset of the file takes, the largest element named), from the metadata only."""
    import h5py

    total, top, top_bytes = 0, "", -1
    with h5py.File(path, "r") as f:
        for where, node in _walk(f):
            b = _dataset_bytes(node)
            total += b
            if b > top_bytes:
                top, top_bytes = f"{where} ({' x '.join(map(str, node.shape))} {node.dtype})", b
    return total, top


def check_h5ad_file(path: Path, layer: str | None, budget: ParseBudget | None) -> None:
    """DataError, before anything large is read, at a link out of the file or when the whole file takes more
    memory than the budget (module docstring)."""
    try:
        total, top = whole_file_bytes(path)
    except DataError as exc:
        msg = f"{path}: {exc}"
        raise DataError(msg) from None
    except Exception:  # noqa: BLE001 - any h5py failure: read_h5ad names the file
        return
    if budget is None or budget.memory_bytes is None:
        return
    size = h5ad_matrix_bytes(path, layer)
    where = "X" if layer is None else f"layers[{layer!r}]"
    if size is not None:  # the matrix alone: the message that names it
        try:
            budget.check_load(path, where, *size)
        except ValueError as exc:
            raise DataError(str(exc)) from None
    need = total + (size[0] if size is not None else 0)
    if need > budget.memory_bytes:
        msg = (
            f"{path}: reading the whole file (anndata reads every element, not only {where}) takes at least "
            f"{need / _GB:.2f} GB of memory as its metadata declares (every dataset as stored, {BYTES_PER_STRING} "
            f"bytes per string, and the float64 copy of {where}; the largest element: {top}), more than the "
            f"{budget.memory_bytes / _GB:.2f} GB of {budget.memory_from}; refused before reading. Give the job more "
            f"memory ({budget.memory_key}), or remove the elements the workflow does not use (uns, obsm, varm, ...)"
        )
        raise DataError(msg)


def _refuse_non_real(path, where: str, dtype) -> None:
    """DataError unless the matrix holds real numbers (integer, float or bool): no complex part dropped, no cast."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        msg = f"{path}: {where} holds complex values (dtype {dtype}); expected real numbers (store X.real or abs(X))"
        raise DataError(msg)
    if dtype.kind not in "biuf":
        msg = f"{path}: {where} must hold numbers; got dtype {dtype} (a structured, string or object array)"
        raise DataError(msg)


def _decoded(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with byte-string columns (HDF5 fixed-length ASCII strings) and categories read as text."""
    for col in frame.columns:
        s = frame[col]
        if isinstance(s.dtype, pd.CategoricalDtype):
            cats = s.cat.categories
            if len(cats) and all(isinstance(c, bytes) for c in cats):
                frame[col] = s.cat.rename_categories([c.decode("utf-8", "replace") for c in cats])
        elif s.dtype == object and len(s) and s.map(lambda v: isinstance(v, bytes)).any():
            frame[col] = s.map(lambda v: v.decode("utf-8", "replace") if isinstance(v, bytes) else v)
    return frame


def _matrix_of(a, path, layer):
    """X or ``layers[layer]`` of the AnnData ``a`` read from ``path``, checked: present, real, non-empty."""
    if layer is not None:
        if layer not in a.layers:
            msg = f"{path}: no layer {layer!r} (config key `layer`); its layers are {list(a.layers)}"
            raise DataError(msg)
        X = a.layers[layer]
    elif a.X is None:
        msg = (
            f"{path}: X is empty (None); name the layer that holds the expression with the dataset's "
            f"`layer` key (its layers are {list(a.layers)})"
        )
        raise DataError(msg)
    else:
        X = a.X
    if a.n_obs == 0 or a.n_vars == 0:
        msg = f"{path}: empty AnnData ({a.n_obs} obs x {a.n_vars} var)"
        raise DataError(msg)
    _refuse_non_real(path, "X" if layer is None else f"layers[{layer!r}]", X.dtype)
    return X


def _checked_sparse(X, path, layer):
    """A sparse X checked (index arrays) and canonical, before anything reads its indices."""
    from glfs.core import canonical, check_sparse_structure

    where = f"layers[{layer!r}]" if layer is not None else "X"
    try:
        check_sparse_structure(X, where)
    except ValueError as exc:
        msg = f"{path}: {exc}"
        raise DataError(msg) from None
    return canonical(X, f"{path}: {where}")


def read_h5ad(path: Path, layer: str | None = None, budget: ParseBudget | None = None):
    """The :class:`~glfs_workflow.readers.Matrix` of an ``.h5ad`` file (X, or ``layers[layer]``), the file first
    checked from its metadata (:func:`check_h5ad_file`)."""
    import anndata as ad
    import scipy.sparse as sp

    from .readers import Matrix, _check_unique

    check_h5ad_file(path, layer, budget)
    try:
        a = ad.read_h5ad(path)
    except Exception as exc:  # noqa: BLE001 - h5py raises many types
        msg = f"{path}: cannot read as .h5ad ({type(exc).__name__}: {exc})"
        raise DataError(msg) from None
    X = _matrix_of(a, path, layer)
    if sp.issparse(X):
        X = _checked_sparse(X, path, layer)
    # a sparse X stays sparse (CSR float64: the values of the former dense copy, 12 bytes per non-zero)
    X = sp.csr_matrix(X, dtype=np.float64) if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    samples, genes = [str(s) for s in a.obs_names], [str(g) for g in a.var_names]
    _check_unique(samples, path, "sample", "obs_names")
    _check_unique(genes, path, "gene", "var_names")
    nonfinite = ~np.isfinite(X.data if sp.issparse(X) else X)
    if nonfinite.any():
        if sp.issparse(X):
            t = int(np.flatnonzero(nonfinite)[0])
            i, j, value = int(np.searchsorted(X.indptr, t, side="right") - 1), int(X.indices[t]), X.data[t]
        else:
            i, j = np.argwhere(nonfinite)[0]
            value = X[i, j]
        msg = (
            f"{path}: non-finite value {value} in X at obs {samples[i]!r} (row {i}), var {genes[j]!r} (column {j}); "
            f"expected finite numbers ({int(nonfinite.sum())} cells)"
        )
        raise DataError(msg)
    var = _decoded(a.var.copy())
    var.index = pd.Index(genes)
    if "gene_id" in var.columns:  # the file's own gene ids (e.g. Ensembl ids beside symbols) are kept as they are
        log.info("%s: var column 'gene_id' kept as the file has it (var_names are the genes' names)", path)
    else:
        var.insert(0, "gene_id", genes)
    obs = _decoded(a.obs.copy())
    obs.index = pd.Index(samples)
    return Matrix(X, samples, genes, var, obs)
