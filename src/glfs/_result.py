"""Transitional: ``glfs/__init__.py`` still imports ``Selection`` from here.

The result type lives in :mod:`glfs.result` (public since 2026-11-27).  Delete this
file once ``glfs/__init__.py`` imports ``from .result import Selection``.
"""

from .result import Selection

__all__ = ["Selection"]
