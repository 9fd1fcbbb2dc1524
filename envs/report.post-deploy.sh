#!/usr/bin/env bash
# Snakemake runs this once, inside the freshly created conda environment
# (--sdm conda), from the directory snakemake was started in: the repository
# root.  It installs the glfs package of this repository into the environment
# (editable, so later edits of src/glfs are seen; no dependencies, they come
# from the environment file; no network needed).
set -euo pipefail
if ! grep -q '^name = "glfs"' pyproject.toml 2>/dev/null; then
    echo "post-deploy: run snakemake from the repository root (no glfs pyproject.toml in $PWD)" >&2
    exit 1
fi
python -m pip install --no-deps --no-build-isolation --no-index -e .
