"""Record helpers shared by the study results: tidy rows, tables, p-values."""

import csv
import io

import numpy as np

from ._deps import import_or_hint

__all__ = []


def _import_pandas(caller):
    return import_or_hint("pandas", feature="tables", purpose=caller)


def _markdown_table(header, rows):
    """A GitHub Markdown table from a header and rows of cells."""
    lines = ["| " + " | ".join(str(h) for h in header) + " |"]
    lines.append("|" + "|".join("---" for _ in header) + "|")
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _frame_table(frame, fmt):
    """``frame`` as a Markdown table, its index (names or levels) first."""
    names = [name or "" for name in frame.index.names]
    rows = [
        [*(key if isinstance(key, tuple) else (key,)), *(format(v, fmt) for v in row)]
        for key, row in zip(frame.index, frame.to_numpy(), strict=True)
    ]
    return _markdown_table([*names, *frame.columns], rows)


def _format_p(p):
    if np.isnan(p):
        return "n/a"
    return f"{p:.2g}" if p >= 1e-3 else f"{p:.1e}"


class _Records:
    """Plain-data base: a list of dicts with the same keys."""

    _columns = ()

    def _metric(self, metric):
        if metric is None:
            return self.metrics[0]
        if metric not in self.metrics:
            raise ValueError(
                f"Unknown metric {metric!r}; the study has {self.metrics}."
            )
        return metric

    def to_frame(self):
        """The records as a tidy :class:`pandas.DataFrame`.

        Returns
        -------
        frame : pandas.DataFrame
            One row per record, one column per field.
        """
        pd = _import_pandas("to_frame")
        return pd.DataFrame.from_records(self.records, columns=list(self._columns))

    def to_csv(self, path_or_buf=None):
        """Write the tidy records as CSV.

        Parameters
        ----------
        path_or_buf : str, path or file-like, default=None
            Where to write; ``None`` returns the text.

        Returns
        -------
        text : str or None
            The CSV text when ``path_or_buf`` is None.
        """
        buf = io.StringIO()
        writer = csv.DictWriter(
            buf, fieldnames=list(self._columns), lineterminator="\n"
        )
        writer.writeheader()
        writer.writerows(self.records)
        text = buf.getvalue()
        if path_or_buf is None:
            return text
        if hasattr(path_or_buf, "write"):
            path_or_buf.write(text)
        else:
            with open(path_or_buf, "w", encoding="utf-8", newline="") as f:
                f.write(text)
        return None

    def __len__(self):
        return len(self.records)
