"""The report page's parts about whole runs: the runs, the metrics, the charts, speed and provenance, as HTML."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from benchrun.archive.answerunit import answer_unit, figure_label
from benchrun.archive.books import counts_of
from benchrun.archive.reader import Run
from benchrun.archive.sessions import mixed_judges, mixed_models, session_count
from benchrun.archive.speed import FIGURES, figures
from benchrun.audit import report_svg as svg
from benchrun.audit.heading import parts, reason, with_reason
from benchrun.audit.judged import agreement_rows, agreements, judge_identity
from benchrun.audit.lines import MetricLines
from benchrun.audit.lines import metric_lines as lines_of
from benchrun.audit.provenance import server_version
from benchrun.audit.report_text import html_text
from benchrun.console.output import at_k_basis, number, speed_cells
from benchrun.console.visible import shown_name
from benchrun.core.layout import NO_RUN
from benchrun.core.records import MetricSummary, Speed
from benchrun.core.text import counted

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

    @cached_property
    def why(self) -> str | None:
        """Why the job ended as it did: why it left no readable run, else its run's `reason` (once: a `running` run's
        asks run.lock and may scan /proc)."""
        return self.reason or (reason(self.run) if self.run else None)


def table(head: list[str], rows: list[list[str]], attrs: str = "") -> str:
    """A table from already-escaped cells."""
    ths = "".join(f"<th>{h}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table{attrs}><thead><tr>{ths}</tr></thead><tbody>{trs}</tbody></table>"


def overview(jobs: list[Job]) -> str:
    rows = [[html_text(job.label), _status(job.status), html_text(job.run.id if job.run else "-"),
             html_text(job.why or ""),
             f"<code>{html_text(shown_name(str(job.path)))}</code>"] for job in jobs]
    return "<h2>Runs</h2>" + table(["run", "status", "run id", "reason", "directory"], rows, ' id="runs"')


def _status(status: str) -> str:
    return f'<span class="{"good" if status == "completed" else "bad"}">{html_text(status)}</span>'


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
    top = "".join(f'<th colspan="3">{html_text(job.label)}</th>' for job in scored)
    sub = "<th>mean ± stderr</th><th>n</th><th>errors</th>" * len(scored)
    rows = []
    for (task, metric), by_label in lines.items():
        cells = "".join(_cells(by_label.get(job.label)) for job in scored)
        rows.append(f"<tr><td>{html_text(task)}</td><td>{html_text(metric)}</td>{cells}</tr>")
    return ('<h2>Metrics</h2><table id="headline"><thead><tr><th rowspan="2">task</th><th rowspan="2">metric</th>'
            f'{top}</tr><tr>{sub}</tr></thead><tbody>{"".join(rows)}</tbody></table>')


def _cells(line: MetricSummary | None) -> str:
    if line is None:
        return '<td class="num">-</td>' * 3
    mean = "-" if line.mean is None else svg.number(line.mean)
    spread = f" ± {svg.number(line.stderr)}" if line.stderr is not None else ""
    errors = f'<span class="bad">{line.errors}</span>' if line.errors else "0"
    basis = f" ({html_text(said)})" if (said := at_k_basis(line)) else ""
    at_k = "" if line.pass_at_k is None else (f'<div class="sub">pass@k {svg.number(line.pass_at_k)}, majority@k '
                                               f'{svg.number(line.majority_at_k)}{basis}</div>')
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
    figures = [f"<figure><figcaption>{html_text(metric)}</figcaption>"
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
            figures_html.append(f"<figure><figcaption>{html_text(FIGURES[key])}</figcaption>{chart}</figure>")
    if not figures_html:
        return ""
    note = '<p class="note">Answers from the cache or carried over by a retry are left out; hover a bar for n.</p>'
    return f'<h2>Speed</h2>{note}<div class="charts">{"".join(figures_html)}</div>'


def provenance(runs: list[Job], speeds: dict[str, Speed | None]) -> str:
    """Who, when, where, what and how fast of each run, one column per run."""
    if not runs:
        return ""
    fields = [{**_facts(job), "speed": _speed_fact(speeds[job.label], answer_unit(job.run))} for job in runs]
    rows = [[html_text(name), *(f"<pre>{html_text(facts.get(name, '-'))}</pre>" for facts in fields)]
            for name in dict.fromkeys(name for facts in fields for name in facts)]
    return "<h2>Provenance</h2>" + table(["", *(html_text(job.label) for job in runs)], rows, ' id="provenance"')


def _facts(job: Job) -> dict[str, str]:
    run = job.run
    info, identity, env = run.info, run.info.identity, run.info.environment
    details = identity.get("details") or {}
    return {
        "run id": info.run_id, "directory": shown_name(str(run.path)), "benchmark": info.benchmark,
        "status": with_reason(info.status, job.why),
        "started": info.started_at, "ended": info.ended_at or "-", "manifest id": info.manifest_id or "-",
        "model": str(identity.get("name") or info.model), "model digest": run.model_digest or "-",
        **_answered_by(run),
        "model details": ", ".join(f"{k}={v}" for k, v in details.items() if isinstance(v, str) and v),
        "server version": server_version(identity),
        "runner": "\n".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in info.runner.items()),
        "overrides": "\n".join(info.overrides) or "-",
        "counts": ", ".join(f"{k}={v}" for k, v in counts_of(run).model_dump().items()),
        "benchrun": str(env.get("benchrun", "-")), "python": str(env.get("python", "-")),
        "platform": str(env.get("platform", "-")), "host": str(env.get("hostname", "-")),
        "packages": "\n".join(f"{k} {v}" for k, v in (env.get("packages") or {}).items()),
        "sessions": str(session_count(info)),
        **{name: text for name, text in parts(info, answer_unit(run)).items() if text},
        **_repeats(run), **_judges(run),
    }


def _answered_by(run: Run) -> dict[str, str]:
    """When more than one model answered the run (or graded it), which answered how many, as `show` says it."""
    said = {"answered by": mixed_models(run), "graded by": mixed_judges(run)}
    return {name: text for name, text in said.items() if text}


def _repeats(run: Run) -> dict[str, str]:
    """With repeats: k, and each task's consistency (the share of samples whose answers are identical)."""
    summary = run.summary
    if summary is None or not summary.repeats:
        return {}
    scan = MetricLines(run)
    over = {task: f" (over {counted} of {of} samples)" for task, (counted, of) in scan.consistency_samples().items()}
    shares = ", ".join(f"{task} {svg.number(share)}{over.get(task, '')}" for task, share in scan.consistency().items())
    return {"repeats": f"{counted(summary.repeats, 'answer')} per sample", "consistency": shares or "-"}


def _judges(run: Run) -> dict[str, str]:
    """With judges: the judge model's identity, and each judge's agreement with itself and with the scorers."""
    identity = judge_identity(run.info.judge)
    if identity is None:
        return {}
    lines = [f"{name} with {other}: {number(agreement)} (kappa {number(kappa)}, {counted(answers, 'answer')})"
             for name, other, answers, agreement, kappa in agreement_rows(agreements(run))]
    return {"judge model": identity, "judges' agreement": "\n".join(lines) or "-"}


def _speed_fact(speed: Speed | None, unit: str) -> str:
    """Every speed figure on a line of its own (its rate in `unit`s, `answer_unit`), then how many answers they are
    from."""
    if speed is None:
        return "-"
    lines = [f"{figure_label(key, unit)} {text}" for key, text in speed_cells(speed).items()]
    return "\n".join([*lines, f"from {counted(speed.n, 'answer')}, {counted(speed.failed, 'failed request')}"])
