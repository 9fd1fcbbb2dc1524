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

RULE = re.compile(r"^(local)?rule (\w+):\s*$")
SUBMITTED = re.compile(r"Job (\S+) has been submitted with SLURM jobid (\d+) \(log: (.+?)\)\.?\s*$")
GROUP = re.compile(r"^group job (\S+)")


def parse_snakemake_log(text: str):
    """Return (jobs, submissions): jobs = {snakemake jobid: (rule, is_local, wildcards)}."""
    jobs: dict[str, tuple[str, bool, str]] = {}
    submissions: dict[str, tuple[str, str]] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = RULE.match(lines[i])
        if m:
            is_local, rule = bool(m.group(1)), m.group(2)
            jobid, wildcards = None, ""
            j = i + 1
            while j < len(lines) and lines[j].startswith("    "):
                s = lines[j].strip()
                if s.startswith("jobid:"):
                    jobid = s.split(":", 1)[1].strip()
                elif s.startswith("wildcards:"):
                    wildcards = s.split(":", 1)[1].strip()
                j += 1
            if jobid is not None:
                jobs[jobid] = (rule, is_local, wildcards)
            i = j
            continue
        m = SUBMITTED.search(lines[i])
        if m:
            submissions[m.group(1)] = (m.group(2), m.group(3))
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
    grouped = bool(GROUP.search(smk_log.read_text(errors="replace")))

    if not submissions:
        failures.append(f"no job was submitted with sbatch according to {smk_log}")
    remote = {jid: v for jid, v in jobs.items() if not v[1]}
    if not grouped:
        for jid, (rule, _, wc) in sorted(remote.items()):
            if jid not in submissions:
                failures.append(f"rule {rule} ({wc}) ran without a SLURM job id")
    print(f"{'slurm_id':>8}  {'state':<10} {'node':<6} rule (wildcards)")
    for jid, (slurm_id, logfile) in sorted(submissions.items(), key=lambda kv: int(kv[1][0])):
        rule, _, wc = jobs.get(jid, ("group/" + jid, False, ""))
        rec = comp.get(slurm_id)
        state = rec.get("JobState", "?") if rec else "MISSING"
        node = rec.get("NodeList", "?") if rec else "?"
        print(f"{slurm_id:>8}  {state:<10} {node:<6} {rule} ({wc})")
        if rec is None:
            failures.append(f"SLURM job {slurm_id} ({rule}) is not in the scheduler's record {comp_log}")
        elif state != "COMPLETED":
            failures.append(f"SLURM job {slurm_id} ({rule}) ended {state}")
        if not Path(logfile).exists():
            failures.append(f"SLURM job {slurm_id} ({rule}): log {logfile} missing")
    local = sorted({v[0] for v in jobs.values() if v[1]})
    print(
        f"{len(submissions)} SLURM jobs for rules {sorted({jobs.get(j, ('group',))[0] for j in submissions})}; "
        f"local rules (no sbatch): {local}"
    )
    if failures:
        for f in failures:
            print(f"FAIL: {f}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
