"""The model report in a real browser: headless Chromium renders the page
with no console message, every section's screenshot shows something, and
the importance bars are drawn as long as their values say."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess

import pytest
from arbor import _arbor
from conftest import read
from PIL import Image

BROWSER = next((shutil.which(b) for b in ["chromium", "chromium-browser", "google-chrome"] if shutil.which(b)), None)
pytestmark = pytest.mark.skipif(
    BROWSER is None, reason="no Chromium: scripts/test.sh installs Debian's package where the machine allows"
)

# Reads the laid-out page back: each section's box, each bar's drawn width,
# and the training curve's lines drawn wider than 100 pixels.
PROBE = """<script>
const box = e => { const r = e.getBoundingClientRect(); return {top: r.top + scrollY, left: r.left, width: r.width, height: r.height}; };
document.body.setAttribute('data-probe', JSON.stringify({
  sections: [...document.querySelectorAll('section')].map(s => ({id: s.id, ...box(s)})),
  bars: [...document.querySelectorAll('rect.bar')].map(b => ({name: b.dataset.name, value: +b.dataset.value, width: box(b).width})),
  curves: [...document.querySelectorAll('#training polyline')].filter(p => box(p).width > 100).map(p => p.dataset.name),
}));
</script>"""


def chromium(*args: str) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"]
    return subprocess.run([BROWSER, *flags, *args], capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    table = read("flights_cls_train").slice(0, 20_000)
    model = _arbor.train(
        table.drop_columns(["label"]),
        table.column("label").combine_chunks(),
        options=[("algorithm", "gradient-boosting"), ("n_rounds", "20"), ("early_stopping_rounds", "3")],
    )
    path = tmp_path_factory.mktemp("report") / "report.html"
    model.report(path, data=read("flights_cls_test").slice(0, 5000))
    return model, path


def test_the_page_renders_without_a_console_message(page):
    _, path = page
    done = chromium("--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000", "--dump-dom", path.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    assert "<svg" in done.stdout, "the page was rendered and dumped"
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line]
    assert console == [], console


def test_every_section_is_drawn_and_the_bars_follow_the_importance(page, tmp_path):
    model, path = page
    probed = tmp_path / "probed.html"
    probed.write_text(path.read_text().replace("</body>", PROBE + "</body>"))
    width = 1100
    done = chromium(f"--window-size={width},1000", "--virtual-time-budget=3000", "--dump-dom", probed.as_uri())
    found = re.search(r'data-probe="([^"]*)"', done.stdout)
    assert found, done.stderr[-2000:]
    layout = json.loads(html.unescape(found.group(1)))

    # The bars as laid out: in the order of the importance, each as long as its share.
    bars = layout["bars"]
    importance = dict(zip(model.feature_names, model.importance))
    assert [b["name"] for b in bars] == sorted(importance, key=importance.get, reverse=True)
    longest = bars[0]["width"]
    assert longest > 100
    for b in bars:
        assert b["value"] == pytest.approx(importance[b["name"]])
        assert b["width"] == pytest.approx(b["value"] / bars[0]["value"] * longest, abs=1.0), b

    # One screenshot of the whole page; each section's box in it shows marks, not just its heading.
    sections = layout["sections"]
    assert [s["id"] for s in sections] == [
        "summary", "parameters", "importance", "metrics", "shap", "dependence", "training", "tree",
    ]
    height = int(max(s["top"] + s["height"] for s in sections)) + 20
    shot = tmp_path / "page.png"
    done = chromium(f"--window-size={width},{height}", "--virtual-time-budget=3000", f"--screenshot={shot}", probed.as_uri())
    assert shot.exists(), done.stderr[-2000:]
    image = Image.open(shot).convert("L")
    for s in sections:
        box = (int(s["left"]), int(s["top"]) + 40, int(s["left"] + min(s["width"], width)), int(s["top"] + s["height"]))
        crop = image.crop(box)
        inked = sum(crop.histogram()[:200])  # grey levels below 200: marks, not background
        assert inked > 200, f"section {s['id']} looks blank: {inked} dark pixels in {box}"
    # The training section draws the recorded curve: its two lines in the laid-out page.
    assert layout["curves"] == ["training", "validation"]
