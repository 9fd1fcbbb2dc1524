# Stage: planted-feature simulation, Wang & Goldenberg 2013 Sec. 3.1 / Figure 1.
# Default grid: config["simulation"] (small, minutes).  Full grid: `snakemake simulate_full`
# writes results/simulation_full/recovery.tsv with SIMULATION_FULL_GRID below
# (any key of it can also be changed for the default run with --config).


# One job per grid runs all its methods (scripts/simulate_recovery.py): simulate_recovery for the
# default grid, simulate_recovery_full for the full one (a rule's outputs cannot depend on its
# wildcards, and the full grid has more methods).  The tables keep their paths, one per method.
for _simgrid, _rule in (
    ("simulation", "simulate_recovery"),
    ("simulation_full", "simulate_recovery_full"),
):
    if not simulation_methods(_simgrid):
        continue

    rule:
        name:
            _rule
        output:
            [
                RECOVERY_METHOD_TABLE.format(simgrid="{simgrid}", method=m)
                for m in simulation_methods(_simgrid)
            ],
        log:
            "logs/simulate_recovery/{simgrid}.log",
        benchmark:
            SIMULATE_BENCHMARK
        wildcard_constraints:
            simgrid=_simgrid,
        priority: PRIORITY_LONG
        conda:
            "../../envs/glfs.yaml"
        threads: get_threads("simulate")
        resources:
            mem_mb=get_mem_mb("simulate"),
            runtime=get_runtime("simulate"),
        params:
            methods=simulation_methods(_simgrid),
            simulation=simulation_settings,
            graph=config["graph"],
            method_params={m: params_of(m) for m in simulation_methods(_simgrid)},
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
