"""A simulated atlas stored as a user stores one too large for a node: shards of cells, each by genes.

Atlases are published as many files of cells (a sample, donor or study each), and one that is scored
by genes is best kept by genes (docs/guides/atlases.md, "Atlas scale": a CSC file is read once per pass).
So the store here is a directory of ``.h5ad`` shards of ``shard`` cells each, every shard's X the
log-normalised counts (total 1e4 + log1p, float32) written as **CSC** by anndata.  Read lazily
(:func:`open_store`: ``anndata.experimental.read_elem_lazy(f["X"], chunks=(-1, gene_chunk))`` per
shard, ``dask.array.concatenate`` over the shards), X is a dask array of 2-D sparse tiles (cells of
one shard x ``gene_chunk`` genes): a gene block of all cells is the tiles of its column, so the
scores need no all-to-all exchange of the matrix, and a block of cells (the PCA's projection) is the
tiles of its row.

The cells are :func:`bench.simulated.simulate_atlas`'s (the same 10 groups and gene proportions from
``seed``, log-normal library sizes around exp(``lib_loc``)); each shard draws its cells' groups,
library sizes and reads from its own seeded stream (``[seed, shard]``), so shards can be written in
any order or in parallel and a store is the same whatever wrote it.  The raw counts are not kept.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from bench.simulated import ATLAS_BLOCK, ATLAS_GROUPS, atlas_block, atlas_model


def store_dir(root: Path, n_cells: int, n_genes: int, lib_loc: float) -> Path:
    return Path(root) / f"atlas_{n_cells}x{n_genes}_{lib_loc:g}"


def shard_bounds(n_cells: int, shard: int):
    return [(a, min(n_cells, a + shard)) for a in range(0, n_cells, shard)]


def write_shard(path: Path, s: int, a: int, b: int, n_genes: int, lib_loc: float, seed: int = 0) -> int:
    """Cells a..b-1 (shard number ``s``) as a CSC .h5ad at ``path``; returns its stored values."""
    import anndata as ad
    import pandas as pd
    import scipy.sparse as sp

    _, cdfs = atlas_model(n_genes, seed)
    rng = np.random.default_rng([seed, s])
    n = b - a
    groups = rng.integers(0, ATLAS_GROUPS, n)
    lib = np.maximum(1, np.round(np.exp(rng.normal(lib_loc, 0.4, n)))).astype(np.int64)
    blocks = []
    for b0 in range(0, n, ATLAS_BLOCK):
        cells = np.arange(b0, min(n, b0 + ATLAS_BLOCK))
        _, L = atlas_block(rng, groups[cells], lib[cells], cdfs, n_genes)
        blocks.append(L.tocsc())  # each block by genes first: the stack below is then one CSC copy
    X = sp.vstack(blocks, format="csc")
    del blocks
    obs = pd.DataFrame({"group": pd.Categorical(groups.astype(str))}, index=[f"c{i}" for i in range(a, b)])
    var = pd.DataFrame(index=[f"g{j}" for j in range(n_genes)])
    tmp = path.with_suffix(".part")
    ad.AnnData(X=X, obs=obs, var=var).write_h5ad(tmp)
    tmp.rename(path)
    return int(X.nnz)


def write_store(
    root: Path, n_cells: int, n_genes: int, lib_loc: float, shard: int, seed: int = 0, part: tuple[int, int] = (0, 1)
) -> dict:
    """Write the shards not yet written (those of ``part`` = (i, k): every k-th from i); the store's facts."""
    out = store_dir(root, n_cells, n_genes, lib_loc)
    out.mkdir(parents=True, exist_ok=True)
    bounds = shard_bounds(n_cells, shard)
    t0 = time.perf_counter()
    for s, (a, b) in enumerate(bounds):
        f = out / f"shard_{s:04d}.h5ad"
        if s % part[1] != part[0] or f.exists():
            continue
        t1 = time.perf_counter()
        nnz = write_shard(f, s, a, b, n_genes, lib_loc, seed)
        (out / f"shard_{s:04d}.json").write_text(
            json.dumps({"cells": b - a, "nnz": nnz, "seconds": round(time.perf_counter() - t1, 1)})
        )
    return {"dir": str(out), "seconds": time.perf_counter() - t0, **store_facts(out)}


def store_facts(out: Path) -> dict:
    """Cells, stored values, shards and the summed writing seconds of the shards written so far."""
    facts = [json.loads(p.read_text()) for p in sorted(Path(out).glob("shard_*.json"))]
    return {
        "shards": len(facts),
        "n_cells": sum(f["cells"] for f in facts),
        "nnz": sum(f["nnz"] for f in facts),
        "write_s": round(sum(f["seconds"] for f in facts), 1),
    }


def open_store(out: Path, gene_chunk: int):
    """The store as one lazy dask array (n_cells, n_genes) of CSC tiles (shard x ``gene_chunk`` genes).

    Each shard read by ``anndata.experimental.read_elem_lazy`` (the file is opened by the task that
    reads a tile), concatenated over the cells by ``dask.array.concatenate``.
    """
    import anndata as ad
    import dask.array as da
    import h5py

    parts = [
        ad.experimental.read_elem_lazy(h5py.File(p, "r")["X"], chunks=(-1, gene_chunk))
        for p in sorted(Path(out).glob("shard_*.h5ad"))
    ]
    return da.concatenate(parts, axis=0)


def shard_groups(out: Path) -> np.ndarray:
    """The simulated group of every cell, in the store's order (from each shard's obs)."""
    import anndata as ad
    import h5py

    groups = []
    for p in sorted(Path(out).glob("shard_*.h5ad")):
        with h5py.File(p, "r") as f:
            groups.append(np.asarray(ad.io.read_elem(f["obs"])["group"].astype(int)))
    return np.concatenate(groups)
