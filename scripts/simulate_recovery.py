"""Rule simulate_recovery (and simulate_recovery_full): Figure 1 recovery Score of every method over a simulation grid.

One process per grid runs the methods one after another, each exactly as a job of its own would
(glfs.simulation._simulate.recovery_experiment with its parameters and the master seed), and writes
each method's table; ``params.methods`` and ``output`` are in the same order.
"""

import pandas as pd

from glfs.simulation import recovery_experiment, simulation_grid
from glfs_workflow.files import write_tsv
from glfs_workflow.logs import log_to

log = log_to(snakemake.log[0])  # noqa: F821
try:
    par = snakemake.params  # noqa: F821
    sim = dict(par.simulation)
    points = simulation_grid(sim["sigma_grid"], sim["n_noise_at_sigma"], sim["n_noise_grid"], sim["sigma_at_n_noise"])
    graph_params = {k: v for k, v in dict(par.graph).items() if v is not None}
    for method, path in zip(par.methods, snakemake.output, strict=True):  # noqa: F821
        log.info(
            "%s: %d grid points x %d replicates, n_samples=%d", method, len(points), sim["replicates"], sim["n_samples"]
        )
        records = recovery_experiment(
            method,
            points,
            replicates=int(sim["replicates"]),
            n_samples=int(sim["n_samples"]),
            graph_params=graph_params,
            method_params=dict(par.method_params[method]),
            random_state=int(par.seed),
        )
        df = pd.DataFrame.from_records(records)[["method", "sigma", "n_noise", "replicate", "score"]]
        write_tsv(df, path)
except Exception:
    log.exception("simulate_recovery failed")
    raise
