"""Run notebooks top to bottom and store their outputs in place, for nbval to compare.

    .venv/bin/python tools/execute_notebooks.py                  # notebooks/ and solutions/
    .venv/bin/python tools/execute_notebooks.py notebooks/01-start-here.ipynb

Each kernel starts in the notebook's own folder, as in JupyterLab, papermill and nbval. Stream
outputs are merged so that a re-run changes the file only where an output really changed.
Widgets are stored by their text form only: their live views carry random model ids (nbval
ignores them) and come back when the learner runs the cell.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
STORED_WITH_OUTPUTS = ("notebooks", "solutions")  # exercises/ are handed out without outputs
KERNEL = "python3"
TIMEOUT_S = 600
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def execute(path: Path) -> None:
    """Run one notebook and write it back with its new outputs."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name=KERNEL,
        timeout=TIMEOUT_S,
        record_timing=False,  # no timestamps in the stored file
        coalesce_streams=True,
        store_widget_state=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            output.get("data", {}).pop(WIDGET_VIEW, None)
    nbformat.write(nb, path)


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or [
        p for folder in STORED_WITH_OUTPUTS for p in sorted((ROOT / folder).glob("*.ipynb"))
    ]
    for path in paths:
        print(f"executing {path}", flush=True)
        execute(path.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
