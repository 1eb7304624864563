"""`report RUN|SWEEP [RUN ...]`: one self-contained static HTML file: metrics, charts, samples, provenance."""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
from dataclasses import dataclass, field
from html import escape
from importlib.resources import files
from pathlib import Path
from string import Template
from typing import Sequence

from benchrun.archive.atomic import write_atomic
from benchrun.archive.reader import DEFAULT_ROOT, PathLike, Run, distinct_labels, job_dirs, load_run, named, resolve_run
from benchrun.archive.speed import FIGURES, figures, speed_of
from benchrun.audit import arguments
from benchrun.audit import report_svg as svg
from benchrun.audit.judged import agreement_rows, agreements, judge_identity
from benchrun.audit.lines import metric_lines as lines_of
from benchrun.console.output import number, speed_cells
from benchrun.console.visible import shown_name
from benchrun.core.errors import EXIT, ArchiveError, BenchrunError, writing
from benchrun.core.layout import MULTIRUN_FILE, NO_RUN, RUN, SWEEP_FILE
from benchrun.core.manifest import Sample
from benchrun.core.records import ErrorInfo, MetricSummary, ResponseRecord, ScoreRecord, Speed

SAMPLE_CAP = 500
"""Samples shown per task; the rest are counted, not shown."""
TEXT_CAP = 10_000
"""Characters shown of one prompt or response."""
REPORT_FILE = "report.html"
SPEED_CHARTS = ("tokens_per_s", "latency_p50_s")
"""The speed figures charted by run."""


@dataclass
class Job:
    """One run (or a sweep job that left no readable run) and its column label."""

    path: Path
    run: Run | None
    reason: str | None = None
    label: str = ""

    @property
    def status(self) -> str:
        return self.run.info.status if self.run else NO_RUN


@dataclass
class Records:
    """A run's responses and scores for the samples shown."""

    responses: dict[str, list[ResponseRecord]] = field(default_factory=dict)
    """Sample id -> its responses, one per repeat."""
    scores: dict[tuple[str, int], list[ScoreRecord]] = field(default_factory=dict)
    """(sample id, repeat) -> the scores of that answer."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("refs", nargs="+", metavar="RUN|SWEEP",
                        help="run directories, run id prefixes or a sweep directory")
    parser.add_argument("--output", type=arguments.path,
                        help=f"the HTML file to write (default: <run or sweep dir>/{REPORT_FILE})")
    arguments.add_root(parser)


def main(args: argparse.Namespace) -> int:
    print(write_report(args.refs, args.output, args.root))
    return EXIT["ok"]


def write_report(refs: PathLike | Sequence[PathLike], output: PathLike | None = None,
                 root: PathLike = DEFAULT_ROOT) -> Path:
    """Write the HTML report of the run or sweep `refs` (or of several); its path."""
    refs = [refs] if isinstance(refs, (str, os.PathLike)) else list(refs)
    jobs = list({job.path.resolve(): job for ref in refs for job in expand(ref, root)}.values())
    if output is None:
        if len(refs) > 1:
            raise BenchrunError("several runs: say where the report goes with --output FILE.html")
        output = (Path(refs[0]) if is_sweep(Path(refs[0])) else jobs[0].path) / REPORT_FILE
    output = Path(output)
    with writing(output):
        output.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(output, render(label_jobs(jobs)).encode("utf-8"), follow=True)
    return output


def expand(ref: PathLike, root: PathLike) -> list[Job]:
    """A run by path or id prefix, or every job of a sweep directory."""
    path = Path(named(ref))
    if is_sweep(path):
        return [_job(job_dir) for job_dir in job_dirs(path)]
    if path.is_dir() and not os.path.lexists(path / RUN):
        raise ArchiveError("neither a run directory (no run.json) nor a sweep directory (no sweep.json)",
                           file=os.fspath(ref))
    run = resolve_run(ref, root).require_records()
    return [Job(run.path, run)]


def is_sweep(path: Path) -> bool:
    """A sweep directory: no run.json of its own, and Hydra's multirun.yaml or benchrun's sweep.json."""
    return (path.is_dir() and not os.path.lexists(path / RUN)
            and ((path / SWEEP_FILE).is_file() or (path / MULTIRUN_FILE).is_file()))


def _job(path: Path) -> Job:
    try:
        return Job(path, load_run(path).require_records())
    except ArchiveError as err:
        return Job(path, None, reason=f"the job left no readable run: {err}")


def label_jobs(jobs: list[Job]) -> list[Job]:
    """Label each job by its run's label (what varied in a sweep, else the model), adding the run id (or
    directory) where labels repeat."""
    labels = distinct_labels([job.run.label if job.run else shown_name(job.path.name) for job in jobs],
                             [job.run.id if job.run else shown_name(job.path.name) for job in jobs])
    for job, label in zip(jobs, labels):
        job.label = label
    return jobs


def render(jobs: list[Job]) -> str:
    """The whole HTML page."""
    runs = [job for job in jobs if job.run]
    scored = [job for job in runs if job.run.summary and job.run.summary.metrics]
    shown = shown_samples(scored)
    records = {job.label: read_records(job.run, shown) for job in scored}
    lines = metric_lines(scored)
    speeds = {job.label: speed_of(job.run) for job in runs}
    benchmarks = ", ".join(dict.fromkeys(job.run.info.benchmark for job in runs)) or "no runs"
    title = f"benchrun report: {benchmarks} · {', '.join(job.label for job in jobs)}"
    body = "".join([f"<h1>{escape(title)}</h1>", overview(jobs), headline(scored, lines), charts(scored, lines),
                    speed_charts(scored, speeds), samples_view(scored, shown, records) if scored else "",
                    provenance(runs, speeds)])
    template = files("benchrun.audit").joinpath("report_template.html").read_text("utf-8")
    return Template(template).substitute(csp=_csp(template), title=escape(title), body=body)


def _csp(template: str) -> str:
    """Nothing from the network; only the template's own inline style and script, by hash."""
    def digest(tag: str) -> str:
        text = template.split(f"<{tag}>", 1)[1].split(f"</{tag}>", 1)[0]
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"
    return (f"default-src 'none'; style-src {digest('style')}; script-src {digest('script')}; "
            "img-src 'none'; base-uri 'none'; form-action 'none'")


def table(head: list[str], rows: list[list[str]], attrs: str = "") -> str:
    """A table from already-escaped cells."""
    ths = "".join(f"<th>{h}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table{attrs}><thead><tr>{ths}</tr></thead><tbody>{trs}</tbody></table>"


def overview(jobs: list[Job]) -> str:
    rows = [[escape(job.label), _status(job.status), escape(job.run.id if job.run else "-"),
             escape(job.reason or (job.run.info.reason if job.run else None) or ""),
             f"<code>{escape(shown_name(str(job.path)))}</code>"] for job in jobs]
    return "<h2>Runs</h2>" + table(["run", "status", "run id", "reason", "directory"], rows, ' id="runs"')


def _status(status: str) -> str:
    return f'<span class="{"good" if status == "completed" else "bad"}">{escape(status)}</span>'


Lines = dict[tuple[str, str], dict[str, MetricSummary]]
"""(task, metric) -> run label -> its metric line."""


def metric_lines(scored: list[Job]) -> Lines:
    """(task, metric) -> label -> summary line, in order of first appearance."""
    lines: Lines = {}
    for job in scored:
        for line in lines_of(job.run):
            lines.setdefault((line.task, line.metric), {})[job.label] = line
    return lines


def headline(scored: list[Job], lines: Lines) -> str:
    if not scored:
        return '<h2>Metrics</h2><p class="note">No run has any scores.</p>'
    top = "".join(f'<th colspan="3">{escape(job.label)}</th>' for job in scored)
    sub = "<th>mean ± stderr</th><th>n</th><th>errors</th>" * len(scored)
    rows = []
    for (task, metric), by_label in lines.items():
        cells = "".join(_cells(by_label.get(job.label)) for job in scored)
        rows.append(f"<tr><td>{escape(task)}</td><td>{escape(metric)}</td>{cells}</tr>")
    return ('<h2>Metrics</h2><table id="headline"><thead><tr><th rowspan="2">task</th><th rowspan="2">metric</th>'
            f'{top}</tr><tr>{sub}</tr></thead><tbody>{"".join(rows)}</tbody></table>')


def _cells(line: MetricSummary | None) -> str:
    if line is None:
        return '<td class="num">-</td>' * 3
    mean = "-" if line.mean is None else svg.number(line.mean)
    spread = f" ± {svg.number(line.stderr)}" if line.stderr is not None else ""
    errors = f'<span class="bad">{line.errors}</span>' if line.errors else "0"
    at_k = "" if line.pass_at_k is None else (f'<div class="sub">pass@k {svg.number(line.pass_at_k)}, majority@k '
                                               f'{svg.number(line.majority_at_k)}</div>')
    return f'<td class="num">{mean}{spread}{at_k}</td><td class="num">{line.n}</td><td class="num">{errors}</td>'


def charts(scored: list[Job], lines: Lines) -> str:
    """One bar chart per metric: tasks grouped, one bar per run; a metric 0/1 in every task and run on an axis
    from 0 to 1."""
    by_metric: dict[str, dict[str, list[svg.Bar]]] = {}
    binary: dict[str, bool] = {}
    for (task, metric), by_label in lines.items():
        binary[metric] = binary.get(metric, True) and all(line.binary for line in by_label.values())
        bars = [svg.Bar(i, job.label, line.mean, line.stderr, line.n) for i, job in enumerate(scored)
                if (line := by_label.get(job.label)) is not None and line.mean is not None]
        if bars:
            by_metric.setdefault(metric, {})[task] = bars
    figures = [f"<figure><figcaption>{escape(metric)}</figcaption>"
               f"{svg.chart(f'chart-{i}', metric, groups, binary[metric], len(scored))}</figure>"
               for i, (metric, groups) in enumerate(by_metric.items())]
    note = '<p class="note">Bars: the mean per task; whiskers: ± one standard error; hover a bar for n.</p>'
    legend = svg.legend([job.label for job in scored])
    return f'<h2>Charts</h2>{note}{legend}<div class="charts">{"".join(figures)}</div>'


def speed_charts(scored: list[Job], speeds: dict[str, Speed | None]) -> str:
    """A bar chart of each SPEED_CHARTS figure, one bar per run (in the metric charts' colours)."""
    figures_html = []
    for key in SPEED_CHARTS:
        bars = [svg.Bar(i, job.label, value, None, speed.n) for i, job in enumerate(scored)
                if (speed := speeds[job.label]) is not None and (value := figures(speed)[key]) is not None]
        if bars:
            chart = svg.chart(f"speed-{key}", FIGURES[key], {"whole run": bars}, False, len(scored),
                              title=f"{FIGURES[key]} by run")
            figures_html.append(f"<figure><figcaption>{escape(FIGURES[key])}</figcaption>{chart}</figure>")
    if not figures_html:
        return ""
    note = '<p class="note">Answers from the cache or carried over by a retry are left out; hover a bar for n.</p>'
    return f'<h2>Speed</h2>{note}<div class="charts">{"".join(figures_html)}</div>'


def shown_samples(scored: list[Job]) -> dict[str, tuple[list[Sample], int]]:
    """task -> (the first SAMPLE_CAP samples, how many distinct samples the runs have), across the runs."""
    tasks: dict[str, tuple[dict[str, Sample], set[str]]] = {}
    for job in scored:
        for sample in job.run.manifest.samples:
            kept, ids = tasks.setdefault(sample.task, ({}, set()))
            ids.add(sample.id)
            if len(kept) < SAMPLE_CAP:
                kept.setdefault(sample.id, sample)
    return {task: (list(kept.values()), len(ids)) for task, (kept, ids) in tasks.items()}


def read_records(run: Run, shown: dict[str, tuple[list[Sample], int]]) -> Records:
    """Stream the run's records, keeping those of the samples shown."""
    keep = {sample.id for samples, _ in shown.values() for sample in samples}
    records = Records()
    for response in run.responses():
        if response.id in keep:
            records.responses.setdefault(response.id, []).append(response)
    for score in run.scores():
        if score.id in keep:
            records.scores.setdefault((score.id, score.repeat), []).append(score)
    return records


def samples_view(scored: list[Job], shown: dict[str, tuple[list[Sample], int]], records: dict[str, Records]) -> str:
    """Per task, a collapsible table: the sample, then each run's raw response and scores."""
    parts = ["<h2>Samples</h2>"]
    for task, (samples, total) in shown.items():
        left_out = ""
        if total > len(samples):
            left_out = f"; showing the first {len(samples)}, {total - len(samples)} left out"
        rows = [[_sample_cell(sample), *(_answer_cell(records[job.label], sample.id) for job in scored)]
                for sample in samples]
        parts.append(f'<details class="task"><summary>{escape(task)} ({total} samples{left_out})</summary>'
                     f'{_chat_view(scored, task)}'
                     f'{table(["sample", *(escape(job.label) for job in scored)], rows)}</details>')
    return "".join(parts)


def _chat_view(scored: list[Job], task: str) -> str:
    """The messages each run sent before every prompt of `task` (its system prompt and few-shot turns), once per
    distinct chat; nothing for a task asked as its prompts alone."""
    chats: dict[tuple, list[str]] = {}
    for job in scored:
        entry = next((t for t in job.run.manifest.tasks if t.name == task), None)
        before = tuple((m["role"], m["content"]) for m in entry.messages("")[:-1]) if entry else ()
        if before:
            chats.setdefault(before, []).append(job.label)
    parts = []
    for before, labels in chats.items():
        sent = "".join(f'<div class="sub">{escape(role)}</div>{_text(content)}' for role, content in before)
        whose = f" ({escape(', '.join(labels))})" if len(chats) > 1 else ""
        parts.append(f'<div class="chat"><div class="sub">sent before each prompt{whose}:</div>{sent}</div>')
    return "".join(parts)


def _text(text: str) -> str:
    more = f'<span class="note">… {len(text) - TEXT_CAP} more characters</span>' if len(text) > TEXT_CAP else ""
    return f"<pre>{escape(text[:TEXT_CAP])}</pre>{more}"


def _sample_cell(sample: Sample) -> str:
    reference = "" if sample.reference is None else \
        f'<div class="sub">reference: <code>{escape(repr(sample.reference))}</code></div>'
    return f"<code>{escape(sample.id)}</code>{_text(sample.prompt)}{reference}"


def _answer_cell(records: Records, sample_id: str) -> str:
    """Each of the sample's answers (one per repeat, numbered when there are several) with its scores."""
    responses = records.responses.get(sample_id)
    if not responses:
        return '<p class="note">not asked in this run, or no response recorded</p>'
    return "".join(_answer(records, response, len(responses) > 1) for response in responses)


def _answer(records: Records, response: ResponseRecord, numbered: bool) -> str:
    heading = f'<div class="sub">repeat {response.repeat}</div>' if numbered else ""
    if response.text is None:
        answer = f'<p class="bad">no response: {_error(response.error)}</p>'
    else:
        answer = _text(response.text)
    scores = "".join(f"<li>{_score(score)}</li>" for score in records.scores.get((response.id, response.repeat), []))
    return heading + answer + (f'<ul class="scores">{scores}</ul>' if scores else "")


def _error(error: ErrorInfo | None) -> str:
    return escape(str(error) if error else "no value")


def _score(score: ScoreRecord) -> str:
    """`contains 1`, `check_name_dir: name 1, direction 0`, or the scorer's error; then its detail."""
    detail = f' <span class="sub">({escape(score.detail)})</span>' if score.detail else ""
    if score.metrics is None:
        return f'{escape(score.scorer)}: <span class="bad">{_error(score.error)}</span>{detail}'
    values = ", ".join(f'{escape(m.removeprefix(score.scorer + "."))} <span class="{"v0" if v == 0 else "good"}">'
                       f'{escape(str(v))}</span>' for m, v in score.metrics.items())
    prefix = "" if list(score.metrics) == [score.scorer] else f"{escape(score.scorer)}: "
    return f"{prefix}{values}{detail}"


def provenance(runs: list[Job], speeds: dict[str, Speed | None]) -> str:
    """Who, when, where, what and how fast of each run, one column per run."""
    if not runs:
        return ""
    fields = [{**_facts(job.run), "speed": _speed_fact(speeds[job.label])} for job in runs]
    rows = [[escape(name), *(f"<pre>{escape(facts.get(name, '-'))}</pre>" for facts in fields)]
            for name in dict.fromkeys(name for facts in fields for name in facts)]
    return "<h2>Provenance</h2>" + table(["", *(escape(job.label) for job in runs)], rows, ' id="provenance"')


def _facts(run: Run) -> dict[str, str]:
    info, identity, env = run.info, run.info.identity, run.info.environment
    details = identity.get("details") or {}
    return {
        "run id": info.run_id, "directory": shown_name(str(run.path)), "benchmark": info.benchmark,
        "status": info.status + (f": {info.reason}" if info.reason else ""),
        "started": info.started_at, "ended": info.ended_at or "-", "manifest id": info.manifest_id or "-",
        "model": str(identity.get("name") or info.model), "model digest": run.model_digest or "-",
        "model details": ", ".join(f"{k}={v}" for k, v in details.items() if isinstance(v, str) and v),
        "server version": str(identity.get("server_version", "-")),
        "runner": "\n".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in info.runner.items()),
        "overrides": "\n".join(info.overrides) or "-",
        "counts": ", ".join(f"{k}={v}" for k, v in info.counts.model_dump().items()),
        "benchrun": str(env.get("benchrun", "-")), "python": str(env.get("python", "-")),
        "platform": str(env.get("platform", "-")), "host": str(env.get("hostname", "-")),
        "packages": "\n".join(f"{k} {v}" for k, v in (env.get("packages") or {}).items()),
        "sessions": str(1 + sum("host_lost" not in entry for entry in info.history)),
        **_repeats(run), **_judges(run),
    }


def _repeats(run: Run) -> dict[str, str]:
    """With repeats: k, and each task's consistency (the share of samples whose answers are identical)."""
    summary = run.summary
    if summary is None or not summary.repeats:
        return {}
    shares = ", ".join(f"{task} {svg.number(share)}" for task, share in (summary.consistency or {}).items())
    return {"repeats": f"{summary.repeats} answers per sample", "consistency": shares or "-"}


def _judges(run: Run) -> dict[str, str]:
    """With judges: the judge model's identity, and each judge's agreement with itself and with the scorers."""
    identity = judge_identity(run.info.judge)
    if identity is None:
        return {}
    lines = [f"{name} with {other}: {number(agreement)} (kappa {number(kappa)}, {answers} answers)"
             for name, other, answers, agreement, kappa in agreement_rows(agreements(run))]
    return {"judge model": identity, "judges' agreement": "\n".join(lines) or "-"}


def _speed_fact(speed: Speed | None) -> str:
    """Every speed figure on a line of its own, then how many answers they are from."""
    if speed is None:
        return "-"
    lines = [f"{FIGURES[key]} {text}" for key, text in speed_cells(speed).items()]
    return "\n".join([*lines, f"from {speed.n} answers, {speed.failed} failed requests"])
