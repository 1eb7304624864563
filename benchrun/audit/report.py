"""`report RUN|SWEEP [RUN ...]`: one self-contained static HTML file: metrics, charts, samples, provenance; which
runs it is of, and where it is written."""

from __future__ import annotations

import argparse
import base64
import errno
import hashlib
import os
from importlib.resources import files
from pathlib import Path
from string import Template
from typing import Sequence

from benchrun.archive.atomic import named_output, write_atomic
from benchrun.archive.lookup import is_sweep, named, resolve_run, sweep_jobs
from benchrun.archive.pathmax import run_or_too_long
from benchrun.archive.reader import DEFAULT_ROOT, PathLike, Run, load_run
from benchrun.archive.speed import speed_of
from benchrun.audit import arguments
from benchrun.audit.named import say_passed_over
from benchrun.audit.outputname import suffix_fits
from benchrun.audit.report_page import Job, charts, headline, metric_lines, overview, provenance, speed_charts
from benchrun.audit.report_samples import read_records, samples_view, shown_samples
from benchrun.audit.report_text import html_text
from benchrun.console.output import say, stdout
from benchrun.console.visible import shown_name
from benchrun.core.errors import EXIT, ArchiveError, BenchrunError, writing

REPORT_FILE = "report.html"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("refs", nargs="+", metavar="RUN|SWEEP",
                        help="run directories, run id prefixes or a sweep directory")
    parser.add_argument("--output", type=arguments.output,
                        help=f"the HTML file to write (default: <run or sweep dir>/{REPORT_FILE})")
    arguments.add_root(parser)


def main(args: argparse.Namespace) -> int:
    say(stdout(), shown_name(str(write_report(args.refs, args.output, args.root))))
    return EXIT["ok"]


def write_report(refs: PathLike | Sequence[PathLike], output: PathLike | None = None,
                 root: PathLike = DEFAULT_ROOT) -> Path:
    """Write the HTML report of the run or sweep `refs` (or of several); its path. An `output` named is written as
    --output is (through a link, into a pipe); the default one, in the run's or sweep's directory, as the archive
    writes its own files: a link there replaced, never written through (a `report.html` planted in a shared run,
    linked to `~/.bashrc`, had it overwritten by whoever reported on the run)."""
    refs = [refs] if isinstance(refs, (str, os.PathLike)) else list(refs)
    jobs = list({job.path.resolve(): job for ref in refs for job in expand(ref, root)}.values())
    named = output is not None
    if output is None:
        if len(refs) > 1:
            raise BenchrunError("several runs: say where the report goes with --output FILE.html")
        output = (Path(refs[0]) if is_sweep(Path(refs[0])) else jobs[0].path) / REPORT_FILE
    output = Path(output)
    if named:
        named_output(output)  # refused before a folder is made for it (a rescore's, in a sealed run)
        suffix_fits(output, "html", "report")
    with writing(output):
        _make_folder(output.parent)
    write_atomic(output, render(label_jobs(jobs)).encode("utf-8"), follow=named)
    return output


def _make_folder(folder: Path) -> None:
    """Make `folder` and those above it; one that is there as a file is `not a directory`, as writing into it would
    say (mkdir says `file exists`)."""
    if os.path.lexists(folder) and not folder.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), os.fspath(folder))
    folder.mkdir(parents=True, exist_ok=True)


def expand(ref: PathLike, root: PathLike) -> list[Job]:
    """A run by path or id prefix, or every job of a sweep directory."""
    path = Path(named(ref))
    if is_sweep(path):
        jobs, later = sweep_jobs(path)
        say_passed_over(path, later)
        return [_job(job_dir, run) for job_dir, run in jobs]
    if path.is_dir() and not run_or_too_long(path):
        raise ArchiveError("neither a run directory (no run.json) nor a sweep directory (no sweep.json)",
                           file=os.fspath(ref))
    run = resolve_run(ref, root).require_records()
    return [Job(run.path, run)]


def _job(path: Path, run: Run | None = None) -> Job:
    """The job in `path` (its run, when already read), or why it left none readable (a symbolic link in place of its
    folder leads to no run of the sweep: `own_run`)."""
    if path.is_symlink():
        return Job(path, None, reason=f"a symbolic link (to {os.readlink(path)}) in place of the job's own folder: "
                                      "what it leads to is no run of the sweep")
    try:
        return Job(path, (run or load_run(path)).require_records())
    except ArchiveError as err:
        return Job(path, None, reason=f"the job left no readable run: {err}")


def label_jobs(jobs: list[Job]) -> list[Job]:
    """Label each job by its run's label (what varied in a sweep, else the model), adding the run id (or
    directory), then the directory (two copies of a run: their columns, keyed by label, were one), where labels
    repeat."""
    labels = distinct_labels([job.run.label if job.run else shown_name(job.path.name) for job in jobs],
                             [job.run.id if job.run else shown_name(job.path.name) for job in jobs],
                             [shown_name(str(job.path)) for job in jobs])
    for job, label in zip(jobs, labels):
        job.label = label
    return jobs


def distinct_labels(labels: Sequence[str], *tells: Sequence[str]) -> list[str]:
    """Each label, with each of `tells` in turn (its run's id, then its directory: a copy has its run's id) added
    (`label · id`) where labels still repeat, so every column has a name of its own."""
    for tell in tells:
        labels = [label if labels.count(label) == 1 else f"{label} · {told}" for label, told in zip(labels, tell)]
    return list(labels)


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
    body = "".join([f"<h1>{html_text(title)}</h1>", overview(jobs), headline(scored, lines), charts(scored, lines),
                    speed_charts(scored, speeds), samples_view(scored, shown, records) if scored else "",
                    provenance(runs, speeds)])
    template = files("benchrun.audit").joinpath("report_template.html").read_text("utf-8")
    return Template(template).substitute(csp=_csp(template), title=html_text(title), body=body)


def _csp(template: str) -> str:
    """Nothing from the network; only the template's own inline style and script, by hash."""
    def digest(tag: str) -> str:
        text = template.split(f"<{tag}>", 1)[1].split(f"</{tag}>", 1)[0]
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"
    return (f"default-src 'none'; style-src {digest('style')}; script-src {digest('script')}; "
            "img-src 'none'; base-uri 'none'; form-action 'none'")
