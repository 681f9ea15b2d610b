"""The compiled core (kafkalab/core_build.py) and its sources: the same traces, and never a mix.

``make install`` compiles the simulator's core with mypyc. The sources stay the reference: the
sources, run on purpose (``KAFKALAB_PURE=1``), must give every recorded trace digest too, and a
compiled module must never run once its source has changed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.machinery import SourceFileLoader
from pathlib import Path

import pytest

import kafkalab
from kafkalab import _core_guard
from kafkalab._core_guard import source_digest, why_sources

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(kafkalab.__file__).resolve().parent
COMPILED = (PACKAGE / _core_guard.MANIFEST).exists() and _core_guard.REASON is None


def _fake_package(tmp_path: Path) -> Path:
    """A package with one module and a manifest that matches it, as a compilation leaves."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    module = package / "fast.py"
    module.write_text("WHICH = 'source'\n")
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    manifest = {"python": version, "modules": {"pkg.fast": source_digest(module)}}
    (package / _core_guard.MANIFEST).write_text(json.dumps(manifest))
    return package


def test_a_matching_build_may_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKALAB_PURE", raising=False)
    assert why_sources(_fake_package(tmp_path)) is None


def test_an_edited_source_sends_imports_to_the_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KAFKALAB_PURE", raising=False)
    package = _fake_package(tmp_path)
    (package / "fast.py").write_text("WHICH = 'edited'\n")
    reason = why_sources(package)
    assert reason is not None and "pkg.fast changed since it was compiled" in reason
    before = list(sys.meta_path)
    try:
        assert _core_guard.install(package) == reason
        finder = sys.meta_path[0]
        spec = finder.find_spec("pkg.fast", None)
        assert spec is not None and isinstance(spec.loader, SourceFileLoader)
        assert spec.origin == str(package / "fast.py")
        assert finder.find_spec("pkg.other", None) is None  # only what was compiled
    finally:
        sys.meta_path[:] = before


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ("pure", "KAFKALAB_PURE is set"),
        ("python", "compiled for Python 2.7"),
        ("missing", "pkg.fast changed since it was compiled"),
        ("garbage", "_core.json is missing or unreadable"),
    ],
)
def test_each_reason_to_run_the_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str, says: str
) -> None:
    monkeypatch.delenv("KAFKALAB_PURE", raising=False)
    package = _fake_package(tmp_path)
    manifest = package / _core_guard.MANIFEST
    if change == "pure":
        monkeypatch.setenv("KAFKALAB_PURE", "1")
    elif change == "python":
        manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "python": "2.7"}))
    elif change == "missing":
        (package / "fast.py").unlink()
    else:
        manifest.write_text("{not json")
    assert says in (why_sources(package) or "")


def test_nothing_compiled_installs_nothing(tmp_path: Path) -> None:
    package = _fake_package(tmp_path)
    (package / _core_guard.MANIFEST).unlink()
    before = list(sys.meta_path)
    assert _core_guard.install(package) is None
    assert sys.meta_path == before


@pytest.mark.skipif(not COMPILED, reason="the core is not compiled here: the sources run anyway")
def test_the_sources_give_every_recorded_trace() -> None:
    """This run uses the compiled core (test_trace_digests checks it); the sources, run on
    purpose in a fresh interpreter, must give the same 113 traces byte for byte."""
    env = {**os.environ, "KAFKALAB_PURE": "1"}
    probe = "import kafkalab, kafkalab.protocol.partition as p; print(p.__file__)"
    where = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert where.stdout.strip().endswith("partition.py"), where.stdout + where.stderr
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "trace_digests.py"), "--diff"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert run.stdout.startswith("0 of "), run.stdout


@pytest.mark.skipif(not COMPILED, reason="the core is not compiled here")
def test_the_compiled_core_is_what_runs() -> None:
    from kafkalab.protocol import partition
    from kafkalab.sim import engine

    for module in (partition, engine):
        assert not str(module.__file__).endswith(".py"), module.__file__
