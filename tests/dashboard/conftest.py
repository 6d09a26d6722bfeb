"""The dashboard on the session's demo fleet, served on loopback with authentication on, and a
headless Chromium to read it (one per test module).

Set GPULEDGER_SCREENSHOTS=1 (or a directory) to have the page tests write the README's
screenshots (default directory docs/screenshots/).
"""
from __future__ import annotations

import atexit
import base64
import os
import shutil
import tempfile
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from werkzeug.security import generate_password_hash
from werkzeug.serving import make_server

from dashboard.config import DashboardConfig, DashboardUser
from tests.helpers import ROOT, free_port

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
USER, PASSWORD = "lead", "correct horse battery staple"
INGEST_TOKEN = "ingest-token-for-tests"
# each browser's profile (~13 MB) and downloads, removed when the test process exits
BROWSER_DIRS = Path(tempfile.mkdtemp(prefix="gpuledger-browsers-"))
atexit.register(shutil.rmtree, BROWSER_DIRS, True)


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture(scope="session")
def site(demo):
    """The demo fleet's dashboard on http://127.0.0.1:PORT, auth on (user ``lead``), alerts evaluated
    once at the demo's end so the Alerts page has firing alerts, the ingest receiver mounted beside it."""
    from alerts.actions import engine_for
    from base.settings import Secret
    from dashboard.app import mount
    from gpuledger.platform import Platform
    from ingest.receiver import register_receiver
    from ingest.telemetry_config import ReceiverConfig

    engine_for(demo.cfg, demo.store, clock=lambda: demo.end).evaluate(now=demo.end, apply=True)
    dash_cfg = DashboardConfig(users=[DashboardUser(USER, password_hash=generate_password_hash(PASSWORD, "pbkdf2:sha256:2000"))])
    config = SimpleNamespace(dashboard=dash_cfg, analytics=demo.cfg.analytics)
    platform = Platform(demo.cfg, demo.store)
    register_receiver(platform, demo.store, ReceiverConfig(token=Secret(INGEST_TOKEN, "test")))
    app = mount(platform, config, demo.store, auth=True)
    server = make_server("127.0.0.1", free_port(), platform.web, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    yield SimpleNamespace(url=f"http://127.0.0.1:{server.server_port}", platform=platform, app=app, demo=demo,
                          store=demo.store, auth=basic(USER, PASSWORD))
    server.shutdown()


def chromium(headers: dict[str, str] | None = None):
    """Headless Chromium through chromedriver, sending ``headers`` on every request; its downloads
    land in ``driver.downloads``."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER), \
        "browser tests need Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)"
    downloads = Path(tempfile.mkdtemp(prefix="downloads-", dir=BROWSER_DIRS))
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", f"--user-data-dir={tempfile.mkdtemp(prefix='profile-', dir=BROWSER_DIRS)}",
                "--window-size=1440,1000"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                              "download.prompt_for_download": False})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.execute_cdp_cmd("Network.enable", {})
    if headers:
        driver.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": headers})
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    driver.downloads = downloads
    return driver


@pytest.fixture(scope="module")
def browser(site):
    """Headless Chromium sending the dashboard credentials on every request."""
    driver = chromium({"Authorization": site.auth})
    yield driver
    driver.quit()


@pytest.fixture
def no_console_errors(browser):
    """No browser console error during the test (the modules that drive Chromium use it for every test)."""
    from tests.dashboard.browser import console_errors

    console_errors(browser)
    yield
    assert console_errors(browser) == []


@pytest.fixture(scope="session")
def screenshots_dir():
    """Where the page tests save screenshots (None unless GPULEDGER_SCREENSHOTS is set)."""
    value = os.environ.get("GPULEDGER_SCREENSHOTS", "")
    if not value:
        return None
    path = ROOT / "docs" / "screenshots" if value == "1" else Path(value)
    path.mkdir(parents=True, exist_ok=True)
    return path
