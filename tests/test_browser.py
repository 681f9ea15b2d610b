"""The cluster explorer in a real browser: JupyterLab on 127.0.0.1, the playground notebook run
in headless Chromium (Debian's), a step button clicked, and the log drawing seen to change.

A screenshot of the page is saved under ``artifacts/browser/`` (not committed). The test
needs /usr/bin/chromium (``apt-get install chromium chromium-driver``; CI installs it) and
playwright, which drives that browser: never ``playwright install``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

NOTEBOOK = ROOT / "notebooks" / "explorer.ipynb"
OVERRIDES = ROOT / "kafkalab" / "lab-overrides.json"
ARTIFACTS = ROOT / "artifacts" / "browser"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
START_TIMEOUT_S = 90
UI_TIMEOUT_MS = 120_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _check_overrides() -> None:
    """make install puts the course's JupyterLab settings (no news prompt, no update check) in
    this environment, where make lab's JupyterLab reads them: the test runs with those."""
    installed = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    if not installed.exists() or json.loads(installed.read_text()) != json.loads(
        OVERRIDES.read_text()
    ):
        pytest.fail(f"{installed} is not kafkalab/lab-overrides.json: run make install")


def _wait_until_up(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"JupyterLab exited ({proc.returncode}):\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(
        f"JupyterLab did not answer {url} in {START_TIMEOUT_S} s:\n{log.read_text()}"
    )


def _stop(proc: subprocess.Popen) -> None:
    """Stop JupyterLab and its kernels: the process group this test started, and only it."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)


def _wait_for_text(page: object, text: str) -> None:
    """Wait until the explorer's text contains ``text`` (cells out of view may be hidden, so
    this reads the DOM rather than what is on screen)."""
    page.wait_for_function(  # type: ignore[attr-defined]
        "text => (document.querySelector('.kafkalab-explorer')?.textContent || '').includes(text)",
        arg=text,
    )


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[str]:
    """JupyterLab serving a copy of the playground notebook (the repository's copy is never
    touched), on a free port of 127.0.0.1, with its own settings and runtime folders."""
    if not os.path.exists(CHROMIUM):
        pytest.skip("chromium not found: apt-get install chromium chromium-driver (CI does)")
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(NOTEBOOK, work / NOTEBOOK.name)
    _check_overrides()
    env = {
        **os.environ,
        "JUPYTER_PREFER_ENV_PATH": "1",
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
    }
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        "--ServerApp.disable_check_xsrf=True",
        f"--ServerApp.root_dir={work}",
        "--LabApp.news_url=None",
    ]
    if os.geteuid() == 0:
        command.append("--allow-root")
    log = tmp_path / "lab.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_until_up(f"{base}/api/status", proc, log)
        yield base
    finally:
        _stop(proc)


@pytest.mark.notebooks  # the playground notebook runs in JupyterLab's kernel
def test_cluster_explorer_in_a_real_browser(lab: str, tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            page.set_default_timeout(UI_TIMEOUT_MS)
            page.goto(f"{lab}/lab/tree/{NOTEBOOK.name}")
            page.locator(".jp-Notebook").first.wait_for()
            # The kernel has started and is idle: the status bar says so.
            page.locator(".jp-StatusBar-Widget", has_text="Idle").first.wait_for()
            page.locator(".lm-MenuBar-item", has_text="Run").first.click()
            page.locator("[data-command='runmenu:run-all']").first.click()
            explorer = page.locator(".kafkalab-explorer").first
            explorer.wait_for(state="attached")
            # The notebook's code cells leave the explorer at step 6.
            _wait_for_text(page, "step 6 of 16")
            explorer.scroll_into_view_if_needed()
            logs = explorer.locator("img.kafkalab-logs")
            logs.wait_for()
            before_src, before_png = logs.get_attribute("src"), logs.screenshot()
            explorer.locator("button.kafkalab-crash").click()  # crash broker 1: a new branch
            _wait_for_text(page, "step 7 of 7: crash 1")
            page.wait_for_function(
                "before => document.querySelector('img.kafkalab-logs').src !== before",
                arg=before_src,
            )
            explorer.scroll_into_view_if_needed()
            after_png = logs.screenshot()
            page.screenshot(path=str(ARTIFACTS / "explorer.png"), full_page=True)
            explorer.screenshot(path=str(ARTIFACTS / "explorer-widget.png"))
            # Nothing popped up over the notebook: JupyterLab's news prompt is a toast.
            toasts = page.locator(".jp-Notification-Toast-info, .Toastify__toast").all_inner_texts()
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "failure.png"), full_page=True)
            raise
        finally:
            browser.close()
    assert toasts == [], f"a notification popped up over the notebook: {toasts}"
    assert before_png != after_png, "the log drawing did not change after the click"
    assert (ARTIFACTS / "explorer.png").stat().st_size > 10_000
