import os
import pathlib
import random
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, "/work/main/tests/core")
import anndata as ad
import numpy as np
import scipy.sparse as sp
from test_sigterm_split import CHILD

base = pathlib.Path(tempfile.mkdtemp())
X = sp.random(3_000, 60, density=0.2, format="csr", random_state=np.random.default_rng(0), dtype=np.float32)
path = base / "x.h5ad"
ad.AnnData(X).write_h5ad(path)
N = int(sys.argv[1])
bad = 0
for i in range(N):
    tmpdir = base / f"t{i}"
    tmpdir.mkdir()
    env = dict(os.environ, TMPDIR=str(tmpdir))
    p = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    while not list(tmpdir.glob("glfs-split-*")) and p.poll() is None:
        time.sleep(0.02)
    time.sleep(random.uniform(0, 6))
    before = p.poll()
    p.send_signal(signal.SIGTERM)
    rc = p.wait(120)
    out, err = p.communicate()
    left = list(tmpdir.glob("glfs-split-*"))
    if rc != -15 or left:
        bad += 1
        print(
            i,
            rc,
            "exited before the signal" if before is not None else "running at the signal",
            left,
            out[-200:],
            err[-1500:],
            flush=True,
        )
print("bad", bad, "of", N)
