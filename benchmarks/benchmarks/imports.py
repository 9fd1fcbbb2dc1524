"""The cost of importing the library in a fresh interpreter: the package, and its AnnData face
(``glfs.tl``, which loads anndata and scikit-learn).  asv's ``timeraw_*`` runs the returned code in a
new process each time.
"""

from __future__ import annotations


def timeraw_import_glfs():
    return "import glfs"


def timeraw_import_glfs_tl():
    return "import glfs; glfs.tl"
