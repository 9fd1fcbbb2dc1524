import sys

import anndata as ad
import h5py
import numpy as np

from glfs.core import _cluster


def rss():
    for l in open("/proc/self/status"):
        if l.startswith("VmRSS"):
            return int(l.split()[1]) / 2**20


def hwm():
    for l in open("/proc/self/status"):
        if l.startswith("VmHWM"):
            return int(l.split()[1]) / 2**20


f = h5py.File("a10m.h5ad", "r")
X = ad.experimental.read_elem_lazy(f["X"], chunks=(50_000, -1))
edges = np.linspace(0, 20000, 611).astype(np.int64)
c = _cluster._Chunk(X.blocks[7, 0])
# reset HWM
open("/proc/self/clear_refs", "w").write("5")
r0 = rss()
if sys.argv[1] == "read":
    m = c.read()
    print("read", m.nnz, m.data.nbytes + m.indices.nbytes + m.indptr.nbytes)
else:
    p = _cluster._split_rows(c, edges)
    print("pieces", sum(x.data.nbytes + x.indices.nbytes + x.indptr.nbytes for x in p))
print("rss0 %.3f GB, peak above %.3f GB, now above %.3f GB" % (r0, hwm() - r0, rss() - r0))
