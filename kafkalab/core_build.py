"""Compile the simulator's core with mypyc, in place; or remove what it compiled.

The sources stay the reference: the compiled modules are the same code, type-checked by mypy and
turned into C by mypyc (the compiler mypy and black ship with), and every trace they give is byte
for byte the one the sources give (``tests/test_compiled.py``). ``make install`` compiles them;
nothing needs them.

    python -m kafkalab.core_build              # compile (2-3 minutes on 2 cores)
    python -m kafkalab.core_build --if-missing # compile unless compiled already (make install)
    python -m kafkalab.core_build --clean      # remove the compiled modules: the sources run
    python -m kafkalab.core_build --status     # which of the two runs, and why

The compiled modules sit next to their sources (``kafkalab/protocol/partition.*.so``), with
their shared runtime (``kafkalab/_core__mypyc.*.so``) and a manifest of the sources they were
built from (``kafkalab/_core.json``). When a source no longer matches the manifest (it was edited,
or a checkout changed it), ``import kafkalab`` runs the sources of every compiled module instead,
so an edit always takes effect; ``KAFKALAB_PURE=1`` does the same on purpose.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

from kafkalab._core_guard import MANIFEST as MANIFEST_NAME
from kafkalab._core_guard import PYTHON, running, source_digest

PACKAGE = Path(__file__).resolve().parent
ROOT = PACKAGE.parent

# The modules every simulated event runs through. Not here: the Cluster facade (the checks
# attach to it), the step vocabulary (tests swap its registry), and everything around a run
# (scenarios, widgets, plots, datasets, grading), whose speed does not matter.
CORE = (
    "protocol/[!_]*.py",  # not __init__: a package stays a folder of sources
    "sim/engine.py",
    "sim/trace.py",
    "sim/network.py",
    "sim/clients.py",
    "sim/brokers.py",
    "sim/topics.py",
    "sim/settings.py",
    "sim/views.py",
    "sim/control.py",
    "sim/outcome.py",
    "sim/timed.py",
    "check/invariants.py",
    "check/monitor.py",
    "check/logs.py",
    "check/report.py",
)
GROUP = "kafkalab._core"  # the shared runtime: kafkalab/_core__mypyc.<suffix>
MANIFEST = PACKAGE / MANIFEST_NAME
MYPY_CONFIG = """\
[mypy]
python_version = {version}
check_untyped_defs = true
ignore_missing_imports = true
"""


def core_sources() -> list[Path]:
    return sorted({p for pattern in CORE for p in PACKAGE.glob(pattern)})


def compiled_files() -> list[Path]:
    """Everything a compilation leaves in the package."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    found = [p for p in PACKAGE.rglob(f"*{suffix}") if p.is_file()]
    return sorted([*found, *([MANIFEST] if MANIFEST.exists() else [])])


def clean() -> int:
    files = compiled_files()
    for path in files:
        path.unlink()
    print(f"removed {len(files)} compiled files: the sources run")
    return 0


def compile_core(opt_level: str) -> int:
    try:
        from mypyc.build import mypycify
        from setuptools import Distribution
    except ImportError as err:
        print(f"cannot compile: {err.name} is not installed (pip install mypy setuptools)")
        return 1

    clean()
    sources = core_sources()
    # digests first: a source edited while the compiler runs then counts as changed
    modules = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts): source_digest(p) for p in sources
    }
    with tempfile.TemporaryDirectory(prefix="kafkalab-mypyc-") as tmp:
        config = Path(tmp) / "mypy.ini"
        config.write_text(MYPY_CONFIG.format(version=PYTHON))
        here = Path.cwd()
        os.chdir(ROOT)  # mypyc names the modules by their paths from here
        try:
            paths = [str(p.relative_to(ROOT)) for p in sources]
            extensions = mypycify(
                ["--config-file", str(config), *paths],
                opt_level=opt_level,
                group_name=GROUP,
                target_dir=str(Path(tmp) / "c"),
            )
            dist = Distribution({"name": "kafkalab-core", "ext_modules": extensions})
            build = dist.get_command_obj("build_ext")
            build.inplace = True
            build.build_temp = str(Path(tmp) / "temp")
            build.parallel = os.cpu_count() or 1
            dist.run_command("build_ext")
        finally:
            os.chdir(here)
    MANIFEST.write_text(json.dumps({"python": PYTHON, "modules": modules}, indent=1) + "\n")
    shutil.rmtree(ROOT / "build", ignore_errors=True)
    print(f"compiled {len(modules)} modules of the simulator's core with mypyc")
    return 0


def status() -> int:
    print(f"this Python runs {running()}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--clean", action="store_true", help="remove the compiled modules")
    group.add_argument("--status", action="store_true", help="say which of the two runs")
    group.add_argument(
        "--if-missing",
        action="store_true",
        help="compile only if nothing is compiled; a failure leaves the sources running",
    )
    parser.add_argument("--opt-level", default="3", choices="0123", help="C optimisation")
    args = parser.parse_args(argv)
    if args.clean:
        return clean()
    if args.status:
        return status()
    if args.if_missing:
        if MANIFEST.exists():
            return status()
        try:
            code = compile_core(args.opt_level)
        except Exception as err:  # noqa: BLE001 - no compiler, no headers: the sources run
            clean()
            print(f"could not compile the core ({type(err).__name__}: {err}); the sources run")
            return 0
        if code != 0:
            clean()
            print("could not compile the core; the sources run")
        return 0
    return compile_core(args.opt_level)


if __name__ == "__main__":
    sys.exit(main())
