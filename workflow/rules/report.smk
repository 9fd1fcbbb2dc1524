# Stage: the final self-contained HTML report (figures inline) and the figures it
# shows, registered with report() for `snakemake --report report.zip`.
# Included last: ALL_TARGETS already holds every other stage's outputs.


rule make_report:
    input:
        report_inputs(),
    output:
        html=report(
            "results/report.html",
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


ALL_TARGETS.append("results/report.html")
