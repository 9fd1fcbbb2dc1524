# Stage: planted-feature simulation, Wang & Goldenberg 2013 Sec. 3.1 / Figure 1.
# Default grid: config["simulation"] (small, minutes).  Full grid: `snakemake simulate_full`
# writes results/simulation_full/recovery.tsv with SIMULATION_FULL_GRID below
# (any key of it can also be changed for the default run with --config).

# The paper's axes are not printed; this grid spans its two panels densely:
# (A) sigma 0.1..1.0 at N = 1000 noise features, (B) N 100..10000 at sigma = 0.2.
SIMULATION_FULL_GRID = {
    "sigma_grid": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
    "n_noise_at_sigma": 1000,
    "n_noise_grid": [100, 500, 1000, 2000, 5000, 10000],
    "sigma_at_n_noise": 0.2,
    "replicates": 10,
}


def simulation_settings(wildcards):
    """The simulation config for a grid: config["simulation"], overlaid by the full grid."""
    sim = dict(config.get("simulation", {}))
    if wildcards.simgrid == "simulation_full":
        sim.update(SIMULATION_FULL_GRID)
    return sim


def simulation_methods():
    return [
        m
        for m in config.get("simulation", {}).get("methods", [])
        if m not in SUPERVISED_METHODS
    ]


def recovery_tables(wildcards):
    return expand(
        "results/{simgrid}/recovery/{method}.tsv",
        simgrid=wildcards.simgrid,
        method=simulation_methods(),
    )


rule simulate_recovery:
    output:
        "results/{simgrid}/recovery/{method}.tsv",
    params:
        simulation=simulation_settings,
        graph=config["graph"],
        method_params=method_params,
        seed=seed(),
    log:
        "logs/simulate_recovery/{simgrid}_{method}.log",
    benchmark:
        "benchmarks/simulate_recovery/{simgrid}_{method}.tsv"
    wildcard_constraints:
        simgrid="simulation|simulation_full",
        method=METHOD_RE,
    threads: get_threads("simulate")
    resources:
        mem_mb=get_mem_mb("simulate"),
        runtime=get_runtime("simulate"),
    script:
        "../../scripts/simulate_recovery.py"


rule merge_recovery:
    input:
        recovery_tables,
    output:
        report(
            "results/{simgrid}/recovery.tsv",
            caption="../report/recovery.rst",
            category="Simulation",
            labels={"grid": "{simgrid}"},
        ),
    log:
        "logs/merge_recovery/{simgrid}.log",
    wildcard_constraints:
        simgrid="simulation|simulation_full",
    localrule: True
    script:
        "../../scripts/merge_recovery.py"


rule simulate_full:
    input:
        "results/simulation_full/recovery.tsv",
    localrule: True


if config.get("simulation", {}).get("enabled", True) and simulation_methods():
    ALL_TARGETS.append("results/simulation/recovery.tsv")
