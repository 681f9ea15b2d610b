"""The plain-text table the benchmark scripts print (imported by them, not run by `make bench`)."""

from __future__ import annotations

import os
import platform


def table(header: list[str], rows: list[list[str]]) -> str:
    """Columns right-aligned to their widest cell, under a rule."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))
    body = ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join([line, "-" * len(line), *body])


def core() -> str:
    """Which simulator core this process runs: compiled (kafkalab/core_build.py) or sources."""
    from kafkalab._core_guard import running

    return f"core: {running()}"


def machine() -> str:
    """Python, the machine, its load now and the core: what every benchmark's heading says."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"Python {platform.python_version()} on {platform.machine()} {platform.system()}, "
        f"{os.cpu_count()} cores, load average {load}; {core()}"
    )
