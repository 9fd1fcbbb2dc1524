"""The machinery the benchmark scripts share, and the harness behind ``benchmarks/run_benchmarks.py``.

Shared by the scripts (each ``benchmarks/<question>.py`` imports what it needs):

- :mod:`bench.simulated`: the simulated data (dense clustered counts; the atlas-scale .h5ad files).
- :mod:`bench.singlecell`: scanpy's normalisation and graph, one selection as a scanpy user runs it.
- :mod:`bench.timing`: best-of / median wall time, the load average.
- :mod:`bench.procfs`: memory probes from /proc (peak RSS).
- :mod:`bench.settings`: ``RESULTS`` (benchmarks/results/) and the harness's constants.

The harness's modules, in the order a run of run_benchmarks.py uses them:

- :mod:`bench.settings`: paths, group names, sizes and every other constant.
- :mod:`bench.datasets`: writes the input matrices to the ``.npy`` cache.
- :mod:`bench.machine`: machine description and method availability.
- :mod:`bench.measure`: the driver; one function per group builds the cases
  and runs each in a fresh worker process (time and peak memory).
- :mod:`bench.worker`: what runs inside a worker process.
- :mod:`bench.naive`: the naive references and the scikit-feature peer.
- :mod:`bench.results`: the result tables (``run_benchmarks.tsv``,
  ``run_benchmarks_agreement.tsv``, ``run_benchmarks_run_info.json``): writing, merging, reading back.
- :mod:`bench.report`: the results turned into ``run_benchmarks.md``.

A worker process (``run_benchmarks.py --worker``) imports only ``settings``,
``worker`` and ``naive`` of this package, and then the same libraries for
every case (``worker.import_timed_modules``), so the idle worker's RSS is the
import baseline of every memory figure.  The driver modules are imported by
the command line only when it measures or reports.
"""
