"""Run the sources of the compiled core whenever they are not what was compiled.

``kafkalab/core_build.py`` compiles the simulator's core with mypyc next to its sources and
records each source's digest in ``kafkalab/_core.json``. Python would load a compiled module in
preference to its source, so an edited source would silently not run. This module, imported
first by ``kafkalab/__init__.py``, compares the digests and, when a source changed (or
``KAFKALAB_PURE`` is set, or the build is for another Python), sends the import of every compiled
module to its source instead: the two never mix. Importing it is what installs the check.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec, SourceFileLoader
from importlib.util import spec_from_file_location
from pathlib import Path
from types import ModuleType

__all__ = ["PYTHON", "REASON", "install", "running", "source_digest", "why_sources"]

MANIFEST = "_core.json"
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"  # what a build is for


def source_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _manifest(package: Path) -> dict[str, object] | None:
    try:
        data = json.loads((package / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _source(package: Path, module: str) -> Path:
    return package.parent.joinpath(*module.split(".")).with_suffix(".py")


def why_sources(package: Path) -> str | None:
    """Why the sources of the compiled modules must run (None: the compiled ones may)."""
    return _check(package)[0]


def _check(package: Path) -> tuple[str | None, list[str]]:
    """Why the sources must run (or None), and the modules the manifest lists."""
    data = _manifest(package)
    if data is None:
        return f"{MANIFEST} is missing or unreadable", []
    modules = data.get("modules")
    if not isinstance(modules, dict):
        return f"{MANIFEST} lists no modules", []
    names = [str(m) for m in modules]
    if os.environ.get("KAFKALAB_PURE", "") not in ("", "0"):
        return "KAFKALAB_PURE is set", names
    if data.get("python") != PYTHON:
        return f"compiled for Python {data.get('python')}, this is {PYTHON}", names
    for module, digest in modules.items():
        source = _source(package, str(module))
        if not source.is_file() or source_digest(source) != digest:
            reason = f"{module} changed since it was compiled (python -m kafkalab.core_build)"
            return reason, names
    return None, names


class _Sources(MetaPathFinder):
    """Finds the source of each listed module, ahead of its compiled twin."""

    def __init__(self, sources: dict[str, Path]) -> None:
        self.sources = sources

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        source = self.sources.get(fullname)
        if source is None:
            return None
        loader = SourceFileLoader(fullname, str(source))
        return spec_from_file_location(fullname, source, loader=loader)


def install(package: Path) -> str | None:
    """Send the compiled modules' imports to their sources if they must run; the reason, or
    None when nothing is compiled or the compiled modules match their sources."""
    global _COMPILED
    if not (package / MANIFEST).exists():
        return None
    reason, names = _check(package)
    if reason is None:
        _COMPILED = len(names)
        return None
    sys.meta_path.insert(0, _Sources({name: _source(package, name) for name in names}))
    return reason


def running() -> str:
    """Which core this process runs, in a few words (benchmarks and ``--status`` print it)."""
    if _COMPILED:
        return f"the compiled core ({_COMPILED} modules, each matching its source)"
    if REASON is None:
        return "the sources (nothing is compiled: python -m kafkalab.core_build compiles)"
    return f"the sources ({REASON})"


_COMPILED = 0  # how many compiled modules this process runs
REASON = install(Path(__file__).resolve().parent)  # why the sources run (None: as built)
