"""Progress of long loops in the log: one INFO line at most every ``PROGRESS_EVERY_S`` seconds."""

from __future__ import annotations

import time

__all__ = ["PROGRESS_EVERY_S", "Progress"]

#: Seconds between two progress lines of one loop (the first comes after this long).
PROGRESS_EVERY_S = 30.0


class Progress:
    """Log ``"<what>: iteration i of total, <detail>, <t> s"`` when ``every_s`` seconds passed since the last line.

    Parameters
    ----------
    logger : logging.Logger
    what : str
        Names the loop, e.g. ``"q_alpha"``.
    total : int
        The iteration limit.
    every_s : float, optional
        Default :data:`PROGRESS_EVERY_S` (read at construction).
    """

    def __init__(self, logger, what: str, total: int, every_s: float | None = None):
        self.log, self.what, self.total = logger, what, int(total)
        self.every_s = PROGRESS_EVERY_S if every_s is None else float(every_s)
        self.t0 = self.last = time.perf_counter()

    def step(self, i: int, detail: str = "") -> None:
        """Report iteration ``i`` (1-based) if it is time to."""
        now = time.perf_counter()
        if now - self.last >= self.every_s:
            self.last = now
            extra = f", {detail}" if detail else ""
            self.log.info("%s: iteration %d of %d%s, %.0f s", self.what, i, self.total, extra, now - self.t0)
