# Stage: planted-feature simulation, Wang & Goldenberg 2013 Sec. 3.1 / Figure 1.
# Default grid: config["simulation"] (small, minutes).  Full grid: `snakemake simulate_full`
# writes results/simulation_full/recovery.tsv with SIMULATION_FULL_GRID below
# (any key of it can also be changed for the default run with --config).


rule simulate_recovery:
    output:
        "results/{simgrid}/recovery/{method}.tsv",
    log:
        "logs/simulate_recovery/{simgrid}_{method}.log",
    benchmark:
        "logs/benchmarks/simulate_recovery/{simgrid}_{method}.tsv"
    wildcard_constraints:
        simgrid="simulation|simulation_full",
        method=METHOD_RE,
    conda:
        "../../envs/glfs.yaml"
    threads: get_threads("simulate")
    resources:
        mem_mb=get_mem_mb("simulate"),
        runtime=get_runtime("simulate"),
    params:
        simulation=simulation_settings,
        graph=config["graph"],
        method_params=method_params,
        seed=seed(),
    script:
        "../../scripts/simulate_recovery.py"


rule merge_recovery:
    input:
        recovery_tables,
    output:
        report(
            RECOVERY_TABLE,
            caption="../report/recovery.rst",
            category="Simulation",
            labels={"grid": "{simgrid}"},
        ),
    log:
        "logs/merge_recovery/{simgrid}.log",
    wildcard_constraints:
        simgrid="simulation|simulation_full",
    localrule: True
    conda:
        "../../envs/glfs.yaml"
    script:
        "../../scripts/merge_recovery.py"


rule simulate_full:
    input:
        RECOVERY_TABLE.format(simgrid="simulation_full"),
    localrule: True
