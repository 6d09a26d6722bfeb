"""Small helpers for driving the dashboard in Chromium (Selenium)."""
from __future__ import annotations

import json
import time

from selenium.common.exceptions import (
    ElementClickInterceptedException,
    NoSuchElementException,
    StaleElementReferenceException,
)
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

TIMEOUT = 60


def open_page(driver, url: str, page: str):
    driver.get(url)
    wait(driver, lambda d: d.find_elements(By.ID, f"page-{page}"), f"page {page} never rendered at {url}")


def wait(driver, condition, message: str, timeout: float = TIMEOUT):
    """Poll until `condition` holds; an element Dash re-rendered between two looks is looked up again."""
    return WebDriverWait(driver, timeout, poll_frequency=0.2,
                         ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)
                         ).until(condition, message)


def part(driver, page: str, name: str, chart: bool = False):
    """The element a callback fills, once filled (with a drawn chart, or an empty state)."""
    def filled(d):
        found = d.find_elements(By.ID, f"{page}-{name}")
        if not found:
            return False
        el = found[0]
        if el.find_elements(By.CSS_SELECTOR, ".empty"):
            return el
        if chart:
            return el if el.find_elements(By.CSS_SELECTOR, ".js-plotly-plot .main-svg") else False
        return el if el.text.strip() else False
    return wait(driver, filled, f"{page}-{name} was never filled")


def text(driver, element_id: str) -> str:
    return wait(driver, lambda d: (d.find_elements(By.ID, element_id) or [None])[0], f"no #{element_id}").text


def table_rows(element) -> list[list[str]]:
    return [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in element.find_elements(By.CSS_SELECTOR, "table.data tbody tr")]


def by_json_id(driver, id_: dict):
    key = json.dumps(id_, separators=(",", ":"), sort_keys=True)
    return driver.execute_script("return document.getElementById(arguments[0])", key)


def pick(driver, id_: dict, value: str) -> None:
    """Choose ``value`` in a dcc.Dropdown (Dash 4: a button opening a list of options)."""
    def opened(d):
        # A click made while Dash re-renders the dropdown is lost: open it again until the list shows.
        found = d.find_elements(By.CSS_SELECTOR, f"[role=option] input[value='{value}']")
        if not found:
            button = by_json_id(d, id_)
            if button is not None and button.get_attribute("aria-expanded") != "true":
                button.click()
        return found
    option = wait(driver, opened, f"no option {value!r} in {id_}")[0]
    option.find_element(By.XPATH, "./ancestor::*[@role='option']").click()
    driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)


def choose(driver, css: str) -> None:
    """Click the radio or checkbox input ``css`` until it is checked: a click landing while Dash
    lays the page out again (a chart drawn above it) is intercepted or lost, so it is made again."""
    def checked(d):
        found = d.find_elements(By.CSS_SELECTOR, css)
        if not found:
            return False
        if found[0].is_selected():
            return True
        d.execute_script("arguments[0].scrollIntoView({block: 'center'})", found[0])
        try:
            found[0].click()
        except ElementClickInterceptedException:
            return False
        return found[0].is_selected()
    wait(driver, checked, f"{css} could not be chosen")


def console_errors(driver) -> list[str]:
    """Browser console entries at error level since the last call."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def screenshot(driver, directory, name: str) -> None:
    if directory is None:
        return
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1440, min(max(height, 900), 2400))
    time.sleep(0.5)
    driver.save_screenshot(str(directory / f"{name}.png"))
    driver.set_window_size(1440, 1000)
