"""Issue 42, blocks planned above dask's target: the tables of studies/dask-row-chunks.md from the runs of
``dask_row_chunks_heap_attrib.py`` (git show cf3eef0:studies/dask_row_chunks_heap_attrib.py).

Usage: ``python dask_row_chunks_episodes.py DIR TAG [TAG ...]``.  DIR holds, per run TAG, ``TAG.json`` and
``TAG.log`` (the script's result and output) and the workers' 20 ms samples ``poll-TAG-PID.txt``; a TAG that
ends in ``_`` takes every run whose tag starts with it.  Prints each run's plan, time, worker peaks and
pauses, then, per tag, the episodes' peaks by task kind: an episode is a stretch of samples in which a
worker ran tasks of one kind, and its peak is its largest RSS."""

import glob
import json
import os
import re
import sys

import numpy as np


def runs(folder, tag):
    found = sorted(glob.glob(os.path.join(folder, f"{tag}*.json" if tag.endswith("_") else f"{tag}.json")))
    return [os.path.basename(f)[: -len(".json")] for f in found]


def run_line(folder, tag):
    res = json.load(open(os.path.join(folder, tag + ".json")))
    log = open(os.path.join(folder, tag + ".log")).read()
    values = re.search(r"gene blocks of at most (\d+)", log)
    blocks = re.search(r"into (\d+) gene blocks", log)
    waves = re.search(r"(\d+) gene blocks in (\d+) waves", log)
    plan = f"{waves.group(1)} blocks, {waves.group(2)} waves" if waves else f"{blocks.group(1)} blocks"
    return (
        f"{tag}: {plan} of at most {int(values.group(1)) / 1e6:.1f} M values, {res['seconds']} s, "
        f"peaks {res['worker_hwm_gb']}, pauses {log.count('Pausing worker')}, "
        f"unmanaged-memory warnings {log.count('Unmanaged memory use is high')}"
    )


def kind_of(task):
    if "split" in task:
        return "split"
    if task.endswith("block"):
        return "stack"
    return task


def episodes(folder, tags):
    """{kind: [(peak RSS, dask's data in memory then)]} over the workers' samples of ``tags``."""
    out = {}
    for tag in tags:
        for fn in sorted(glob.glob(os.path.join(folder, f"poll-{tag}-*.txt"))):
            cur = None
            for line in open(fn):
                p = line.split()
                if len(p) != 6:
                    continue
                rss, data, task = int(p[1]), int(p[2]), p[5]
                if cur is None or cur[0] != task:
                    if cur is not None:
                        out.setdefault(kind_of(cur[0]), []).append((cur[1], cur[2]))
                    cur = [task, rss, data]
                elif rss > cur[1]:
                    cur[1], cur[2] = rss, data
            if cur is not None:
                out.setdefault(kind_of(cur[0]), []).append((cur[1], cur[2]))
    return out


def main():
    folder, tags = sys.argv[1], sys.argv[2:]
    for tag in tags:
        names = runs(folder, tag)
        for name in names:
            print(run_line(folder, name))
        print(f"{tag}: episodes of {len(names)} run(s)")
        for kind, eps in sorted(episodes(folder, names).items()):
            if kind not in ("split", "stack"):
                continue
            rss = np.array([e[0] for e in eps]) / 2**30
            data = np.array([e[1] for e in eps]) / 2**30
            q = np.quantile(rss, [0.5, 0.9, 0.99, 1.0])
            print(
                f"  {kind}: {len(eps)} episodes, peak median {q[0]:.3f}, 90 % {q[1]:.3f}, 99 % {q[2]:.3f}, "
                f"max {q[3]:.3f}; data at the peak, median {np.median(data):.2f}"
            )


if __name__ == "__main__":
    main()
