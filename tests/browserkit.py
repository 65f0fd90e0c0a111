"""Real-browser test kit: Debian's Chromium driven by Playwright, and JupyterLab or Voilà servers
started by the test on a free local port over a scratch copy of the notebooks.

A test module loads it with `pytest_plugins = ["browserkit"]` and asks for the fixtures:
`browser` (one Chromium per session), `tab` (a fresh page that records console messages, page
errors and every request; a failing test gets the page's text and console in its report and a
screenshot), `workspace` (the scratch tree), `lab` and `voila_app` (running servers). Nothing is
downloaded at run time: `playwright install` is never needed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import Browser, Locator, Page, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeout

REPO = Path(__file__).resolve().parents[1]
SCREENSHOTS = REPO / "results" / "screenshots"
BIN = Path(sys.executable).parent
# Without the background-networking flags Chromium keeps calling home, which floods a closed network.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ROOT_FLAG = ["--allow-root"] if os.geteuid() == 0 else []
SERVER_START_S = 90.0


@dataclass
class Tab:
    """A page and what it did: console lines ("type: text"), uncaught errors and requested URLs."""

    page: Page
    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def screenshot(self, name: str, element: Locator | None = None, full_page: bool = True) -> Path:
        """Save results/screenshots/<name>.png (evidence, not committed): the element, or the page."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        if element is not None:
            element.screenshot(path=path)
        else:
            self.page.screenshot(path=path, full_page=full_page)
        return path

    def dump(self) -> str:
        """The page's URL, visible text, console and errors: what a failure message needs."""
        try:
            text = self.page.inner_text("body", timeout=5_000)
        except Exception as e:  # noqa: BLE001  (a crashed or closed page still gets its console reported)
            text = f"(no page text: {e})"
        return "\n".join([f"url: {self.page.url}", "--- console", *self.console, "--- page errors", *self.errors,
                          "--- page text", text[-6_000:]])


@dataclass
class Server:
    """A server started by a fixture: its base URL (ends with '/') and its log file."""

    url: str
    log: Path

    def log_tail(self, chars: int = 4_000) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-chars:]


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless. Without it the browser tests fail, never skip: a skipped test
    would pass a suite that never opened the notebook, the labeller or the report in a browser."""
    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("no Chromium on PATH: install it with `apt-get install -y chromium` (.ci/run does) to run the "
                    "browser tests", pytrace=False)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


TAB = pytest.StashKey[Tab]()


@pytest.fixture
def tab(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Tab]:
    """A fresh 1280x900 page in its own context; its records feed the failure report."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    t = Tab(page)
    page.on("console", lambda m: t.console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: t.errors.append(str(e)))
    page.on("request", lambda r: t.requests.append(r.url))
    request.node.stash[TAB] = t
    yield t
    context.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A failed test that used `tab` reports the page's text and console, and leaves a screenshot."""
    report = yield
    t = item.stash.get(TAB, None)
    if report.failed and call.when != "teardown" and t is not None:
        report.sections.append(("browser page", t.dump()))
        try:
            report.sections.append(("browser screenshot", str(t.screenshot(f"{item.name}-failure"))))
        except Exception as e:  # noqa: BLE001  (no screenshot must not hide the failure itself)
            report.sections.append(("browser screenshot", f"none: {e}"))
    return report


@pytest.fixture(scope="session")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """<tmp>/notebooks is a copy of the repo's notebooks and <tmp>/data links to the repo's data, so
    the notebooks' relative paths (../data, ../results/cache) resolve and nothing they write
    (results, caches, checkpoints) lands in the repo."""
    root = tmp_path_factory.mktemp("workspace")
    shutil.copytree(REPO / "notebooks", root / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    (root / "data").symlink_to(REPO / "data")
    (root / "results").mkdir()
    return root


def set_parameters(notebook: Path, source: str) -> None:
    """Replace the source of the notebook's one cell tagged 'parameters' (in the scratch copy)."""
    nb = nbformat.read(notebook, as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"{notebook} needs exactly one cell tagged 'parameters', found {len(cells)}")
    cells[0].source = source
    nbformat.write(nb, notebook)


# The notebook on show (run_all opens it with `?reset`, so Lab restores no tab an earlier test left open).
ACTIVE = ".jp-NotebookPanel:not(.lm-mod-hidden)"
# Every code cell of it has run once: a number in each prompt, none queued or running ("[*]").
ALL_RAN = f"""() => {{ const p = [...document.querySelectorAll('{ACTIVE} .jp-CodeCell .jp-InputArea-prompt')];
  return p.length > 0 && p.every(e => /^\\[\\d+\\]:$/.test(e.textContent.trim())); }}"""
STARTED = (f"() => [...document.querySelectorAll('{ACTIVE} .jp-CodeCell .jp-InputArea-prompt')]"
           ".some(e => /[*\\d]/.test(e.textContent))")


def run_all(page: Page, url: str, timeout_s: float) -> None:
    """Open the notebook at `url` in Lab, wait for its kernel, run all cells and wait until every one ran.
    `?reset` empties the workspace first: the tabs an earlier test left open would otherwise be restored
    behind it, still loading, and take the clicks meant for this one."""
    page.goto(url + ("&" if "?" in url else "?") + "reset")
    idle = page.get_by_text(re.compile(r"^Python 3 \(ipykernel\) \| Idle$"))  # the status bar's kernel item
    panel = page.locator(ACTIVE)
    panel.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]').wait_for(timeout=timeout_s * 1000)
    idle.wait_for(timeout=timeout_s * 1000)
    for _ in range(5):  # right after start-up Lab may ignore the command: run again until it starts
        panel.locator(".jp-Spinner").first.wait_for(state="hidden", timeout=timeout_s * 1000)  # loading: no clicks
        panel.locator(".jp-Notebook .jp-Cell").first.click()  # Run All acts on the notebook in focus
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        try:
            page.wait_for_function(STARTED, timeout=10_000)
            break
        except PlaywrightTimeout:
            continue
    page.wait_for_function(ALL_RAN, timeout=timeout_s * 1000)
    idle.wait_for(timeout=timeout_s * 1000)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(home: Path) -> dict[str, str]:
    """Offline model loading, and Jupyter config, settings and workspaces of our own under `home`,
    so a developer's settings neither leak in nor get changed. The settings turn off the news
    and update checks (network) and notebook windowing (every cell stays in the DOM)."""
    settings = home / "lab-settings"
    for plugin, values in {"apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
                           "notebook-extension/tracker": {"windowingMode": "none"}}.items():
        path = settings / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values), encoding="utf-8")
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
            "JUPYTERLAB_SETTINGS_DIR": str(settings), "JUPYTERLAB_WORKSPACES_DIR": str(home / "lab-workspaces"),
            "JUPYTER_PATH": str(REPO / "app")}  # app/voila/templates/offline, as in `make app`


@contextmanager
def serve(command: list[str], port: int, cwd: Path, log: Path) -> Iterator[Server]:
    """Run `command` in its own process group, wait until it accepts connections on `port`, and
    kill the whole group (kernels included) at the end."""
    with log.open("wb") as out:
        proc = subprocess.Popen(command, cwd=cwd, env=server_env(log.parent / f"{log.stem}-home"),
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    server = Server(f"http://127.0.0.1:{port}/", log)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{command[0]} exited with {proc.returncode}:\n{server.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{command[0]} not listening on {port} after {SERVER_START_S} s:\n"
                                   f"{server.log_tail()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.3)
        yield server
    finally:
        stop(proc)


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM lets the server shut its kernels down; SIGKILL the group if it does not."""
    for sig, wait_s in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="session")
def lab(workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """JupyterLab on <workspace>/notebooks, no token or password; open `lab.url + "lab/tree/<name>"`."""
    port = free_port()
    command = [str(BIN / "jupyter-lab"), f"--port={port}", "--ServerApp.ip=127.0.0.1", "--ServerApp.open_browser=False",
               "--IdentityProvider.token=", "--PasswordIdentityProvider.hashed_password=",
               "--ServerApp.port_retries=0", f"--ServerApp.root_dir={workspace / 'notebooks'}",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", *ROOT_FLAG]
    with serve(command, port, workspace / "notebooks", tmp_path_factory.mktemp("lab") / "lab.log") as server:
        yield server


def voila_command(notebook: Path, port: int) -> list[str]:
    """Voilà as `make app` runs it (the repo's offline template, no code shown), on a fixed local
    port; the template is found through JUPYTER_PATH (see `server_env`)."""
    return [str(BIN / "voila"), str(notebook), f"--port={port}", "--no-browser", "--Voila.ip=127.0.0.1",
            "--Voila.port_retries=0", "--template=offline", "--strip_sources=True"]


@pytest.fixture(scope="session")
def voila_app(workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Voilà serving <workspace>/notebooks/app.ipynb; each page load runs the notebook afresh, so
    a test may `set_parameters` on the copy before opening `voila_app.url`."""
    port = free_port()
    notebook = workspace / "notebooks" / "app.ipynb"
    with serve(voila_command(notebook, port), port, notebook.parent,
               tmp_path_factory.mktemp("voila") / "voila.log") as server:
        yield server
