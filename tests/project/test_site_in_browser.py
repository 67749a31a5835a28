"""The documentation site as a reader sees it: built strictly, its main pages loaded in headless
Chromium (Debian's `chromium`) from a local server.

Each page must load without a console message (an error, an uncaught exception), without a
request the server cannot answer (a broken image, stylesheet or script), with every link into
the site leading to a page of it, and, on an API page, with every object's section filled. The
run saves a screenshot of each page under build/screenshots/ (ignored by git and the tests), for
a person to look at. Without `chromium` the test skips, or fails under CI.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from tests.conftest import unavailable

pytest.importorskip("mkdocs", reason="the site needs the [docs] extra")

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "build" / "screenshots"
PAGES = {  # name: path on the site
    "home": "",
    "getting-started": "getting-started/",
    "which-model-when": "guide/choosing/",
    "reading-results": "guide/reading-results/",
    "dense-figure": "guide/dense/",
    "speed-tables": "guide/speed/",
    "api-arow": "api/river_cw/AROW/",
    "cli": "api/cli/",
    "notebook": "examples/spam_live/",
}
CONSOLE = re.compile(r":CONSOLE[:(].*")


class Site(http.server.ThreadingHTTPServer):
    """The built site on a free port, noting every request it could not answer."""

    def __init__(self, directory: Path):
        self.failed: list[str] = []
        handler = functools.partial(_Handler, directory=str(directory))
        super().__init__(("127.0.0.1", 0), handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_request(self, code="-", size="-"):
        if str(getattr(code, "value", code)).startswith(("4", "5")):  # an HTTPStatus or "-"
            self.server.failed.append(f"{self.path} ({code})")

    def log_message(self, format, *args):  # quiet
        pass


class Links(HTMLParser):
    """The hrefs of a page's links and the text of its API sections."""

    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []
        self.sections: list[list[str]] = []  # the text of each `doc-contents` block
        self._depth = 0  # inside a doc-contents block: its div depth

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "a" and attrs.get("href"):
            self.hrefs.append(attrs["href"])
        if tag == "div":
            if self._depth:
                self._depth += 1
            elif "doc-contents" in (attrs.get("class") or "").split():
                self._depth = 1
                self.sections.append([])

    def handle_endtag(self, tag):
        if tag == "div" and self._depth:
            self._depth -= 1

    def handle_data(self, data):
        if self._depth and data.strip():
            self.sections[-1].append(data.strip())


def chromium(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",  # as root in a container
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,1800",
            "--virtual-time-budget=5000",  # let the page's scripts run
            *arguments,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def broken_links(page_url: str, hrefs: list[str], site_url: str, site: Path) -> list[str]:
    """The links of a page into the site that lead to no file of it."""
    broken = []
    for href in hrefs:
        url = urljoin(page_url, href)
        if not url.startswith(site_url):
            continue  # another site: not ours to check offline
        path = urlsplit(url).path[len(urlsplit(site_url).path) :]
        target = site / path
        if not (target.is_file() or (target / "index.html").is_file()):
            broken.append(href)
    return broken


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if shutil.which("chromium") is None:
        unavailable("no chromium: install Debian's `chromium` to check the site in a browser")
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr[-4000:]
    server = Site(out)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    yield server, out
    server.shutdown()
    server.server_close()


@pytest.mark.slow
@pytest.mark.parametrize("name", PAGES)
def test_the_page_loads_as_a_reader_sees_it(site, name):
    server, directory = site
    url = server.url + PAGES[name]
    server.failed.clear()
    screenshot = SCREENSHOTS / f"{name}.png"
    screenshot.unlink(missing_ok=True)
    # one load: its screenshot, and its DOM once the scripts ran
    dom = chromium(f"--screenshot={screenshot}", "--dump-dom", url)
    assert dom.returncode == 0 and screenshot.is_file(), dom.stderr[-2000:]
    console = [m[0] for m in CONSOLE.finditer(dom.stderr)]
    assert console == [], f"{url}: console messages"
    assert server.failed == [], f"{url}: requests the site could not answer"
    page = Links()
    page.feed(dom.stdout)
    assert broken_links(url, page.hrefs, server.url, directory) == []
    if name.startswith("api-"):
        assert page.sections, f"{url}: no API section"
        assert [s for s in page.sections if not s] == [], f"{url}: empty API sections"
        assert "Parameters" in " ".join(page.sections[0])
