"""report.html in a real browser: headless Chromium (Debian's `chromium` package) opens it, takes a
screenshot, and the test fails on a blank page or on any image that does not load.

Images are checked inside the page: a copy of the report gets a small script that, once the page
has loaded, marks every <img> with whether it decoded (complete and naturalWidth > 0); Chromium's
--dump-dom prints the marked document. The same run writes the screenshot, which counts as blank
when almost no pixel differs from white. Both checks are shown to fail on purpose below.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
from matplotlib import image as mpimg
from trees import report_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    REASON = ("CHROMIUM IS NOT INSTALLED: report.html was NOT opened in a browser. "
              "Install Debian's package: apt-get install -y chromium")
    warnings.warn(REASON, pytest.PytestWarning, stacklevel=1)
    pytest.skip(REASON, allow_module_level=True)

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--window-size=1280,2400", "--virtual-time-budget=10000"]
MARK_IMAGES = """<script>
addEventListener("load", () => {
  for (const img of document.images) img.setAttribute("data-imx-loaded", String(img.complete && img.naturalWidth > 0));
  document.body.setAttribute("data-imx-images", String(document.images.length));
});
</script>"""


@dataclass
class Page:
    images: int                 # <img> elements the browser saw
    broken: list[str]           # alt text of every image that did not load
    inked: float                # share of the screenshot's pixels that are not white

    def failures(self) -> list[str]:
        problems = [f"image did not load: {alt}" for alt in self.broken]
        if self.inked < 0.002:
            problems.append(f"blank page: {self.inked:.4%} of the screenshot is not white")
        return problems


def open_in_chromium(html: Path, work: Path) -> Page:
    page = work / "checked.html"
    text = html.read_text()
    page.write_text(text.replace("</body>", MARK_IMAGES + "</body>") if "</body>" in text else text + MARK_IMAGES)
    shot = work / "screenshot.png"
    with tempfile.TemporaryDirectory(prefix="imx-chromium-") as profile:
        done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={shot}", "--dump-dom",
                               page.as_uri()], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = re.search(r'data-imx-images="(\d+)"', done.stdout)
    assert seen is not None, "the page never finished loading (no load event)"
    marks = re.findall(r'<img\b[^>]*>', done.stdout)
    broken = []
    for tag in marks:
        if 'data-imx-loaded="true"' not in tag:
            alt = re.search(r'alt="([^"]*)"', tag)
            broken.append(alt[1] if alt else tag[:80])
    pixels = mpimg.imread(shot)[..., :3]
    inked = float((pixels < 0.96).any(axis=-1).mean())
    return Page(images=int(seen[1]), broken=broken, inked=inked)


@pytest.fixture(scope="module")
def report_html(tmp_path_factory) -> Path:
    return report_run(tmp_path_factory) / "report.html"


def test_the_report_opens_with_every_image_loaded_and_is_not_blank(report_html, tmp_path):
    page = open_in_chromium(report_html, tmp_path)
    expected = report_html.read_text().count("<img ")
    assert expected >= 12
    assert page.images == expected
    assert page.failures() == []


def test_a_broken_image_is_caught(report_html, tmp_path):
    text = report_html.read_text()
    start = text.index('src="data:image/png;base64,') + len('src="data:image/png;base64,')
    end = text.index('"', start)
    alt = re.findall(r'<img alt="([^"]*)"', text)[0]
    broken = tmp_path / "broken.html"
    broken.write_text(text[:start] + "iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB" + text[end:])  # a PNG cut after its header
    page = open_in_chromium(broken, tmp_path)
    assert page.failures() == [f"image did not load: {alt}"]


def test_a_blank_page_is_caught(tmp_path):
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><head><title>x</title></head><body></body></html>")
    page = open_in_chromium(blank, tmp_path)
    assert page.images == 0
    assert len(page.failures()) == 1 and page.failures()[0].startswith("blank page")
