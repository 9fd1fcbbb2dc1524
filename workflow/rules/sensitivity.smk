# Stage: checks of the well-posed GLFS (DESIGN_GLFS: "glfs", glfs.designs.budgeted) on the run's data:
# its criterion against greedy LapAOFS at GLFS_VS_GREEDY_KS genes (every dataset), and a
# post-hoc lambda1 sensitivity panel (labelled datasets; not tuning: the default
# graph_weight was chosen on the planted simulation).  Only when it is in `methods`.


rule compare_glfs_greedy:
    input:
        adata="results/{dataset}/prepared.h5ad",
        graph=RESULT["graph"],
    output:
        RESULT["glfs_vs_greedy"],
    log:
        "logs/compare_glfs_greedy/{dataset}.log",
    benchmark:
        "logs/benchmarks/compare_glfs_greedy/{dataset}.tsv"
    wildcard_constraints:
        dataset=DATASET_RE,
    conda:
        "../../envs/glfs.yaml"
    threads: get_threads("select")
    resources:
        mem_mb=get_mem_mb("select"),
        runtime=get_runtime("select"),
    params:
        ks=GLFS_VS_GREEDY_KS,
        method_params=params_of(DESIGN_GLFS),
    script:
        "../../scripts/compare_glfs_greedy.py"


rule glfs_sensitivity:
    input:
        adata="results/{dataset}/prepared.h5ad",
        graph=RESULT["graph"],
    output:
        report(
            RESULT["sensitivity"],
            caption="../report/glfs_sensitivity.rst",
            category="GLFS sensitivity",
            labels={"dataset": "{dataset}"},
        ),
    log:
        "logs/glfs_sensitivity/{dataset}.log",
    benchmark:
        "logs/benchmarks/glfs_sensitivity/{dataset}.tsv"
    wildcard_constraints:
        dataset=DATASET_RE,
    conda:
        "../../envs/glfs.yaml"
    # the select family: it runs glfs on the whole dataset (50,000 x 2,000: 5.1 GB,
    # more than the evaluate family's 5 GB there)
    threads: get_threads("select")
    resources:
        mem_mb=get_mem_mb("select"),
        runtime=get_runtime("select"),
    params:
        graph_weights=config["glfs_sensitivity"]["graph_weights"],
        feature_grid=config["glfs_sensitivity"]["feature_grid"],
        method=DESIGN_GLFS,
        n_features=config["selection"]["n_features"],
        method_params=params_of(DESIGN_GLFS),
        clustering=config["clustering"],
        n_clusters=n_clusters,
        seed=seed(),
    script:
        "../../scripts/glfs_sensitivity.py"
