"""What parsing a text matrix costs in memory, and the memory a job has (issue 30, item 8).

A text matrix is parsed by pandas into a table of strings before its values
become float64; the peak is many times the text's size.  Measured
(``read_matrix`` on gzip'd tab-separated
matrices in a fresh process each; peak RSS less the RSS after the imports;
studies/size-limits.md): 1,071 MB for 68 MB of log-expression
text with 4 decimals (9.6 million values, 16.5 bytes per byte of text) and
1,585 MB for 67 MB of single-cell counts (33.5 million values, mostly ``0``;
24.7 per byte).  The two fit ``13 bytes per byte of text + 22 per value``
(:data:`PARSE_BYTES_PER_TEXT_BYTE`, :data:`PARSE_BYTES_PER_VALUE`, rounded up),
which :func:`parse_estimate` uses to refuse a matrix before pandas sees it.
"""

from __future__ import annotations

import os

import numpy as np

#: Peak bytes of parsing a text matrix per byte of its (expanded) text, and per value (module docstring).
PARSE_BYTES_PER_TEXT_BYTE = 13
PARSE_BYTES_PER_VALUE = 22

#: Memory (MB per million values) a prepare job asks for a text matrix of its size_hint: the estimate
#: at 10 bytes of text per value (a value with 6 significant digits and its separator; 4-decimal
#: log-expression takes 7, single-cell counts 2), 13 * 10 + 22 bytes per value (workflow/rules/common.smk).
TEXT_MB_PER_MCELL = PARSE_BYTES_PER_TEXT_BYTE * 10 + PARSE_BYTES_PER_VALUE

_GB = 2**30


def _proc_kib(path: str, field: str) -> int | None:
    """The value in bytes of a ``field:  N kB`` line of a /proc file, or None where it cannot be read."""
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def available_memory_bytes() -> int | None:
    """The machine's available memory (``MemAvailable`` of /proc/meminfo), or None where it is not known."""
    avail = _proc_kib("/proc/meminfo", "MemAvailable")
    if avail is not None:
        return avail
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def rss_bytes() -> int:
    """This process's resident memory (``VmRSS``), 0 where it is not known."""
    return _proc_kib("/proc/self/status", "VmRSS") or 0


def job_memory_bytes(mem_mb=None) -> tuple[int | None, str]:
    """(bytes the reading may use, where that figure comes from).

    ``mem_mb`` (a job's ``resources: mem_mb``): that much less what the
    process already holds; None: the machine's available memory.
    """
    if mem_mb is not None:
        return max(
            0, int(float(mem_mb) * 2**20) - rss_bytes()
        ), f"the job's memory (mem_mb = {float(mem_mb):g}, less the {rss_bytes() / _GB:.2f} GB the process holds)"
    return available_memory_bytes(), "the machine's available memory (MemAvailable)"


def parse_estimate(text_bytes: int, n_values: int) -> int:
    """Peak bytes of parsing a text matrix of ``text_bytes`` bytes holding ``n_values`` values."""
    return PARSE_BYTES_PER_TEXT_BYTE * int(text_bytes) + PARSE_BYTES_PER_VALUE * int(n_values)


def text_cap(memory_bytes: int | None) -> int | None:
    """The most text that can be parsed in ``memory_bytes`` (whatever its values); None = no cap."""
    return None if memory_bytes is None else memory_bytes // PARSE_BYTES_PER_TEXT_BYTE


def count_values(data: bytes, sep: bytes) -> int:
    """Values of a text table (separators + line ends, an upper bound of its cells), counted in its bytes."""
    return data.count(sep) + data.count(b"\n") + 1


class ParseBudget:
    """The memory a text matrix may take while it is parsed, and the refusal when it would take more.

    Parameters
    ----------
    memory_bytes, memory_from : what :func:`job_memory_bytes` gives (None bytes: no memory check).
    memory_key : how to give the reading more memory (named in the refusal), e.g. a config key.
    sep : the table's separator (to count its values).
    """

    def __init__(self, memory_bytes: int | None, memory_from: str, memory_key: str, sep: str):
        self.memory_bytes, self.memory_from, self.memory_key, self.sep = (
            memory_bytes,
            memory_from,
            memory_key,
            sep.encode(),
        )

    def cap(self) -> int | None:
        """Most bytes of text that may be read (held before parsing)."""
        return text_cap(self.memory_bytes)

    def refusal(self, path, text_bytes: int, n_values: int | None = None, *, stopped: bool = False) -> str:
        """The message: the estimate, the memory there is, where it comes from and the ways out."""
        size = f"more than {text_bytes} bytes of text (stopped there)" if stopped else f"{text_bytes} bytes of text"
        need = parse_estimate(text_bytes, n_values or 0)
        values = f", {n_values} values" if n_values is not None else ""
        return (
            f"{path}: reading this text matrix ({size}{values}) would take at least {need / _GB:.2f} GB of memory "
            f"while it is parsed ({PARSE_BYTES_PER_TEXT_BYTE} bytes per byte of text + {PARSE_BYTES_PER_VALUE} per value, "
            f"measured: docs/guides/data.md), more than the {self.memory_bytes / _GB:.2f} GB of {self.memory_from}; refused before "
            f"parsing. Give the job more memory ({self.memory_key}), or convert the matrix to .h5ad (read without parsing "
            "text: anndata.AnnData(X).write_h5ad)"
        )

    def check_load(self, path, where: str, need: int, what: str) -> None:
        """ValueError when reading a stored matrix (``where`` of ``path``, ``what`` it is) takes more than the memory there is."""
        if self.memory_bytes is not None and need > self.memory_bytes:
            msg = (
                f"{path}: {where} is {what}: reading it takes at least {need / _GB:.2f} GB of memory (its values as "
                f"stored and as float64), more than the {self.memory_bytes / _GB:.2f} GB of {self.memory_from}; refused "
                f"before reading. Give the job more memory ({self.memory_key}), or store the matrix sparse "
                "(scipy.sparse.csr_matrix) if it is mostly zeros"
            )
            raise ValueError(msg)

    def check(self, path, data: bytes) -> None:
        """ValueError when parsing ``data`` (a table's bytes) would take more than the memory there is."""
        if self.memory_bytes is None:
            return
        n_values = count_values(data, self.sep)
        if parse_estimate(len(data), n_values) > self.memory_bytes:
            raise ValueError(self.refusal(path, len(data), n_values))


def h5ad_matrix_bytes(path, layer: str | None = None) -> tuple[int, str] | None:
    """(bytes reading the file's X, or ``layers[layer]``, takes as float64 at least, what it is), from the
    file's metadata without reading the values; None when the metadata cannot tell (the reader then
    reports the file as it is).  A compressed file may declare far more than it holds on disk."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            node = f["X" if layer is None else f"layers/{layer}"]
            if isinstance(node, h5py.Dataset):
                n_cells = int(np.prod(node.shape, dtype=np.float64))
                item = node.dtype.itemsize
                shape = " x ".join(map(str, node.shape))
                return n_cells * (item + (8 if node.dtype != np.float64 else 0)), f"a dense {shape} {node.dtype} matrix"
            nnz = int(node["data"].shape[0])
            shape = " x ".join(str(int(s)) for s in node.attrs["shape"])
            stored = node["data"].dtype.itemsize + node["indices"].dtype.itemsize
            return nnz * (stored + 12), f"a sparse {shape} matrix with {nnz} stored values"
    except Exception:  # noqa: BLE001 - any h5py failure: the reader names the file
        return None
