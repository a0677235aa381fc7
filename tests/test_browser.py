"""JupyterLab in a real browser: what a new user sees on "Run all" in ``00_overview``.

Starts JupyterLab on 127.0.0.1 with a token (serving a copy of the notebook, so nothing is saved into
``notebooks/``), drives Debian's headless Chromium through ``/usr/bin/chromedriver`` (Selenium, no browser
download), runs all cells from the Run menu and checks that the kernel is "Python 3 (workbench)", that no cell
shows an error, that a figure appears and that the explorer's picture changes when one of its controls does.
Screenshots go to ``build/browser/``. ``make browser`` (a step of ``make test``) installs chromium and
chromium-driver; the fixture tries the same script, and the test skips, saying why, only where neither can.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from analysis.core.paths import BUILD, NOTEBOOKS, REPO

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1100",
)
KERNEL_NAME = "Python 3 (workbench)"
SHOTS = BUILD / "browser"
RUN_ALL_TIMEOUT_S = 150
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false"},
}


def _browser_or_skip() -> None:
    pytest.importorskip("selenium", reason="selenium is in the dev extra: pip install -e '.[dev]'")
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        subprocess.run(["bash", str(REPO / "scripts" / "install_browser.sh")], check=False, timeout=900)
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip(f"no browser: {CHROMIUM} and {CHROMEDRIVER} could not be installed (see `make browser`)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_server(url: str, proc: subprocess.Popen, log: Path, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"JupyterLab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"JupyterLab did not answer within {timeout} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on a copy of 00_overview: (base URL, token)."""
    _browser_or_skip()
    root = tmp_path_factory.mktemp("lab")
    shutil.copy(NOTEBOOKS / "00_overview.ipynb", root / "00_overview.ipynb")
    for plugin, settings in SETTINGS.items():  # every cell in the page (no windowing), no news pop-up
        target = root / ".settings" / f"{plugin}.jupyterlab-settings"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(settings))
    port, token = _free_port(), os.urandom(16).hex()
    share = Path(sys.prefix) / "share" / "jupyter"  # this venv's kernelspec: "Python 3 (workbench)"
    env = {k: v for k, v in os.environ.items() if k != "WORKBENCH_STATIC"}  # a live kernel: widgets, not PNGs
    env.update(
        PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
        JUPYTER_PATH=os.pathsep.join([str(share), *filter(None, [os.environ.get("JUPYTER_PATH")])]),
        JUPYTER_CONFIG_DIR=str(root / ".config"),
        JUPYTER_RUNTIME_DIR=str(root / ".runtime"),
        JUPYTER_PLATFORM_DIRS="1",
        WORKBENCH_FIGURES=str(root / "figures"),  # the notebook's save_figure: never into figures/
        MPLBACKEND="agg",
        TQDM_DISABLE="1",
        OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"),
    )
    cmd = [
        sys.executable, "-m", "jupyterlab", "--no-browser", f"--ServerApp.root_dir={root}",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--LabApp.user_settings_dir={root / '.settings'}",
        f"--LabApp.workspaces_dir={root / '.workspaces'}", "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.extension_manager=readonly",
    ] + (["--allow-root"] if os.geteuid() == 0 else [])  # fmt: skip
    log = root / "lab.log"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_for_server(f"http://127.0.0.1:{port}/api/status?token={token}", proc, log)
        yield f"http://127.0.0.1:{port}", token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def driver(lab, tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    drv = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    drv.set_page_load_timeout(60)
    try:
        yield drv
    finally:
        drv.quit()


def _wait(drv, what: str, predicate, timeout: float):
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(drv, timeout, poll_frequency=0.5).until(lambda d: predicate(d))
    except Exception as err:
        SHOTS.mkdir(parents=True, exist_ok=True)
        drv.save_screenshot(str(SHOTS / "failure.png"))
        raise AssertionError(
            f"timed out after {timeout} s waiting for {what} (screenshot build/browser/failure.png)"
        ) from err


def _js(drv, script: str):
    return drv.execute_script(script)


def _click_menu(drv, menu: str, item: str) -> None:
    from selenium.webdriver.common.by import By

    drv.find_element(By.XPATH, f"//div[contains(@class,'lm-MenuBar-itemLabel') and text()='{menu}']").click()
    entry = _wait(
        drv,
        f"menu item {item!r}",
        lambda d: d.find_element(By.XPATH, f"//div[contains(@class,'lm-Menu-itemLabel') and text()='{item}']"),
        10,
    )
    entry.click()


PROMPTS = (
    "return [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt')].map(e => e.innerText)"
)


# The kernel is idle: the notebook toolbar's execution indicator says so (its data-status), or the
# status bar's kernel item does ("Python 3 (workbench) | Idle"; JupyterLab 4.6.6 no longer shows that item by default).
IDLE = (
    "const i = document.querySelector('.jp-NotebookPanel-toolbar .jp-Notebook-ExecutionIndicator');"
    "const s = (document.querySelector('.jp-StatusBar-Widget') || {}).innerText || '';"
    "return (i !== null && i.getAttribute('data-status') === 'idle') || s.includes('| Idle');"
)


def _all_ran(drv) -> bool:
    prompts = _js(drv, PROMPTS)
    return bool(prompts) and bool(_js(drv, IDLE)) and all(p.strip() not in ("[ ]:", "[*]:", "") for p in prompts)


def test_run_all_of_the_overview_in_jupyterlab(lab, driver):
    url, token = lab
    t0 = time.monotonic()
    driver.get(f"{url}/lab/tree/00_overview.ipynb?token={token}")
    toolbar = "return (document.querySelector('.jp-NotebookPanel-toolbar') || {}).innerText || ''"
    _wait(driver, f"the kernel {KERNEL_NAME!r} in the toolbar", lambda d: KERNEL_NAME in _js(d, toolbar), 90)
    _wait(driver, "an idle kernel", lambda d: bool(_js(d, IDLE)), 90)
    _click_menu(driver, "Run", "Run All Cells")
    _wait(driver, "every cell to run", _all_ran, RUN_ALL_TIMEOUT_S)

    errors = _js(driver, "return [...document.querySelectorAll('[data-mime-type=\"application/vnd.jupyter.error\"]')]"
                         ".map(e => e.innerText.slice(0, 500))")  # fmt: skip
    assert not errors, f"cells show errors: {errors}"
    images = "document.querySelectorAll('.jp-RenderedImage img, .widget-image')"
    figures = f"return [...{images}].filter(i => i.naturalWidth > 0).length"
    assert _js(driver, figures) >= 2, "no figure appeared (committed figure and explorer picture expected)"
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SHOTS / "00_overview_end.png"))

    # the explorer is live: switching its kernel re-renders the picture
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    explorer = driver.find_element(By.CSS_SELECTOR, ".jp-NotebookPanel .widget-vbox")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", explorer)
    driver.save_screenshot(str(SHOTS / "00_overview.png"))
    explorer.screenshot(str(SHOTS / "explorer.png"))
    before = explorer.find_element(By.CSS_SELECTOR, ".widget-image").get_attribute("src")
    Select(explorer.find_element(By.CSS_SELECTOR, ".widget-dropdown select")).select_by_visible_text("ssmax")
    src = lambda d: explorer.find_element(By.CSS_SELECTOR, ".widget-image").get_attribute("src")  # noqa: E731
    _wait(driver, "the explorer to redraw", lambda d: src(d) != before, 30)
    explorer.screenshot(str(SHOTS / "explorer_ssmax.png"))
    print(f"browser test: Run all to explorer redraw in {time.monotonic() - t0:.1f} s")
