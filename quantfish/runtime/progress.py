"""Progress of long jobs (perft suites, data generation, training, quantisation reports, matches) on stderr.

A tqdm bar with the count, the rate and the time left. On a terminal it redraws in place; written to a file or a
pipe (a job in the background with its stderr in a log), it gives one plain line every ``LOG_INTERVAL`` seconds
instead, so the log stays readable.
"""
from __future__ import annotations

import sys

from tqdm import tqdm

LOG_INTERVAL = 30.0


class _Lines:
    """A stream for tqdm that turns each redraw into a line of its own."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text):
        text = text.replace("\r", "").strip("\n")
        if text.strip():
            self.stream.write(text + "\n")

    def flush(self):
        self.stream.flush()


def progress_bar(total=None, desc: str = "", unit: str = "it", stream=None, enabled: bool = True, **kwargs) -> tqdm:
    """A tqdm bar on ``stream`` (stderr by default); ``enabled=False`` gives one that shows nothing."""
    stream = sys.stderr if stream is None else stream
    tty = hasattr(stream, "isatty") and stream.isatty()
    options = dict(total=total, desc=desc, unit=unit, unit_scale=True, disable=not enabled, leave=True,
                   dynamic_ncols=tty, smoothing=0.05)
    if tty:
        options.update(file=stream, mininterval=0.5)
    else:
        options.update(file=_Lines(stream), mininterval=LOG_INTERVAL, ncols=100, ascii=True)
    options.update(kwargs)
    return tqdm(**options)
