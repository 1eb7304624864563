"""Hostile input, twenty-seventh pass, the archive and audit side (what the twenty-sixth left, then a fresh pass): the
cases it found bad, each with the rule it now obeys.

- a planted manifest.json far larger than its run's could be was hashed whole before it was refused: a manifest is at
  most what its run's samples and limits make (`archive.manifestbound`), refused unread above it
- list, show and verify of a run whose run.lock note (an older benchrun's, without the writer's boot and start) names a
  pid that ended: a traceback (`archive.dirlock.writing_elsewhere`)
- `list --status running` listed runs whose writer was killed: such a run is `stopped` (`audit.listing.listed_as`)
- `cache --clear` while another process held the cache: exit 2, blaming --cache-dir, naming no process; it says who
  has the database open, that nothing was cleared, exit 4 (`audit.cache.Clearing`)
- compare of runs whose manifests differ where their config and files do not (a task's system prompt, the benchmark's
  name): `inputs that differ:` and nothing under it; the rest of the manifest is named, else that nothing compare
  reads differs (`audit.inputs.input_lines`); merge's refusal of such shards names it too
- a finished run's record file whose last line has no newline, sealed over: verify said intact, every reader passed
  over that record; verify and the readers refuse it (`archive.trust.unended`)
- a finished run's summary.json mean or run.json counts that its records do not make, sealed over: verify said intact
  while show and list said one number and export another; verify counts and tallies the records as their writer did
  (`audit.summarycheck`)
- a judge's metric (a bool asked twice: 0, 0.5, 1) got a t interval reaching below 0: an interval stays within what
  the metric's values can be (`audit.intervals.grade_bounds`)

And what holds, pinned: a sweep's sweep.json is its record as it ran (a job resumed later leaves it as it was), and its
readers read each job's run.json for what the job is now.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.archives import replace_manifest, reseal, synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.cacheentry import stats
from tests.helpers.p26_archive import sealed_line
from tests.helpers.p27_archive import holding, judged_by_two_calls, killed_here, sweep_resumed_after

CEILING = 6 * (2 * 256 * 2**20 + 2 * 100_000_000) + 2 * 64 * 2**10
"""The most a manifest of a run of two samples under the default limits holds (`manifest_ceiling`)."""


# -- what the twenty-sixth pass left -----------------------------------------------------------------------------------

def test_a_manifest_larger_than_its_run_can_hold_is_refused_unread(tmp_path):
    """manifest.json made one byte past the ceiling (sparse: it costs no disk): it was hashed, 4 GB, then refused as
    changed; a planted 100 GB one was hashed for minutes by every command."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    os.truncate(run_dir / "manifest.json", CEILING + 1)
    said = (f"{CEILING + 1:,} bytes, more than a manifest of this run can hold ({CEILING:,} bytes: 64 KiB a sample of "
            "run.json's, and 6 bytes a character of twice config.yaml's task.max_total_chars and of two files of "
            "256 MiB): not the run's, refused unread")
    done = audit(tmp_path, "show", str(run_dir))
    assert (done.returncode, done.stderr) == (EXIT["archive"], f"benchrun: error: in '{run_dir}': run {'5' * 12}: "
                                                               f"manifest.json: {said}, so what it says cannot be "
                                                               f"trusted; benchrun-audit verify {run_dir} says what "
                                                               "changed\n")
    done = audit(tmp_path, "verify", str(run_dir))
    assert done.returncode == EXIT["not_intact"]
    assert [line for line in done.stdout.splitlines() if line.startswith("FAIL")] == [f"FAIL  manifest.json: {said}"]


def test_list_tells_a_running_run_from_one_whose_writer_was_killed(tmp_path):
    """A run left `running` by a killed writer of this machine: `--status running` listed it as running."""
    killed_here(tmp_path / "outputs" / "k")
    synthetic_run(tmp_path / "outputs" / "c", [1, 0], run_id="8" * 12)
    listed = {status: [run["run_id"] for run in json.loads(audit(tmp_path, "list", "--json", "--status",
                                                                 status).stdout)]
              for status in ("running", "stopped", "completed")}
    assert listed == {"running": [], "stopped": ["7" * 12], "completed": ["8" * 12]}
    assert json.loads(audit(tmp_path, "list", "--json", "--status", "stopped").stdout)[0]["status"] == "running"
    assert "running (writer stopped)" in audit(tmp_path, "list").stdout


def test_a_run_lock_note_of_an_older_benchrun_whose_writer_is_gone_is_read(tmp_path):
    """run.lock's note without the writer's boot and start (an older benchrun's), its pid ended: list, show and verify
    crashed with a traceback (TypeError: None / int) looking for a live process of that pid."""
    killed = killed_here(tmp_path / "outputs" / "k")
    note = json.loads((killed / "run.lock").read_text())
    stopped = (f"status running: no live process holds run.lock: its writer (pid {note['pid']} on host {note['host']} "
               f"since {note['since']}) stopped before the run ended (killed, or its disk failed); finish it with: "
               f"benchrun-audit resume {killed}")
    assert stopped in " ".join(audit(tmp_path, "show", str(killed)).stdout.split())
    assert audit(tmp_path, "list").returncode == EXIT["ok"]
    done = audit(tmp_path, "verify", str(killed))
    assert (done.returncode, done.stderr, done.stdout.splitlines()[-1]) == (EXIT["not_intact"], "", "NOT intact: 1 problem")


def test_clearing_a_cache_another_process_holds_says_who_and_exits_4(tmp_path):
    """`cache --clear` while a sqlite3 shell holds a transaction open: `--cache-dir: ... locked ...; let that process
    finish and try again`, exit 2, though --cache-dir was right and no process was named."""
    cache = tmp_path / "cache"
    assert stats(cache).entries == 0  # the cache made
    database = cache / "responses.sqlite3"
    holder = holding(database)
    try:
        done = audit(tmp_path, "cache", "--cache-dir", str(cache), "--clear")
    finally:
        holder.stdin.close()
        holder.wait()
        holder.stdout.close()
    assert (done.returncode, done.stdout) == (EXIT["archive"], "")
    assert done.stderr == (f"benchrun: error: nothing was cleared: the response cache at {database.resolve()} is held "
                           "by another process, which has kept its write lock for over 5 s (pid "
                           f"{holder.pid} ({Path(sys.executable).name[:15]}) has it open): let it finish (or end it) "
                           "and clear again\n")


def test_a_judges_interval_stays_within_its_grades(tmp_path):
    """A judge's bool grade asked twice an answer (values 0, 0, 0, 0.5): its t interval was -0.273..0.523."""
    run_dir = judged_by_two_calls(tmp_path / "r")
    done = audit(tmp_path, "show", "--json", str(run_dir))
    assert done.returncode == EXIT["ok"], done.stderr
    line = next(row for row in json.loads(done.stdout)["metrics"] if row["metric"] == "closeness")
    assert (line["low"], round(line["high"], 3), line["interval"]) == (0, 0.523, "t")


# -- a fresh pass ------------------------------------------------------------------------------------------------------

def _inputs_said(cwd: Path, first: Path, second: Path) -> list[str]:
    """The lines `compare FIRST SECOND` prints of their inputs."""
    done = audit(cwd, "compare", str(first), str(second))
    assert done.returncode == EXIT["ok"], done.stderr
    lines = done.stdout.splitlines()
    start = lines.index("inputs that differ:")
    return lines[start:start + next(i for i, line in enumerate(lines[start + 1:], 1) if not line.startswith("  "))]


@pytest.mark.parametrize(("change", "said"), [
    (lambda manifest: manifest["tasks"][0].update(system="be terse"),
     '  manifest task t.system: only in the compared run ("be terse")'),
    (lambda manifest: manifest.update(benchmark="other"), '  manifest benchmark: "synthetic" -> "other"'),
    (lambda manifest: manifest["samples"].reverse(),
     "  nothing compare reads: the manifests are written otherwise (another benchrun's?)"),
])
def test_compare_names_what_differs_in_manifests_whose_config_and_files_are_alike(tmp_path, change, said):
    """Two runs whose manifests differ in a task's system prompt (their config and files alike: another benchrun's
    compile, a hand-made manifest): compare printed `inputs that differ:` and nothing under it."""
    first = synthetic_run(tmp_path / "a", [1, 0], run_id="a" * 12)
    second = synthetic_run(tmp_path / "b", [1, 0], run_id="b" * 12)
    replace_manifest(second, change)
    assert _inputs_said(tmp_path, first, second) == ["inputs that differ:", said]


UNENDED = ("scores.jsonl: its last line has no newline at its end, which the run's writer ends every line with: readers "
           "read only whole lines, and would pass over it")


def test_a_sealed_record_files_last_line_without_a_newline_is_refused(tmp_path):
    """A finished run's scores.jsonl whose last line lost its newline, digests and seal redone: verify said intact,
    and export, show and report passed over the record (the closeness of t:a=1) without a word."""
    run_dir = sealed_line(synthetic_run(tmp_path / "r", [1, 0]), "scores.jsonl", 4, lambda line: line.rstrip(b"\n"))
    done = audit(tmp_path, "verify", str(run_dir))
    assert done.returncode == EXIT["not_intact"]
    assert [line for line in done.stdout.splitlines() if line.startswith(("FAIL", "NOT"))] == [
        f"FAIL  {UNENDED}", "NOT intact: 1 problem"]
    for command in ("export", "show", "report"):
        done = audit(tmp_path, command, str(run_dir))
        assert (done.returncode, done.stderr) == (EXIT["archive"], (
            f"benchrun: error: in '{run_dir}': run {'5' * 12}: {UNENDED}, so what it says cannot be trusted; "
            f"benchrun-audit verify {run_dir} says what changed\n"))


def _mean_made_09(run_dir: Path) -> tuple[str, str]:
    summary = json.loads((run_dir / "summary.json").read_text())
    next(line for line in summary["metrics"] if line["metric"] == "closeness")["mean"] = 0.9
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    reseal(run_dir, "summary.json")
    return "summary.json", "t/closeness: summary.json's mean is 0.9, its score records make 0.5"


def _one_response_counted(run_dir: Path) -> tuple[str, str]:
    info = json.loads((run_dir / "run.json").read_text())
    info["counts"].update(responses=1, request_errors=1)
    (run_dir / "run.json").write_text(json.dumps(info, indent=2))
    reseal(run_dir)
    return "run.json", "counts.responses is 1, its records make 2"


@pytest.mark.parametrize("plant", [_mean_made_09, _one_response_counted])
def test_verify_refuses_sealed_numbers_its_records_do_not_make(tmp_path, plant):
    """summary.json's closeness mean made 0.9 (its records make 0.5), or run.json's counts made 1 response of which 1
    failed (2 answered), sealed again: verify said intact; show and list said 0.900 (`1/2 samples, 1 request errors`)
    while export's rows and the report's samples say 0.5 (2 answers)."""
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    name, why = plant(run_dir)
    done = audit(tmp_path, "verify", str(run_dir))
    assert done.returncode == EXIT["not_intact"]
    assert [line for line in done.stdout.splitlines() if line.startswith(("FAIL", "NOT"))] == [
        f"FAIL  {name}: {why}: show, list and compare read it, export and report read the records",
        "NOT intact: 1 problem"]


def test_a_sweeps_record_is_of_the_sweep_as_it_ran_and_readers_read_its_jobs_now(tmp_path):
    """sweep.json says its job interrupted; the job was resumed since: sweep.json is left as it was written (the sweep
    as it ran), and list, export and report say the job as its run.json says it now."""
    sweep = sweep_resumed_after(tmp_path)
    written = (sweep / "sweep.json").read_bytes()
    assert [job["status"] for job in json.loads(written)["jobs"]] == ["interrupted"]
    assert [run["status"] for run in json.loads(audit(tmp_path, "list", "--json").stdout)] == ["completed"]
    assert audit(tmp_path, "report", str(sweep)).returncode == EXIT["ok"]
    assert "interrupted" not in (sweep / "report.html").read_text()
    assert (sweep / "sweep.json").read_bytes() == written
