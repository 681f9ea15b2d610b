"""The plain-text table the benchmark scripts print (imported by them, not run by `make bench`)."""

from __future__ import annotations


def table(header: list[str], rows: list[list[str]]) -> str:
    """Columns right-aligned to their widest cell, under a rule."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))
    body = ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join([line, "-" * len(line), *body])
