"""Issue 42: read the per-worker samples of dask_row_chunks_heap_attrib.py (poll-*.txt: time, RSS, dask's data in
memory, tasks, incoming transfer bytes, running task kind).  `series` prints, per 30 s window, the lowest and
highest unmanaged memory (RSS less dask's data in memory), the highest RSS and the task kinds; `peak` prints
the samples around a worker's highest RSS."""

import sys


def load(fn):
    rows = [line.split() for line in open(fn)]
    return [(float(t), int(r), int(m), int(n), int(i), k) for t, r, m, n, i, k in rows]


def series(fn):
    rows = load(fn)
    t0 = rows[0][0]
    w = {}
    for t, r, m, n, _, k in rows:
        cur = w.setdefault(int((t - t0) // 30), [1e18, 0, 0, 0, set()])
        u = r - m
        cur[0], cur[1], cur[2], cur[3] = min(cur[0], u), max(cur[1], r), max(cur[2], n), max(cur[3], u)
        cur[4].add(k)
    print(fn)
    for b, (umin, rmax, n, umax, ks) in sorted(w.items()):
        kinds = ",".join(sorted(x.replace("laplacian_score", "ls") for x in ks))
        print(
            f"  {b * 30:5d}s unm min {umin / 2**30:.3f} max {umax / 2**30:.3f} rss max {rmax / 2**30:.3f} tasks {n} {kinds}"
        )


def peak(fn):
    rows = load(fn)
    j = max(range(len(rows)), key=lambda q: rows[q][1])
    t0 = rows[j][0]
    print(fn, "peak", rows[j][1] / 2**30)
    for t, r, m, n, i, k in rows[max(0, j - 150) : j + 40]:
        print(
            f"  {t - t0:+7.2f} rss {r / 2**30:.3f} inmem {m / 2**30:.3f} unm {(r - m) / 2**30:.3f} tasks {n} in {i / 2**30:.3f} {k}"
        )


if __name__ == "__main__":
    {"series": series, "peak": peak}[sys.argv[1]](*sys.argv[2:3])
