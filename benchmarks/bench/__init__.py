"""Benchmark harness behind ``benchmarks/run_benchmarks.py``.

Modules, in the order a run uses them:

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
