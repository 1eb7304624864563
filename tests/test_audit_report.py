"""`report`: a self-contained HTML file, checked for exact values and rendered in a real headless chromium."""

from __future__ import annotations

import re
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

from benchrun.archive.reader import load_run
from benchrun.audit import report, report_samples, report_svg
from benchrun.audit.__main__ import main as audit_main
from benchrun.core.errors import EXIT, ArchiveError
from benchrun.testing.ollama_server import ChatRequest, Reply
from tests.helpers.answers import listbench_answer
from tests.helpers.commands import make_run, run_benchrun

slow = pytest.mark.slow
CHROMIUM = Path("/usr/bin/chromium")
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(),
                                    reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)")
HOSTILE = '<script>document.title="pwned"</script><img src="https://evil.example/x.png"> &amp; "at"'
LISTBENCH_ROWS = [
    ("product", "calculated_answer", "0.667 ± 0.333", 3), ("product", "format_valid", "1.000 ± 0.000", 3),
    ("product_combination", "add_justify", "0.333 ± 0.167", 9),
    ("product_combination", "calculated_answer", "0.889 ± 0.111", 9),
    ("product_combination", "format_valid", "1.000 ± 0.000", 9),
    ("symbol", "contains", "0.667 ± 0.333", 3), ("symbol", "format_valid", "1.000 ± 0.000", 3),
    ("symbol_dir", "check_name_dir.direction", "0.667 ± 0.333", 3),
    ("symbol_dir", "check_name_dir.name", "0.667 ± 0.333", 3), ("symbol_dir", "format_valid", "1.000 ± 0.000", 3),
]


def chromium(page: Path, *flags: str) -> subprocess.CompletedProcess:
    """Open `page` in headless chromium with a fresh profile and no background network traffic."""
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
             f"--user-data-dir={profile}", *flags, page.as_uri()],
            capture_output=True, text=True, timeout=120, check=True)


def render_check(page: Path) -> str:
    """The data-render-check attribute the page's own script wrote after layout."""
    dom = chromium(page, "--dump-dom").stdout
    return re.search(r'<body[^>]*data-render-check="([^"]*)"', dom)[1]


def hostile(req: ChatRequest) -> Reply | str:
    """Markup and a URL for '@', a 503 for '$', the usual answer otherwise."""
    if req.prompt.endswith("@"):
        return HOSTILE
    if req.prompt.endswith("$"):
        return Reply(status=503, error="server busy")
    return listbench_answer(req)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return make_run(tmp_path_factory.mktemp("one"))


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory) -> Path:
    return make_run(tmp_path_factory.mktemp("sweep"), "runner.model=llama3.2,gemma3,mistral", multirun=True)


@pytest.fixture(scope="module")
def hostile_dir(tmp_path_factory) -> Path:
    return make_run(tmp_path_factory.mktemp("hostile"), "task.only=[symbol]", "runner.retries=0", responder=hostile)


@pytest.fixture(scope="module")
def run_page(run_dir) -> Path:
    return report.write_report([str(run_dir)])


@pytest.fixture(scope="module")
def sweep_page(sweep_dir) -> Path:
    return report.write_report([str(sweep_dir)])


def headline_row(task: str, metric: str, *cells: tuple[str, int, int]) -> str:
    tds = "".join(f'<td class="num">{mean}</td><td class="num">{n}</td><td class="num">{errors}</td>'
                  for mean, n, errors in cells)
    return f"<tr><td>{task}</td><td>{metric}</td>{tds}</tr>"


class Parts(HTMLParser):
    """Everything in a page that could load something (attributes, style, script) apart from its text."""

    def __init__(self) -> None:
        super().__init__()
        self.code: list[str] = []
        self.text: list[str] = []
        self.tag = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tag = tag
        self.code.extend(f"{name}={value}" for name, value in attrs)

    def handle_endtag(self, tag: str) -> None:
        self.tag = ""

    def handle_data(self, data: str) -> None:
        (self.code if self.tag in ("script", "style") else self.text).append(data)


@slow
def test_cli_writes_the_report_into_the_run_directory(run_dir):
    result = run_benchrun("report", str(run_dir), module="benchrun.audit", cwd=run_dir)
    assert result.returncode == EXIT["ok"], result.stderr
    assert result.stdout == f"{run_dir / 'report.html'}\n"


@slow
def test_headline_values_of_a_listbench_run(run_page, run_dir):
    assert run_page == run_dir / "report.html"
    html = run_page.read_text()
    for task, metric, mean, n in LISTBENCH_ROWS:
        assert headline_row(task, metric, (mean, n, 0)) in html
    assert html.split('<table id="headline">')[1].split("</table>")[0].count("<tr>") == 2 + len(LISTBENCH_ROWS)
    assert '<figcaption>calculated_answer</figcaption>' in html
    assert "<title>llama3.2 · symbol_dir: 0.667 ± 0.333 (n=3)</title>" in html
    assert "<title>benchrun report: listbench · llama3.2</title>" in html


@slow
def test_no_external_resources(run_page, run_dir):
    html = run_page.read_text()
    parts = Parts()
    parts.feed(html)
    assert not [code for code in parts.code if re.search("https?:|//", code)]
    assert html.count("://") == sum(text.count("://") for text in parts.text) > 0
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)[1]
    assert csp.startswith("default-src 'none'; style-src 'sha256-") and "img-src 'none'" in csp


@slow
def test_provenance(run_page, run_dir):
    html = run_page.read_text()
    info = load_run(run_dir).info
    for fact in (info.run_id, info.manifest_id, info.identity["digest"], "llama3.2:latest", "0.12.6",
                 f"benchrun</td><td><pre>{info.environment['benchrun']}", info.environment["python"],
                 f"ollama {info.environment['packages']['ollama']}", info.started_at, info.ended_at,
                 f"outputs={run_dir.parent.parent}"):
        assert str(fact) in html, fact


@slow
def test_samples_show_prompt_response_and_scores(run_page):
    html = run_page.read_text()
    assert '<details class="task"><summary>product_combination (9 samples)</summary>' in html
    assert ("<code>product:a=3,b=4</code><pre>find the product of 3 and 4</pre></td>"
            '<td><pre>{&quot;answer&quot;: 11}</pre><ul class="scores"><li>format_valid <span class="good">1</span>'
            '</li><li>calculated_answer <span class="v0">0</span></li></ul>') in html
    assert 'check_name_dir: name <span class="good">1</span>, direction <span class="v0">0</span>' in html


@slow
def test_long_tasks_are_capped(run_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(report_samples, "SAMPLE_CAP", 2)
    html = report.write_report([str(run_dir)], tmp_path / "capped.html").read_text()
    assert "<summary>product_combination (9 samples; showing the first 2, 7 left out)</summary>" in html
    assert "product_combination:a=2,b=4" in html and "product_combination:a=3,b=3" not in html


@slow
def test_hostile_responses_are_escaped(hostile_dir):
    html = report.write_report([str(hostile_dir)]).read_text()
    assert html.count("<script>") == 1 and "<img" not in html
    assert ("&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;&lt;img src=&quot;"
            "https://evil.example/x.png&quot;&gt; &amp;amp; &quot;at&quot;") in html
    assert '<p class="bad">no response: ResponseError: HTTP 503: server busy</p>' in html
    assert headline_row("symbol", "contains", ("1.000 ± 0.000", 2, '<span class="bad">1</span>')) in html


@slow
def test_sweep_expands_to_its_jobs_and_shows_the_failed_one(sweep_page, sweep_dir):
    assert sweep_page == sweep_dir / "report.html"
    html = sweep_page.read_text()
    for task, metric, mean, n in LISTBENCH_ROWS:
        assert headline_row(task, metric, (mean, n, 0), (mean, n, 0)) in html
    assert '<th colspan="3">llama3.2</th><th colspan="3">gemma3</th></tr>' in html
    assert re.search(r'<tr><td>mistral</td><td><span class="bad">failed</span></td><td>\w+</td>'
                     r"<td>model &#x27;mistral&#x27; is not pulled on http://127\.0\.0\.1:\d+ ", html)


@slow
def test_several_runs_need_an_output_file(run_dir, sweep_dir, tmp_path, capsys):
    gemma = sweep_dir / "1_gemma3"
    assert audit_main(["report", str(run_dir), str(gemma)]) == EXIT["usage"]
    assert capsys.readouterr().err == ("benchrun: error: several runs: say where the report goes with "
                                       "--output FILE.html\n")
    page = tmp_path / "deep" / "both.html"
    assert audit_main(["report", str(run_dir), str(gemma), "--output", str(page)]) == EXIT["ok"]
    assert capsys.readouterr().out == f"{page}\n"
    assert '<th colspan="3">llama3.2</th><th colspan="3">gemma3</th>' in page.read_text()


@slow
def test_same_model_twice_is_told_apart_by_run_id(run_dir, sweep_dir, tmp_path):
    llama = sweep_dir / "0_llama3.2"
    html = report.write_report([str(run_dir), str(llama)], tmp_path / "twice.html").read_text()
    for path in (run_dir, llama):
        assert f'<th colspan="3">llama3.2 · {load_run(path).id}</th>' in html


def test_not_a_run_nor_a_sweep(tmp_path):
    with pytest.raises(ArchiveError, match="neither a run directory"):
        report.write_report([str(tmp_path)])


@slow
@needs_chromium
def test_a_run_renders_in_chromium(run_page):
    assert render_check(run_page) == "ok:charts=8,bars=12,rows=10,tasks=4"


@slow
@needs_chromium
def test_a_sweep_renders_in_chromium(sweep_page, tmp_path):
    assert render_check(sweep_page) == "ok:charts=8,bars=24,rows=10,tasks=4"
    png = tmp_path / "sweep.png"
    chromium(sweep_page, f"--screenshot={png}", "--window-size=1200,2000")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 50_000


@slow
@needs_chromium
def test_hostile_markup_does_not_run_in_chromium(hostile_dir, tmp_path):
    page = report.write_report([str(hostile_dir)], tmp_path / "hostile.html")
    dom = chromium(page, "--dump-dom").stdout
    assert 'data-render-check="ok:charts=4,bars=4,rows=2,tasks=1"' in dom
    assert "<title>benchrun report: listbench · llama3.2</title>" in dom and "pwned" not in dom.split("<body")[0]


def test_chart_axes_are_0_to_1_for_0_1_metrics_else_0_to_the_top():
    bars = {"long": [report_svg.Bar(0, "m", 2.5, 0.5, 4)], "short": [report_svg.Bar(0, "m", 0.0, None, 2)]}
    scaled = report_svg.chart("c", "bleu", bars, binary=False, n_series=1)
    assert '<text class="tick" x="40" y="22.0">3.000</text>' in scaled
    assert 'data-value="2.5" x="58.5" y="48.0" width="28" height="150.0"' in scaled
    assert 'data-value="0.0" x="115.5" y="198.0" width="28" height="0.0"' in scaled
    assert "<title>m · long: 2.500 ± 0.500 (n=4)</title>" in scaled
    binary = report_svg.chart("c", "acc", {"t": [report_svg.Bar(0, "m", 0.5, None, 2)]}, binary=True, n_series=1)
    assert '<text class="tick" x="40" y="22.0">1.000</text>' in binary
    assert '<title id="c">acc: mean by task and run (0/1 metric, axis 0 to 1)</title>' in binary
