"""Errors of the workflow's data handling (reading, fetching, preparing)."""


class DataError(ValueError):
    """Bad input data: the message names the file and the row/column or key."""
