"""Rule simulate_recovery: Figure 1 recovery Score of one method over the simulation grid."""

import pandas as pd

from glfs_workflow.files import write_tsv
from glfs_workflow.logs import log_to
from glfs.simulation.simulate import recovery_experiment, simulation_grid

log = log_to(snakemake.log[0])  # noqa: F821
try:
    par = snakemake.params  # noqa: F821
    method = snakemake.wildcards.method  # noqa: F821
    sim = dict(par.simulation)
    points = simulation_grid(sim["sigma_grid"], sim["n_noise_at_sigma"], sim["n_noise_grid"], sim["sigma_at_n_noise"])
    log.info("%s: %d grid points x %d replicates, n_samples=%d", method, len(points), sim["replicates"], sim["n_samples"])
    records = recovery_experiment(
        method,
        points,
        replicates=int(sim["replicates"]),
        n_samples=int(sim["n_samples"]),
        graph_params={k: v for k, v in dict(par.graph).items() if v is not None},
        method_params=dict(par.method_params),
        random_state=int(par.seed),
    )
    df = pd.DataFrame.from_records(records)[["method", "sigma", "n_noise", "replicate", "score"]]
    write_tsv(df, snakemake.output[0])  # noqa: F821
except Exception:
    log.exception("simulate_recovery failed")
    raise
