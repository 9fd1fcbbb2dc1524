"""The out-of-core routes against in memory: the same X read from memory, from a backed ``.h5ad``
(``anndata.read_h5ad(f, backed="r").X``), as a dask array streamed through this process, and as a dask
array in row chunks on a ``dask.distributed.LocalCluster`` of small workers.

Timed on each route: the Laplacian score on a given graph and the library's own graph on 20 principal
components.  ``peakmem_*`` is this process' peak (on the cluster route, the client and the scheduler;
the workers' memory is theirs).  Data: ``common.dataset`` at the profile's ``ooc_cells`` x
``ooc_genes``, written once to an ``.h5ad`` file in asv's cache directory by ``setup_cache``.
"""

from __future__ import annotations

from pathlib import Path

import glfs

from .common import N_NEIGHBORS, PROFILE, SEED, SIZES, TIMEOUT, dataset, warm_up

#: The cluster route's workers: processes of one thread and little memory each.
N_WORKERS = 2
WORKER_MEMORY = {"fast": "1GiB", "regular": "2GiB", "large": "3GiB"}[PROFILE]
#: Principal components of the own graph (the library's default for an out-of-core X).
N_PCS = 20
#: The dask array's chunks: this many tiles along the cells and along the genes (the cluster route: row
#: chunks of all genes).
CELL_TILES = 2
GENE_TILES = 4


def _dask_array(X, rows_only=False):
    """X (in memory, sparse) as a dask array of sparse tiles, as a user wraps a matrix in dask; ``rows_only``:
    row chunks of all genes, as ``anndata.experimental.read_elem_lazy(f["X"], chunks=(rows, -1))`` gives them."""
    import dask.array as da

    n, d = X.shape
    genes = d if rows_only else -(-d // GENE_TILES)
    return da.from_array(X, chunks=(-(-n // CELL_TILES), genes), asarray=False)


def _local_cluster():
    """(cluster, client): the cluster route's workers, processes of one thread and little memory each."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=N_WORKERS, threads_per_worker=1, processes=True, memory_limit=WORKER_MEMORY, dashboard_address=":0"
    )
    return cluster, Client(cluster)


class Routes:
    """One X, four ways to read it."""

    params = ["in_memory", "backed", "dask", "local_cluster"]
    param_names = ["route"]
    timeout = TIMEOUT

    def setup_cache(self):
        import anndata

        _, X = dataset(SIZES["ooc_cells"], SIZES["ooc_genes"])
        path = Path("out_of_core.h5ad").resolve()  # asv runs the suite in the cache's directory
        anndata.AnnData(X).write_h5ad(path)
        return {"path": str(path), "W": glfs.similarity_graph(X, n_neighbors=N_NEIGHBORS, random_state=SEED)}

    def setup(self, data, route):
        import anndata

        warm_up()
        self.W = data["W"]
        self.adata = self.client = self.cluster = None
        if route == "backed":
            self.adata = anndata.read_h5ad(data["path"], backed="r")
            self.X = self.adata.X
            return
        X = anndata.read_h5ad(data["path"]).X
        # on the cluster, row chunks: the layout a lazily read CSR .h5ad has (its gene blocks cut where read)
        self.X = X if route == "in_memory" else _dask_array(X, rows_only=route == "local_cluster")
        if route == "local_cluster":
            self.cluster, self.client = _local_cluster()

    def teardown(self, data, route):
        if self.client is not None:
            self.client.close()
            self.cluster.close()
        if self.adata is not None:
            self.adata.file.close()

    def time_laplacian_score(self, data, route):
        glfs.laplacian_score(self.X, self.W, client=self.client)

    def peakmem_laplacian_score(self, data, route):
        glfs.laplacian_score(self.X, self.W, client=self.client)

    def time_own_graph(self, data, route):
        """The own graph on 20 principal components (an out-of-core X: PCA fitted on a seeded subsample).

        On the cluster route its steps run on the client in use (the one ``setup`` made).
        """
        glfs.similarity_graph(self.X, n_neighbors=N_NEIGHBORS, n_pcs=N_PCS, random_state=SEED)


class GraphShards:
    """The Laplacian score of a row-chunked dask X on the cluster route's workers, the graph given to the
    tasks whole (one shard) or in 8 row shards (a task per gene block and shard): time and the workers' peak,
    each ratio to the other param in the same run."""

    params = ["one_shard", "eight_shards"]
    param_names = ["graph"]
    timeout = TIMEOUT

    def setup_cache(self):
        _, X = dataset(SIZES["ooc_cells"], SIZES["ooc_genes"])
        return {"X": X, "W": glfs.similarity_graph(X, n_neighbors=N_NEIGHBORS, random_state=SEED)}

    def setup(self, data, graph):
        import dask
        import scipy.sparse as sp

        warm_up()
        self.X, self.W = _dask_array(data["X"], rows_only=True), data["W"]
        upper = sp.triu(self.W, k=1, format="csr")
        size = upper.data.nbytes + upper.indices.nbytes + upper.indptr.nbytes
        shard = size + 2**20 if graph == "one_shard" else -(-size // 8)
        self.config = dask.config.set({"glfs.graph-shard-bytes": shard})  # the users' knob
        self.cluster, self.client = _local_cluster()

    def teardown(self, data, graph):
        self.config.__exit__(None, None, None)
        self.client.close()
        self.cluster.close()

    def time_laplacian_score(self, data, graph):
        glfs.laplacian_score(self.X, self.W, client=self.client)

    def track_worker_peak_bytes(self, data, graph):
        """The larger worker's peak resident memory over the call (its process since it started)."""
        glfs.laplacian_score(self.X, self.W, client=self.client)

        def peak():  # defined here: the workers cannot import the suite's modules (sent by value)
            for line in open("/proc/self/status"):
                if line.startswith("VmHWM"):
                    return int(line.split()[1]) * 1024
            return 0

        return max(self.client.run(peak).values())

    track_worker_peak_bytes.unit = "bytes"
