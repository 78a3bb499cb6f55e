"""What ``verbose`` training prints (private).

- ``verbose=1``: skorch's epoch table on standard output, with its colour
  codes only where they render (a terminal or a notebook), and before it, on
  standard error, two lines saying how the ``penalty`` column is scaled;
- ``verbose=2``: also a per-batch bar that names the epoch.
"""

import re
import sys

import tqdm
from skorch.callbacks import Callback, ProgressBar

__all__ = []

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _renders_colour(stream):
    """Whether ANSI colour codes render on ``stream``: a terminal or Jupyter."""
    try:
        if stream.isatty():
            return True
    except (AttributeError, ValueError):
        return False
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "kernel", None) is not None


def print_table_line(text):
    """The epoch table's sink: ``print``, without colour codes off a terminal."""
    stream = sys.stdout
    if not _renders_colour(stream):
        text = _ANSI.sub("", text)
    print(text, file=stream, flush=True)


class TrainingOutput(Callback):
    """Set up the epoch table when training starts (``verbose >= 1``).

    Parameters
    ----------
    note : str or None
        Lines printed before the table (on standard error), e.g. how
        ``penalty`` is scaled.
    """

    def __init__(self, note=None):
        self.note = note

    def on_train_begin(self, net, **kwargs):
        log = dict(net.callbacks_).get("print_log")
        if log is not None and getattr(log, "sink", None) is print:
            log.sink = print_table_line
        if self.note:
            sys.stdout.flush()
            # On standard error: standard output keeps the table alone.
            print(self.note, file=sys.stderr, flush=True)


class EpochProgressBar(ProgressBar):
    """skorch's per-batch bar, with the epoch number in front."""

    def on_epoch_begin(self, net, dataset_train=None, dataset_valid=None, **kwargs):
        # skorch's own, with a description from the first frame on.
        batches = self.batches_per_epoch
        if batches == "auto":
            batches = self._get_batches_per_epoch(net, dataset_train, dataset_valid)
        elif batches == "count":
            batches = None if len(net.history) <= 1 else len(net.history[-2, "batches"])
        epoch = net.history[-1].get("epoch", len(net.history))
        bar = tqdm.tqdm_notebook if self._use_notebook() else tqdm.tqdm
        self.pbar_ = bar(total=batches, leave=False, desc=f"epoch {epoch}")
