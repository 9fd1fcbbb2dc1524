"""Check that a snakemake run really executed its jobs through SLURM.

    python tests/hpc/check_slurm_jobs.py SNAKEMAKE_LOG JOBCOMP_LOG

SNAKEMAKE_LOG is the console output of `snakemake --profile profiles/slurm`;
JOBCOMP_LOG is slurmctld's job-completion record (JobCompType=jobcomp/filetxt,
written by the scheduler itself, independent of snakemake).  Checks:

1. at least one job was submitted with sbatch;
2. every non-local rule job of the run has a SLURM job id (local rules, printed
   as ``localrule``, run in the snakemake process and have none);
3. every SLURM job id is in the scheduler's completion record with
   ``JobState=COMPLETED``, and its plugin log file exists.

Prints one line per job (SLURM id, rule, wildcards, state, node) and exits 1 on
any failure.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

RULE = re.compile(r"^(\s*)(local)?rule (\w+):\s*$")
SUBMITTED = re.compile(r"Job (\S+) has been submitted with SLURM jobid (\d+) \(log: (.+?)\)\.?\s*$")
GROUP = re.compile(r"Group job (\S+) \(jobs")


def parse_snakemake_log(text: str):
    """Parse the console log of a snakemake run.

    Returns (jobs, submissions): jobs = {snakemake jobid: (rule, is_local,
    wildcards)}; submissions = {slurm id: (log file, [snakemake jobids])}.  A
    group job ("Group job NAME (jobs in lexicogr. order):" followed by its
    indented rule blocks) is submitted under a group id; its member jobs are
    the rule blocks listed in it, matched to submissions in order.
    """
    jobs: dict[str, tuple[str, bool, str]] = {}
    submissions: dict[str, tuple[str, list[str]]] = {}
    pending_groups: list[list[str]] = []
    current_group: list[str] | None = None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if GROUP.search(line):
            current_group = []
            pending_groups.append(current_group)
            i += 1
            continue
        m = RULE.match(line)
        if m:
            indent, is_local, rule = len(m.group(1)), bool(m.group(2)), m.group(3)
            jobid, wildcards = None, ""
            j = i + 1
            while j < len(lines) and lines[j].startswith(" " * (indent + 4)):
                s = lines[j].strip()
                if s.startswith("jobid:"):
                    jobid = s.split(":", 1)[1].strip()
                elif s.startswith("wildcards:"):
                    wildcards = s.split(":", 1)[1].strip()
                j += 1
            if jobid is not None:
                jobs[jobid] = (rule, is_local, wildcards)
                if indent > 0 and current_group is not None:
                    current_group.append(jobid)
                elif indent == 0:
                    current_group = None
            i = j
            continue
        m = SUBMITTED.search(line)
        if m:
            key, slurm_id, logfile = m.groups()
            if key in jobs:
                members = [key]
            elif pending_groups:
                members = pending_groups.pop(0)
            else:
                members = []
            submissions[slurm_id] = (logfile, members)
            current_group = None
        i += 1
    return jobs, submissions


def parse_jobcomp(text: str) -> dict[str, dict[str, str]]:
    """slurmctld jobcomp/filetxt lines: 'JobId=3 UserId=... JobState=COMPLETED ...'."""
    out = {}
    for line in text.splitlines():
        fields = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        if "JobId" in fields:
            out[fields["JobId"]] = fields
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    smk_log, comp_log = Path(argv[0]), Path(argv[1])
    jobs, submissions = parse_snakemake_log(smk_log.read_text(errors="replace"))
    comp = parse_jobcomp(comp_log.read_text(errors="replace")) if comp_log.exists() else {}
    failures = []

    if not submissions:
        failures.append(f"no job was submitted with sbatch according to {smk_log}")
    covered = {j for _, members in submissions.values() for j in members}
    for jid, (rule, is_local, wc) in sorted(jobs.items()):
        if not is_local and jid not in covered:
            failures.append(f"rule {rule} ({wc}) ran without a SLURM job id")
    print(f"{'slurm_id':>8}  {'state':<10} {'node':<6} rule (wildcards)")
    for slurm_id, (logfile, members) in sorted(submissions.items(), key=lambda kv: int(kv[0])):
        rec = comp.get(slurm_id)
        state = rec.get("JobState", "?") if rec else "MISSING"
        node = rec.get("NodeList", "?") if rec else "?"
        what = "; ".join(f"{jobs[j][0]} ({jobs[j][2]})" for j in members) or "?"
        print(f"{slurm_id:>8}  {state:<10} {node:<6} {what}")
        if rec is None:
            failures.append(f"SLURM job {slurm_id} ({what}) is not in the scheduler's record {comp_log}")
        elif state != "COMPLETED":
            failures.append(f"SLURM job {slurm_id} ({what}) ended {state}")
        if not Path(logfile).exists():
            failures.append(f"SLURM job {slurm_id} ({what}): log {logfile} missing")
    remote_rules = sorted({jobs[j][0] for j in covered if j in jobs})
    local_rules = sorted({v[0] for v in jobs.values() if v[1]})
    print(
        f"{len(submissions)} SLURM jobs ran {len(covered)} rule jobs of {remote_rules}; "
        f"local rules (no sbatch): {local_rules}"
    )
    if failures:
        for f in failures:
            print(f"FAIL: {f}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
