import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def planted(rng):
    """60 samples in 3 groups; genes 0-2 carry the groups, the rest is noise."""
    n, d = 60, 40
    groups = np.repeat(np.arange(3), n // 3)
    X = rng.normal(0.0, 1.0, size=(n, d))
    for j in range(3):
        X[:, j] = 3.0 * (groups == j) + rng.normal(0.0, 0.2, size=n)
    return X, groups


@pytest.fixture
def restore_logging():
    """The workflow scripts' log_to() reconfigures logging and SIGTERM; put both back."""
    import logging
    import signal

    root = logging.getLogger()
    handlers, level, term = root.handlers[:], root.level, signal.getsignal(signal.SIGTERM)
    yield
    for h in root.handlers[:]:
        root.removeHandler(h)
        h.close()
    for h in handlers:
        root.addHandler(h)
    root.setLevel(level)
    logging.captureWarnings(False)
    signal.signal(signal.SIGTERM, term)


@pytest.fixture
def in_child():
    """:func:`isolation.run_in_child`: a module-level function run in a child process, a signal reported
    as ("signal", n) instead of ending the test session."""
    from isolation import run_in_child

    return run_in_child


@pytest.fixture(scope="module")
def dask_client():
    """A dask.distributed client on a LocalCluster of 2 in-process workers, 1 thread each (skipped without distributed)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cl:
        with distributed.Client(cl) as c:
            yield c
