"""Run a function in a child process, so that a crash (a signal) is seen by the test, not suffered by it.

A fork server of our own: one fresh Python process (``python tests/isolation.py``), started on first
use with numba's "workqueue" threading layer (safe to fork after it ran; GNU OpenMP ends a child
forked after it started) and warmed up (the kernels compiled or loaded once), forks one child per
call.  A child forked from the pytest process itself would inherit every earlier test's state, and
multiprocessing's own forkserver re-runs pytest's main script in every child (seconds each on a busy
machine).  Functions go to the server by module and name (module-level functions of modules on
``sys.path``), arguments and results by pickle.
"""

from __future__ import annotations

import importlib
import os
import pickle
import select
import signal
import struct
import subprocess
import sys

_SERVER = None


def _send(fd, obj) -> None:
    data = pickle.dumps(obj)
    os.write(fd, struct.pack("<Q", len(data)))
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _recv(fd):
    head = _read_exactly(fd, 8)
    if head is None:
        return None
    body = _read_exactly(fd, struct.unpack("<Q", head)[0])
    return None if body is None else pickle.loads(body)


def _read_exactly(fd, n):
    parts, got = [], 0
    while got < n:
        part = os.read(fd, n - got)
        if not part:
            return None
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _run_one(fn, args, kwargs, timeout):
    """In the server: fork, run ``fn`` in the child, return its outcome (or the signal that ended it)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(r)
        try:
            out = ("ok", fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - every exception is the outcome
            out = ("error", type(exc).__name__, str(exc))
        try:
            _send(w, out)
        finally:
            os._exit(0)
    os.close(w)
    ready, _, _ = select.select([r], [], [], timeout)
    out = _recv(r) if ready else "timeout"
    os.close(r)
    if out == "timeout":
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if out == "timeout":
        return ("timeout", None)
    if out is None:
        return ("signal", os.WTERMSIG(status)) if os.WIFSIGNALED(status) else ("exit", os.WEXITSTATUS(status))
    return out


def _warm_up():
    """Compile (or load from numba's cache) the kernels the children run: float32 and float64, CSR and CSC."""
    import numpy as np
    import scipy.sparse as sp

    import glfs

    rng = np.random.default_rng(0)
    W = glfs.similarity_graph(rng.normal(size=(40, 3)), n_neighbors=5)
    for dtype in (np.float32, np.float64):
        X = sp.random(40, 12, density=0.4, format="csr", random_state=rng, dtype=dtype)
        for M in (X, X.tocsc()):
            glfs.laplacian_score(M, W)
            glfs.select(M, method="variance", n_features_to_select=3)


def _serve():
    """The server's loop: requests (module, name, args, kwargs, timeout) on fd 0, outcomes on the fd that
    was stdout (fd 1 itself goes to stderr, so a library's print cannot garble the replies)."""
    import warnings

    out_fd = os.dup(1)
    os.dup2(2, 1)
    warnings.simplefilter("ignore")
    _warm_up()
    while True:
        req = _recv(0)
        if req is None:
            return
        mod, name, args, kwargs, timeout = req
        fn = getattr(importlib.import_module(mod), name)
        _send(out_fd, _run_one(fn, args, kwargs, timeout))


def run_in_child(fn, *args, timeout=120, **kwargs):
    """``fn(*args, **kwargs)`` in a forked child: ("ok", value), ("error", exception type name, message),
    ("signal", signal number) when a signal ended the child, or ("timeout", None) past ``timeout`` s."""
    global _SERVER
    if _SERVER is None or _SERVER.poll() is not None:
        env = dict(
            os.environ, NUMBA_THREADING_LAYER="workqueue", PYTHONPATH=os.pathsep.join([p for p in sys.path if p])
        )
        _SERVER = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    _send(_SERVER.stdin.fileno(), (fn.__module__, fn.__name__, args, kwargs, timeout))
    out = _recv(_SERVER.stdout.fileno())
    if out is None:
        msg = f"the isolation server ended (exit code {_SERVER.wait()})"
        raise RuntimeError(msg)
    return out


if __name__ == "__main__":
    _serve()
