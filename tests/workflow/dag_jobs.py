"""Print every job of the workflow's DAG as one JSON line: rule, wildcards, params, threads, priority, resources, log,
output (the named outputs: name -> path).

    python tests/workflow/dag_jobs.py WORKDIR [CONFIGFILE ...] [--forceall]

Builds the DAG the way a dry run does (Snakemake's API, on WORKDIR/Snakefile and
the given config files over its config.yaml) and prints what ``snakemake -n``
does not show: each job's resolved params.  Jobs that are up to date are left
out unless --forceall is given.  Used by the workflow tests to check that a
config value reaches a job's params.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _plain(x):
    return json.loads(json.dumps(x, default=str, sort_keys=True))


def _priority(job):
    """The job's scheduling priority: its rule's ``priority:`` for its wildcards, as the DAG computes it."""
    return job.rule.expand_priority(job.wildcards_dict, job.input, 1)


def dag_jobs(workdir: Path, configfiles=(), forceall=False) -> list[dict]:
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings

    workdir = Path(workdir).resolve()
    with SnakemakeApi(OutputSettings()) as api:
        wapi = api.workflow(
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(configfiles=[Path(c).resolve() for c in configfiles]),
            snakefile=workdir / "Snakefile",
            workdir=workdir,
        )
        wapi.dag(DAGSettings(forceall=forceall))
        wf = wapi._workflow  # no public API returns the jobs with their params
        wf._prepare_dag(forceall=forceall, ignore_incomplete=True, lock_warn_only=True)
        wf._build_dag()
        jobs = wf.dag.needrun_jobs() if not forceall else wf.dag.jobs
        return [
            {
                "rule": job.rule.name,
                "wildcards": dict(job.wildcards_dict),
                "params": {k: _plain(v) for k, v in job.params.items()},
                "threads": job.threads,
                "priority": _priority(job),
                "resources": {k: v for k, v in job.resources.items() if k in ("mem_mb", "runtime")},
                "log": [str(f) for f in job.log],
                "output": {name: str(getattr(job.output, name)) for name in job.output._names},
            }
            for job in jobs
        ]


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--forceall"]
    for rec in sorted(dag_jobs(Path(args[0]), args[1:], forceall="--forceall" in sys.argv), key=json.dumps):
        print(json.dumps(rec, sort_keys=True))
