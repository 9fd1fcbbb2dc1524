# Stage: a post-hoc lambda1 sensitivity panel of the well-posed GLFS (DESIGN_GLFS: "glfs",
# glfs.designs._budgeted) on the labelled datasets (not tuning: the default graph_weight was chosen
# on the planted simulation).  Only when it is in `methods`.  Its criterion against greedy LapAOFS
# (glfs_vs_greedy.tsv) is written by the dataset's selection job (select.smk).


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
