"""Real headless Chromium (Debian's package) driven by Playwright; no browser download."""

from __future__ import annotations

import os
import shutil

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM:
        pytest.skip("Chromium is not installed (make test installs Debian's chromium package)")
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


@pytest.fixture
def login(page):
    """Log a user in through the real login form."""

    def do_login(username: str, password: str = "pw-for-tests-123") -> None:
        page.goto("/accounts/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", password)
        page.click("#login-submit")
        page.wait_for_load_state("networkidle")

    return do_login
