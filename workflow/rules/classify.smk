# Stage: Golub classification, the protocol of Wang & Goldenberg 2013, Table 3.
# Train on obs["split"] == "train" only (hyper-parameters by cv_folds-fold CV inside
# it), test once on the rest.  The paper's printed rows are in resources/paper_table3.tsv
# and are shown apart in the report, never merged into our table.


rule classify_samples:
    input:
        "results/{dataset}/prepared.h5ad",
    output:
        report(
            RESULT["classification"],
            caption="../report/classification.rst",
            category="Classification",
            labels={"dataset": "{dataset}"},
        ),
    log:
        "logs/classify_samples/{dataset}.log",
    benchmark:
        "logs/benchmarks/classify_samples/{dataset}.tsv"
    wildcard_constraints:
        dataset=CLASSIFY_RE,
    priority: PRIORITY_LONG
    conda:
        "../../envs/glfs.yaml"
    threads: get_threads("classify")
    resources:
        mem_mb=get_mem_mb("classify"),
        runtime=get_runtime("classify"),
    params:
        cv_folds=config["classification"]["cv_folds"],
        glfs_variants=classify_glfs_variants,
        graph=config["graph"],
        method_params=config["selection"]["params"],
        random_floor=config["random_floor"],
        seed=seed(),
    script:
        "../../scripts/classify_samples.py"
