# Stage: the final self-contained HTML report (figures inline) and the figures it
# shows, registered with report() for `snakemake --report report.zip`.
# Its inputs are analysis_targets() (analysis.smk): every other final output.


rule make_report:
    input:
        report_inputs(),
    output:
        html=report(
            REPORT_HTML,
            caption="../report/report_html.rst",
            category="Final report",
        ),
        figures=[figure_report(n, p) for n, p in report_figures().items()],
    log:
        "logs/make_report/report.log",
    localrule: True
    conda:
        "../../envs/report.yaml"
    params:
        layout=report_layout(),
        figures=report_figures(),
        config=config,
    script:
        "../../scripts/make_report.py"
