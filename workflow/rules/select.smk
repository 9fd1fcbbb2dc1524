# Stage: one feature-selection job per dataset (all its methods); AnnData with every method's results.


# One job per dataset runs all its methods (scripts/select_features.py), one rule per dataset
# (select_features_{dataset}): a rule's outputs cannot depend on its wildcards, and the datasets'
# method lists differ.  The tables keep their paths, one per (dataset, method).
for _dataset in config["datasets"]:
    if not dataset_methods(_dataset):
        continue

    rule:
        name:
            f"select_features_{_dataset}"
        input:
            adata="results/{dataset}/prepared.h5ad",
            graph=RESULT["graph"],
        output:
            tables=[
                report(
                    SELECTION_TABLE.format(dataset="{dataset}", method=m),
                    caption="../report/selection.rst",
                    category="Gene selection",
                    subcategory="{dataset}",
                    labels={"dataset": "{dataset}", "method": m},
                )
                for m in dataset_methods(_dataset)
            ],
            metas=[
                SELECTION_META.format(dataset="{dataset}", method=m)
                for m in dataset_methods(_dataset)
            ],
        log:
            "logs/select_features/{dataset}.log",
        benchmark:
            SELECT_BENCHMARK
        wildcard_constraints:
            dataset=re.escape(_dataset),
        priority: dataset_priority(_dataset)
        conda:
            "../../envs/glfs.yaml"
        threads: get_threads("select")
        resources:
            mem_mb=get_mem_mb("select"),
            runtime=get_runtime("select", per_method=True),
        params:
            methods=dataset_methods(_dataset),
            n_features=config["selection"]["n_features"],
            method_params={m: params_of(m) for m in dataset_methods(_dataset)},
            seed=seed(),
        script:
            "../../scripts/select_features.py"


rule annotate_adata:
    input:
        adata="results/{dataset}/prepared.h5ad",
        graph=RESULT["graph"],
        tables=selection_tables,
        metas=selection_metas,
    output:
        RESULT["adata"],
    log:
        "logs/annotate_adata/{dataset}.log",
    benchmark:
        "logs/benchmarks/annotate_adata/{dataset}.tsv"
    wildcard_constraints:
        dataset=DATASET_RE,
    conda:
        "../../envs/glfs.yaml"
    threads: get_threads("annotate")
    resources:
        mem_mb=get_mem_mb("annotate"),
        runtime=get_runtime("annotate"),
    params:
        graph=config["graph"],
    script:
        "../../scripts/annotate_adata.py"


rule extract_glfs_path:
    input:
        meta=glfs_path_meta,
    output:
        report(
            RESULT["glfs_path"],
            caption="../report/glfs_path.rst",
            category="GLFS sparsity path",
            labels={"dataset": "{dataset}"},
        ),
    log:
        "logs/extract_glfs_path/{dataset}.log",
    wildcard_constraints:
        dataset=DATASET_RE,
    localrule: True
    conda:
        "../../envs/glfs.yaml"
    script:
        "../../scripts/extract_glfs_path.py"
