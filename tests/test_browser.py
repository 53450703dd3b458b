"""End to end in a real browser: JupyterLab on localhost, headless Chromium (Debian's ``chromium``)
driven by Playwright, opens each notebook of notebooks/ that has expectations below, runs all its
cells the way a person would (Run → Run All Cells), and checks what appears on the page. A
screenshot of every run is saved in the test's tmp folder and copied to test-output/.

Needs /usr/bin/chromium (.ci/run installs it) and the ``playwright`` package; Playwright's own
browser downloads are never used (``executable_path``).
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
import urllib.request
import uuid
from pathlib import Path

import nbformat
import pytest

from kernel_helpers import PROGRESS_CELL
from mlsql_ray.kernel.install import shipped_spec, write_spec

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
OUTPUT = ROOT / "test-output"
LABEXTENSION = ROOT / "labextension" / "mlsql-ray-lang"  # the built MLSQL mode (labextension/: npm run build)

# What must be on the page once each notebook has run (regexes over the notebook's text), figures
# on it with their least value (a regex whose group is the figure), how long running it may take,
# and how many images (the training plots) must be visible in outputs.
# A notebook added to notebooks/ needs an entry here or in NOT_IN_BROWSER.
EXPECTED = {
    "quickstart.ipynb": {"timeout": 120, "texts": [r"mean_pixel", r"\(version 0, mode overwrite\)", r"WRITE"]},
}
# Notebooks the browser run leaves out, and why (each still runs headless in tests/test_kernel.py).
NOT_IN_BROWSER = {
    "mnist_distributed.ipynb": "trains for a minute or more; run by nbclient in tests/test_kernel.py, which checks "
                               "its accuracy, its plot and that it writes no stderr. Here the browser opens it "
                               "(test_the_mlsql_mode_colours_and_edits_the_mnist_notebook) and shows a training's "
                               "live display ending in a plot (test_a_training_display_updates_in_place_in_jupyterlab)",
    "sql_training.ipynb": "SQL cells only, as quickstart's; also run by nbclient and the CLI in "
                          "tests/test_sql_training_notebook.py; in the browser it would add minutes of fitting",
    "mlsql_magic.ipynb": "a Python-kernel notebook (the %%mlsql magic), run by nbclient in tests/test_kernel.py",
}

NEEDS_CHROMIUM = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium (.ci/run installs it)")
NOTEBOOKS = [p for p in sorted((ROOT / "notebooks").glob("*.ipynb")) if p.name in EXPECTED]


def test_every_notebook_is_opened_in_the_browser():
    """The fast tier's part of this file: every notebook in notebooks/ is either opened in the
    browser (EXPECTED) or left out with a reason (NOT_IN_BROWSER), and no entry names a notebook
    that is gone."""
    assert not set(EXPECTED) & set(NOT_IN_BROWSER)
    assert sorted([*EXPECTED, *NOT_IN_BROWSER]) == sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kernel_pids(runtime_dir: Path) -> list[int]:
    """Processes started with a connection file in our runtime dir: the kernels of our JupyterLab."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if str(runtime_dir) in cmdline and "mlsql_ray.kernel" in cmdline:
            pids.append(int(proc.name))
    return pids


class JupyterLab:
    """``jupyter lab`` on a random localhost port with token auth, over a temp root folder; its
    kernels join the Ray at ``ray_address`` (the test run's) instead of each starting one."""

    def __init__(self, base: Path, ray_address: str):
        self.root = base / "root"
        self.root.mkdir()
        shutil.copytree(ROOT / "notebooks", self.root / "notebooks",
                        ignore=shutil.ignore_patterns("warehouse", ".ipynb_checkpoints"))
        shutil.copytree(ROOT / "sample_data", self.root / "sample_data")  # the notebooks' ../sample_data
        self.runtime = base / "runtime"
        jupyter_path = base / "jupyter"
        write_spec(jupyter_path / "kernels" / "mlsql")  # this checkout's kernel, for this venv's Python
        # and its JupyterLab extension (the MLSQL mode), found before any installed one of that name
        (jupyter_path / "labextensions").mkdir()
        (jupyter_path / "labextensions" / LABEXTENSION.name).symlink_to(LABEXTENSION)
        # no "get notified about Jupyter news?" toast over the outputs
        settings = base / "config" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True)
        (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
        self.port = _free_port()
        self.token = uuid.uuid4().hex
        env = {**os.environ,
               "JUPYTER_PATH": os.pathsep.join(p for p in (str(jupyter_path), os.environ.get("JUPYTER_PATH")) if p),
               "JUPYTER_RUNTIME_DIR": str(self.runtime),
               "JUPYTER_CONFIG_DIR": str(base / "config"),
               "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
               "MLSQL_WAREHOUSE": str(base / "warehouse"),
               "MLSQL_RAY_ADDRESS": ray_address}
        self.log = open(base / "jupyterlab.log", "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
             f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}", "--ServerApp.port_retries=0",
             "--allow-root", "--ServerApp.terminals_enabled=False", "--LabApp.extension_manager=readonly",
             "--expose-app-in-browser", "--LabApp.news_url=None",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_ready(timeout=90)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def api(self, path: str, method: str = "GET"):
        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
            return json.loads(body) if body else None

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.process.returncode}: see {self.log.name}")
            try:
                self.api("/api/status")
                return
            except OSError:
                time.sleep(0.3)
        raise TimeoutError(f"jupyter lab did not answer in {timeout} s")

    def stop(self) -> None:
        """Shut down our kernels and the server; kill, by pid, whatever of ours is left."""
        try:
            for kernel in self.api("/api/kernels"):
                self.api(f"/api/kernels/{kernel['id']}", method="DELETE")
        except OSError:
            pass
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)
        for pid in _kernel_pids(self.runtime):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.log.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory, ray_address):
    server = JupyterLab(tmp_path_factory.mktemp("lab"), ray_address)
    yield server
    server.stop()
    assert not _kernel_pids(server.runtime), "a kernel outlived JupyterLab"


@pytest.fixture(scope="module")
def browser():
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


KERNEL_IDLE = """() => {
    const kernel = window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel;
    return !!kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle';
}"""

ALL_CELLS_RAN = """() => {
    const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
    return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
}"""


NOTEBOOK_PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"


def run_all_cells(page, lab: JupyterLab, path: str, timeout: float) -> str:
    """Open the notebook at ``path`` (relative to the lab's root), run all its cells the way a
    person would, and return the notebook's text on the page once every cell has run."""
    page.goto(f"{lab.url}/lab/tree/{path}?token={lab.token}&reset")
    # the kernel named in the notebook starts by itself, and shows in the toolbar
    page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=60_000)
    page.wait_for_function(
        f"""() => [...document.querySelectorAll('{NOTEBOOK_PANEL} .jp-Toolbar-kernelName')]
                 .some(e => e.textContent.includes('MLSQL (Ray)'))""", timeout=60_000)
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.commands.hasCommand('notebook:run-all-cells')",
                           timeout=30_000)
    # and waits for it to be up (the toolbar's circle empty): Run All while the kernel still starts
    # queued nothing once, on a loaded machine (the cells stayed "[ ]")
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)
    # Run → Run All Cells, as a person would
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name=re.compile(r"^Run All Cells")).click()
    page.wait_for_function(ALL_CELLS_RAN, timeout=timeout * 1000)
    page.wait_for_timeout(500)  # the last outputs render
    return page.locator(f"{NOTEBOOK_PANEL} .jp-Notebook").inner_text()


def shown_plots(page) -> list[dict]:
    """The PNG images in the open notebook's outputs that the browser drew (a size, some data)."""
    plots = page.eval_on_selector_all(
        f"{NOTEBOOK_PANEL} .jp-OutputArea-output img[src^='data:image/png']",
        "images => images.map(i => ({length: i.src.length, width: i.naturalWidth, height: i.naturalHeight}))")
    return [p for p in plots if p["width"] > 0 and p["height"] > 0 and p["length"] > 100]


def stderr_blocks(page) -> list[str]:
    """The open notebook's stderr outputs: the notebooks' code writes none, so any would be an
    error or a library's warning the user did not cause (tqdm's "IProgress not found" under the
    first training was one)."""
    return page.locator(f'{NOTEBOOK_PANEL} .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
                        ).all_inner_texts()


def screenshot(page, tmp_path: Path, name: str) -> None:
    shot = tmp_path / name
    page.screenshot(path=str(shot), full_page=True)
    OUTPUT.mkdir(exist_ok=True)
    shutil.copy(shot, OUTPUT / shot.name)


@pytest.mark.slow
@NEEDS_CHROMIUM
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_in_jupyterlab(notebook, lab, browser, tmp_path):
    expected = EXPECTED[notebook.name]
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    try:
        text = run_all_cells(page, lab, f"notebooks/{notebook.name}", expected["timeout"])
        for pattern in expected["texts"]:
            assert re.search(pattern, text), f"{pattern!r} is not on the page"
        assert page.locator(".jp-OutputArea-output .mlsql-table table").count() >= 1, "no table output"
        assert stderr_blocks(page) == []
    finally:
        screenshot(page, tmp_path, f"{notebook.stem}.png")
        page.close()


@pytest.mark.slow
@NEEDS_CHROMIUM
def test_a_training_display_updates_in_place_in_jupyterlab(lab, browser, tmp_path):
    """What a training cell shows (mlsql_ray.progress: one display, updated every round, ending as
    a plot), drawn by JupyterLab: the events of a three-round run, sent by a driver-side Python
    cell, so the browser's part is proven without a minute of training (the MNIST notebook's own
    run, with its real plot, is tests/test_kernel.py's)."""
    kernelspec = {"name": "mlsql", "display_name": shipped_spec()["display_name"], "language": "mlsql"}
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PROGRESS_CELL)], metadata={"kernelspec": kernelspec})
    nbformat.write(notebook, lab.root / "training_display.ipynb")
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    try:
        text = run_all_cells(page, lab, "training_display.ipynb", 120)
        assert re.search(r"training done: 3 rounds in 1\.5 s, final loss 0\.3333, accuracy 0\.8000", text), text
        assert "round 1/3" not in text  # one display updated in place: the rounds' lines were replaced, not added
        assert len(shown_plots(page)) == 1
        assert stderr_blocks(page) == []
    finally:
        screenshot(page, tmp_path, "training_display.png")
        page.close()


# -- the MLSQL mode (labextension/) ------------------------------------------------------------------

def _cell_js(body: str) -> str:
    """A function of [cell index, ...args] over that cell of the open notebook (``cell`` in ``body``)."""
    return f"""([index, ...args]) => {{
        const cell = window.jupyterapp.shell.currentWidget.content.widgets[index];
        {body}
    }}"""


CLASS_OF = _cell_js("""const [text] = args;
        const span = [...cell.node.querySelectorAll('.cm-line span')].find(s => s.textContent === text);
        return span ? span.className : null;""")
SOURCE = _cell_js("return cell.model.sharedModel.getSource();")
SHOW = _cell_js("cell.node.scrollIntoView(); return true;")
MIME_TYPE = _cell_js("return cell.model.mimeType;")
MATCHED_BRACKETS = _cell_js("return [...cell.node.querySelectorAll('.cm-matchingBracket')].map(e => e.textContent);")
A_PAIR_MATCHED = _cell_js("return cell.node.querySelectorAll('.cm-matchingBracket').length === 2;")


@pytest.mark.slow
@NEEDS_CHROMIUM
def test_the_mlsql_mode_colours_and_edits_the_mnist_notebook(lab, browser):
    """The extension loads (no console error), MLSQL cells get its colours and --%python cells
    Python's, brackets match, and "toggle comment" (Ctrl+/) writes '--' in MLSQL and '#' in Python.
    The cells (of notebooks/mnist_distributed.ipynb): 1 loads, 3 is the seed's Python, 12 selects.
    JupyterLab gives every keyword one class; MLSQL's statement words get the mode's own class too
    (cm-mlsql-statement), so a `load` and Python's `import` are told apart."""
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    console = []
    page.on("console", lambda message: console.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: console.append(str(error)))
    try:
        page.goto(f"{lab.url}/lab/tree/notebooks/mnist_distributed.ipynb?token={lab.token}&reset")
        page.wait_for_selector(".jp-Notebook .jp-CodeCell .cm-line", timeout=60_000)
        page.wait_for_function("() => window.jupyterapp.isPluginActivated('mlsql-ray-lang:plugin')", timeout=30_000)
        page.wait_for_function(CLASS_OF, arg=[1, "load"], timeout=30_000)  # the mode is loaded lazily
        assert page.evaluate(MIME_TYPE, [1]) == "text/x-mlsql"

        statement = page.evaluate(CLASS_OF, [1, "load"])
        keyword = page.evaluate(CLASS_OF, [1, "as"])  # JupyterLab's class of every keyword
        assert keyword and set(statement.split()) == {keyword, "cm-mlsql-statement"}  # a keyword to the theme, and MLSQL's
        assert page.evaluate(CLASS_OF, [1, "!python"]) == statement
        assert page.evaluate(CLASS_OF, [1, "parquet"]) not in (None, keyword, statement)  # the format
        page.evaluate(SHOW, [12])
        page.wait_for_function(CLASS_OF, arg=[12, "cast"], timeout=10_000)
        assert page.evaluate(CLASS_OF, [12, "select"]) == statement  # the statement's word, then Spark SQL's
        assert page.evaluate(CLASS_OF, [12, "cast"]) == keyword
        page.evaluate(SHOW, [3])  # CodeMirror draws the lines in view (the outputs of a run push them down)
        page.wait_for_function(CLASS_OF, arg=[3, "connect"], timeout=10_000)
        annotation = page.evaluate(CLASS_OF, [3, "--%python"])
        comment = page.evaluate(CLASS_OF, [3, "# The seed's own loop, with Keras 3 spellings and pixels scaled to [0, 1]. "
                                              "Its flaw is kept on"])
        # Python's keywords are keywords, not MLSQL's statement words
        assert page.evaluate(CLASS_OF, [3, "import"]) == page.evaluate(CLASS_OF, [3, "def"]) == keyword != statement
        # MLSQL's words are not keywords in Python: `connect` in `RayContext.connect(globals(), None)`
        # is an attribute there, and '#' starts a comment, unlike in MLSQL
        connect = page.evaluate(CLASS_OF, [3, "connect"])
        classes = {keyword, statement, annotation, comment, connect}
        assert len(classes - {None}) == 5, classes

        # brackets: the cursor after `connect(globals(), None)` and inside `mnist_predict(image)`
        page.locator(".jp-CodeCell .cm-line", has_text="ray_context = RayContext.connect(globals(), None)").first.click()
        page.keyboard.press("End")
        page.wait_for_function(A_PAIR_MATCHED, arg=[3], timeout=10_000)
        assert page.evaluate(MATCHED_BRACKETS, [3]) == ["(", ")"]
        page.locator(".jp-CodeCell .cm-line", has_text="select mnist_predict(image)").click()
        page.keyboard.press("Home")
        for _ in "select mnist_predict(":
            page.keyboard.press("ArrowRight")
        page.wait_for_function(A_PAIR_MATCHED, arg=[12], timeout=10_000)
        assert page.evaluate(MATCHED_BRACKETS, [12]) == ["(", ")"]

        # toggle comment, and back
        for index, line, commented in ((3, "import tempfile", "# import tempfile"),
                                       (12, "!delta history ai_model.mnist_model;", "-- !delta history ai_model.mnist_model;")):
            before = page.evaluate(SOURCE, [index])
            page.locator(".jp-CodeCell .cm-line", has_text=line).click()
            page.keyboard.press("Control+/")
            page.wait_for_timeout(300)
            assert commented in page.evaluate(SOURCE, [index]).splitlines()
            page.keyboard.press("Control+/")
            page.wait_for_timeout(300)
            assert page.evaluate(SOURCE, [index]) == before
        assert console == []
    finally:
        shot = OUTPUT / "mlsql-mode.png"
        OUTPUT.mkdir(exist_ok=True)
        page.screenshot(path=str(shot))
        page.close()
