# Stage: one job per dataset: all its feature selections, the AnnData with every method's results, and the
# tables made from them (the GLFS sparsity path; the well-posed GLFS against greedy LapAOFS).


# One job per dataset runs all its methods and writes every file made from their selections
# (scripts/select_features.py), one rule per dataset (select_features_{dataset}): a rule's outputs
# cannot depend on its wildcards, and the datasets' method lists differ.  The tables keep their paths,
# one per (dataset, method).  A dataset without methods gets the job too (its adata.h5ad: the graph).
# Its other outputs: select_outputs (analysis.smk).
for _dataset in config["datasets"]:

    rule:
        name:
            f"select_features_{_dataset}"
        input:
            adata="results/{dataset}/prepared.h5ad",
            graph=RESULT["graph"],
        output:
            **select_outputs(_dataset),
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
            methods_named=dataset_config(_dataset).get("methods") is not None,
            n_features=config["selection"]["n_features"],
            method_params={m: params_of(m) for m in dataset_methods(_dataset)},
            seed=seed(),
            graph=config["graph"],
            glfs_path_method=glfs_path_method(_dataset),
            design_glfs=DESIGN_GLFS,
            ks=GLFS_VS_GREEDY_KS,
        script:
            "../../scripts/select_features.py"
