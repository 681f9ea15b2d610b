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

__all__ = ["REASON", "install", "source_digest", "why_sources"]

MANIFEST = "_core.json"


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
    data = _manifest(package)
    if data is None:
        return f"{MANIFEST} is missing or unreadable"
    if os.environ.get("KAFKALAB_PURE", "") not in ("", "0"):
        return "KAFKALAB_PURE is set"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    if data.get("python") != version:
        return f"compiled for Python {data.get('python')}, this is {version}"
    modules = data.get("modules")
    if not isinstance(modules, dict):
        return f"{MANIFEST} lists no modules"
    for module, digest in modules.items():
        source = _source(package, str(module))
        if not source.is_file() or source_digest(source) != digest:
            return f"{module} changed since it was compiled (python -m kafkalab.core_build)"
    return None


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
    if not (package / MANIFEST).exists():
        return None
    reason = why_sources(package)
    if reason is None:
        return None
    data = _manifest(package) or {}
    modules = data.get("modules")
    names = [str(m) for m in modules] if isinstance(modules, dict) else []
    sys.meta_path.insert(0, _Sources({name: _source(package, name) for name in names}))
    return reason


REASON = install(Path(__file__).resolve().parent)  # why the sources run (None: as built)
