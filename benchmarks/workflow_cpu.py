"""The default workflow's CPU time job by job: an old commit against this tree's HEAD, both runs at once.

    python benchmarks/workflow_cpu.py --old 8d4f033                 # two worktrees under /tmp, both runs, the table
    python benchmarks/workflow_cpu.py --old 8d4f033 --extra "--prioritize results/mouse_bladder/clustering_leiden.tsv"
    python benchmarks/workflow_cpu.py --summarize OLD.cpu NEW.cpu   # only the table, from two runs' records

Each side is a detached worktree (the old commit, and this tree's HEAD: uncommitted changes are not in it)
with clean outputs, running the README's command (``snakemake --cores 2``, niced) with its own ``src`` on
PYTHONPATH.  The two runs start together, so they share the machine's load: on a shared machine wall
times say little, and the CPU time of each job (user + system of its Python process, recorded at exit
by a ``sitecustomize`` hook on PYTHONPATH) is what is compared, job by job and summed per rule.
Writes benchmarks/results/workflow_cpu.md and .tsv.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from bench.settings import RESULTS, ROOT

HOOK = """import atexit, os, resource, sys, time
_out, _t0 = os.environ.get("CPUHOOK_OUT"), time.time()
def _job():
    sm = getattr(sys.modules.get("__main__"), "snakemake", None)
    try:
        return "-" if sm is None else f"{sm.rule}:" + ",".join(str(v) for _, v in sm.wildcards.items())
    except Exception as exc:
        return f"?:{exc}"
def _report():
    r = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(_out, "a") as f:
        f.write(f"{_t0:.2f}\\t{time.time() - _t0:.2f}\\t{r.ru_utime + r.ru_stime:.2f}\\t{c.ru_utime + c.ru_stime:.2f}\\t"
                f"{os.getloadavg()[0]:.1f}\\t{_job()}\\n")
if _out:
    atexit.register(_report)
"""
COLUMNS = ["start", "wall_s", "cpu_s", "children_cpu_s", "load1", "job"]


def read_cpu(path) -> pd.DataFrame:
    """One row per snakemake job of a run's hook records (the snakemake process itself left out).

    ``rule``: the job's rule, the per-dataset selection rules (``select_features_{dataset}``, one job
    running all the dataset's methods) as ``select_features``, so that runs before and after that
    change compare rule by rule."""
    df = pd.read_csv(path, sep="\t", header=None, usecols=range(6), names=COLUMNS)
    df = df[df["job"] != "-"].copy()
    df["rule"] = df["job"].str.split(":").str[0].str.replace(r"^select_features_.*", "select_features", regex=True)
    return df


def snakemake_cpu(path) -> float:
    """CPU s of the snakemake process itself (its hook record, job "-"), 0 when there is none."""
    df = pd.read_csv(path, sep="\t", header=None, usecols=range(6), names=COLUMNS)
    return float(df.loc[df["job"] == "-", "cpu_s"].sum())


def summarize(old_path, new_path, note: str) -> None:
    """benchmarks/results/workflow_cpu.{tsv,md}: CPU s per job and per rule, old and new."""
    old, new = read_cpu(old_path), read_cpu(new_path)
    jobs = old.set_index("job")[["cpu_s", "wall_s"]].join(
        new.set_index("job")[["cpu_s", "wall_s"]], lsuffix="_old", rsuffix="_new", how="outer"
    )
    jobs.sort_values("cpu_s_new", ascending=False).to_csv(RESULTS / "workflow_cpu.tsv", sep="\t", float_format="%.2f")
    # per rule, each side over its own jobs (a rule may run as more or fewer jobs on one side)
    rules = pd.concat(
        {side: df.groupby("rule")["cpu_s"].agg(["sum", "count"]) for side, df in (("old", old), ("new", new))}, axis=1
    ).fillna(0)
    rules.columns = ["old_cpu_s", "old_jobs", "new_cpu_s", "new_jobs"]
    rules = rules.assign(old_new=lambda d: d.old_cpu_s / d.new_cpu_s).sort_values("new_cpu_s", ascending=False)
    own = {side: snakemake_cpu(p) for side, p in (("old", old_path), ("new", new_path))}
    lines = [
        "# The default workflow's CPU time rule by rule: old commit against new",
        "",
        note,
        "",
        f"Jobs: old {len(old)}, new {len(new)}; CPU s in the jobs: old {old.cpu_s.sum():.1f}, new {new.cpu_s.sum():.1f} "
        f"(old/new {old.cpu_s.sum() / new.cpu_s.sum():.2f}); in snakemake's own process: old {own['old']:.1f}, new "
        f"{own['new']:.1f}. Load (1 min) at the jobs' ends: old {old.load1.min():.1f}-{old.load1.max():.1f}, "
        f"new {new.load1.min():.1f}-{new.load1.max():.1f}.",
        "",
        "| rule | old jobs | new jobs | old CPU s | new CPU s | old/new |",
        "|---|---|---|---|---|---|",
        *[
            f"| {r} | {int(x.old_jobs)} | {int(x.new_jobs)} | {x.old_cpu_s:.1f} | {x.new_cpu_s:.1f} | "
            f"{f'{x.old_new:.2f}' if x.new_cpu_s > 0 else '-'} |"
            for r, x in rules.iterrows()
        ],
        "",
        "Per job (CPU s and wall s of each side): workflow_cpu.tsv.",
    ]
    (RESULTS / "workflow_cpu.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def run_both(old: str, work: Path, extra: str) -> tuple[Path, Path, str]:
    """Both runs at once in fresh detached worktrees; their hook records and a note on wall time and load."""
    hook = work / "hook"
    hook.mkdir(parents=True, exist_ok=True)
    (hook / "sitecustomize.py").write_text(HOOK)
    procs, records = {}, {}
    load0, t0 = os.getloadavg()[0], time.time()
    for side, rev in (("old", old), ("new", "HEAD")):
        tree = work / side
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev], check=True)
        records[side] = work / f"{side}.cpu"
        env = {**os.environ, "PYTHONPATH": f"{tree / 'src'}:{hook}", "CPUHOOK_OUT": str(records[side])}
        cmd = ["nice", "-n", "10", "snakemake", "--cores", "2", *extra.split()]
        log = open(work / f"{side}.log", "w")  # noqa: SIM115  (closed with the process)
        procs[side] = (subprocess.Popen(cmd, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT), log)
    walls = {}
    for side, (p, log) in procs.items():
        if p.wait() != 0:
            sys.exit(f"the {side} run failed: {work / (side + '.log')}")
        log.close()
        walls[side] = time.time() - t0
    note = (
        f"Run {time.strftime('%Y-%m-%d %H:%M', time.gmtime(t0))} UTC, `snakemake --cores 2 {extra}`, niced, "
        f"old = {old}, new = HEAD; wall old {walls['old']:.0f} s, new {walls['new']:.0f} s (together on "
        f"2 cores), load {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end."
    )
    return records["old"], records["new"], note


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", help="the old commit")
    ap.add_argument("--work", type=Path, help="where the worktrees go (default: a new directory under /tmp)")
    ap.add_argument("--extra", default="", help="more snakemake arguments, the same for both runs")
    ap.add_argument("--summarize", nargs=2, metavar=("OLD_CPU", "NEW_CPU"), help="only the table, from records")
    ap.add_argument("--note", default="", help="the note of --summarize (when, which commits, wall, load)")
    args = ap.parse_args()
    if args.summarize:
        summarize(*args.summarize, args.note)
        return
    if not args.old:
        ap.error("--old is needed (or --summarize)")
    work = args.work or Path(tempfile.mkdtemp(prefix="glfs_workflow_cpu_"))
    summarize(*run_both(args.old, work, args.extra))


if __name__ == "__main__":
    main()
