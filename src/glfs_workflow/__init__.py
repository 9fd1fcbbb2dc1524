"""The workflow side of glfs: datasets, downloads and provenance, atomic outputs, tables, script logging and the report.

Used by the Snakemake workflow's scripts (``scripts/``) and rules; it builds on the
methods library :mod:`glfs` and is never imported by it.  Not a stable API.
"""
