#!/usr/bin/env python
"""Wall time and peak memory of the glfs library, with comparisons against peers.

Run on demand (not part of the test suite)::

    python benchmarks/run_benchmarks.py                 # full run (about 15-20 min on 2 cores)
    python benchmarks/run_benchmarks.py --quick         # small sizes only (about 2 min)
    python benchmarks/run_benchmarks.py --only ls_scaling methods

Groups (``--only``):

- ``datasets``: graph, Laplacian score and graph + Laplacian score on the
  real GBM (ClaNC840 173 x 840, STATegRa 169 x 1740) and Golub (72 x 7129)
  matrices and on synthetic 200 x 12,000 and 20,000 x 2,000 matrices.
- ``ls_scaling``: graph + Laplacian score against the naive dense formula
  and against scikit-feature (``skfeature-chappers``) on 2,000 .. 20,000
  samples x 2,000 genes, with a memory guard, and extrapolation.
- ``ls_agreement``: do our scores agree with the naive dense formula, and
  how do scikit-feature's differ (not timed).
- ``lapaofs``: ``glfs.lapaofs`` greedy against naive re-inversion.
- ``glfs_slope``: ``glfs.glfs_objective`` (value + gradient) at fixed n and
  d = 1000 .. 8000; slope of log time on log d.
- ``methods``: every name in ``glfs.METHODS`` through ``glfs.select`` on
  every data set, with memory prediction, time limit and "not available"
  for methods that are not importable.
- ``nn_scaling``: the methods with O(n^2) memory (GLFS, UFI, supervised
  LKR) on growing n, to see where they stop fitting.

Every timed case runs in a fresh Python process (this file with
``--worker``) that imports the same modules (numpy, scipy, scikit-learn,
glfs, skfeature), loads its input from a ``.npy`` cache and builds what the
case needs but does not time (e.g. the graph for a "Laplacian score only"
case).  Then it resets the kernel's peak-RSS counter (``/proc/self/clear_refs``
with ``5``), runs the timed call and reads ``VmHWM`` from
``/proc/self/status``.  ``peak_rss_mb`` is the whole process's peak during the
call (imports + input + everything the call allocates); ``peak_delta_mb`` is
that peak minus the resident size just before the call, i.e. the extra
memory the call needed.  An idle worker (same imports, no data) gives the
import baseline, reported in the summary.

Outputs in ``benchmarks/results/``, named after this script: ``run_benchmarks.tsv``
(one row per case), ``run_benchmarks.md`` (machine, headline figures, ratios,
agreement checks, extrapolations), ``run_benchmarks_agreement.tsv`` and
``run_benchmarks_run_info.json``.  ``--summary-only`` rewrites
``run_benchmarks.md`` from those files without measuring anything.

This file is the command line only: the measurement is in ``bench.measure``
(driver) and ``bench.worker`` (inside a worker), the tables in
``bench.results``, the summary in ``bench.report`` (package ``benchmarks/bench``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.settings import (
    DEFAULT_AS_LIMIT_GB,
    DEFAULT_MAX_MEM_GB,
    DEFAULT_METHOD_TIMEOUT_S,
    DEFAULT_THREADS,
    DEFAULT_TIMEOUT_S,
    GROUPS,
    RESULTS,
)

NUMBER_OPTIONS = [  # (option, type, default, help, note after the default)
    ("--timeout", float, DEFAULT_TIMEOUT_S, "seconds per case", ""),
    ("--method-timeout", float, DEFAULT_METHOD_TIMEOUT_S, "seconds per case in 'methods'", ""),
    ("--max-mem-gb", float, DEFAULT_MAX_MEM_GB, "skip cases predicted to need more", ""),
    ("--as-limit-gb", float, DEFAULT_AS_LIMIT_GB, "address-space cap per worker", ""),
    ("--threads", int, DEFAULT_THREADS, "BLAS/OpenMP threads per worker", "; 0 = library default"),
]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes only (a couple of minutes)")
    ap.add_argument("--only", nargs="+", choices=GROUPS, default=GROUPS, help="groups to run")
    for option, kind, default, text, note in NUMBER_OPTIONS:
        ap.add_argument(option, type=kind, default=default, help=f"{text} (default {default:g}{note})")
    ap.add_argument("--out", type=Path, default=RESULTS, help="output directory (default benchmarks/results)")
    ap.add_argument("--summary-only", action="store_true", help="rewrite run_benchmarks.md from the existing TSVs")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def summary_only(out, quick):
    """Rewrite run_benchmarks.md from the TSVs and run_benchmarks_run_info.json of an earlier run."""
    from bench.report import write_summary
    from bench.results import load_results

    write_summary(load_results(out, quick), out)


def measure_and_report(args):
    """Run the groups, write the tables and the summary."""
    from bench.measure import measure_run
    from bench.report import write_summary
    from bench.results import save_tables

    res = measure_run(args)
    save_tables(res, args.out)
    write_summary(res, args.out)
    print(f"done in {res.total:.0f} s; results in {args.out}", flush=True)


def main(argv=None):
    args = parse_args(argv)
    if args.worker:  # inside a worker process: import only what every worker holds
        from bench.worker import worker_main

        worker_main(args.worker)
    elif args.summary_only:
        summary_only(args.out, args.quick)
    else:
        measure_and_report(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
