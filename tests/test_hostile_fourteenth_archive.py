"""Hostile input, fourteenth pass, the archive and audit side (issue 19's fresh pass of the same kinds): the cases it
found bad, each with the rule it now obeys.

- a run made by a group sharing its archive (a setgid root, umask 002): its record files (responses.jsonl,
  scores.jsonl, records.sha256) and run.lock were made rw-r--r-- whatever the umask (`archive.dirlock.no_link` gave
  0o644), while run.json and summary.json beside them were rw-rw-r--, so another member of the group (tried with
  real users, `runuser -u archive2`) could read the run but `rescore`, `resume` and `retry` all stopped at
  `permission denied writing .../run.lock`. Now every file a writer makes has the mode `open` gives, what the umask
  leaves of rw-rw-rw- (`no_link`): 0o664 under umask 002, and 0o600 under umask 077 as before
- a writer killed mid-write (`export --output`, `report`, `report --output`, a run or resume killed as it rewrote
  run.json or summary.json) left its hidden temporary file (`.result.<pid>.<random>.tmp`) beside the file for ever:
  no later write removed it, however many followed. Now the next write of the same file removes the temporary files
  on their way to it that their writers left (`archive.atomic.remove_leftovers`): a live writer holds its temporary
  file locked (flock) from just after it makes it, so only a regular file of that name, unchanged for a minute,
  that no one holds locked is removed; a link, another file's temporary file, a fresh one and a locked one are left,
  and where the file system cannot lock nothing is removed. The writing of files whole or not at all moved with it
  from `archive.writer` into `archive.atomic`
- `benchrun-audit cache` (listing, without `--clear`) opened the database for writing as a run does: a 0-byte file
  in the cache's place became a 24 kB database of the cache's tables, listing any cache rewrote its file, and a cache
  on a read-only medium (or one the user may not write) could not be listed at all (`cannot be used
  (OperationalError: unable to open database file); set cache_dir= to a directory on local disk, or cache=false`).
  Now listing opens the database read-only (`audit.cache.Listing`: SQLite's `mode=ro`, `immutable=1` in a folder it
  may not write), checks its schema version as a run does, and makes no entry, table or database (a 0-byte file
  stays one: `0 entries, 0 B`); `--clear` on a medium it may not write is one line before SQLite is asked:
  `read-only file system writing .../responses.sqlite3`, exit 4
- a run directory copied while its writer wrote it (`cp -r`, rsync, a backup, `mv` to another file system): the
  copy's run.lock, held by no one, was taken for a killed writer's, so `verify` said `its writer (pid ...) stopped
  before the run ended (killed, or its disk failed); finish it with: benchrun-audit resume COPY`, and `resume` did:
  it asked the rest of the questions again beside the live run and sealed a second run of the same run id. Now a
  note naming a process of this host that still runs and started before the note was written (so no later process
  that took its pid) is the writer of the run this directory was copied from (`archive.dirlock.writing_elsewhere`):
  `verify` says `its writer (pid ... on host ... since ...) is still running but holds no lock here: this directory
  is a copy of its run, made while it wrote (cp, rsync, a backup, a move to another file system); verify the run
  where it is written`, and every writer that takes the lock (`resume`, `retry`, `rescore`) refuses it in one line
  (`...; finish the run where it is written, and this copy only if that one is lost`), exit 4, nothing written.
  Once that writer has ended the copy is again a killed run's, which `resume` finishes (the user's choice)

What held, tried and found as the rules say. SIGKILL at 20 ms steps (the kinds the thirteenth pass did not
kill): `report` of a run of 3,000 samples (60 steps: report.html the old file or the new one whole, never part, the
run intact), `cache --clear` of 20,000 entries, and `--clear --digest` of half of them (80 steps across the clear
and its VACUUM: every entry there or every cleared one gone, never part, and the cache listed after each). Copies: a run copied with `cp -r` (times and modes lost), `rsync -a`,
a `tar` round trip, a `zip`/`unzip` round trip and onto tmpfs: `verify` intact, `rescore` then `verify` intact; model
names with `:` never reach a file name (`gemma3:4b` is `..._gemma3-4b`). Read-only media (a read-only bind mount, a
squashfs image): `list`, `show`, `verify`, `export`, `compare` work; `report`, `export --output`, `rescore`,
`resume` one line each (`read-only file system writing .../report.html`, `.../run.lock`), exit 4; `retry` of a run
with nothing to retry says so first. vfat and exfat could not be tried: this machine's kernel has neither (no loop
mount). Real users (`useradd archive1 archive2`, `runuser`, a venv of the system's Python 3.11): a run made by
archive1 under umask 077 is `permission denied: <run>` (exit 4) to every command of archive2, and `show PREFIX`
says what it could not read; in a group-shared setgid root (the fix above) archive2 verifies, reports, exports and
rescores archive1's run, the rescore's files archive2's and the group's. Time: run.json dates edited and resealed
(year 9999, year 1, 1969, no offset, +14:00/-12:00, ended before started): `list` sorts and shows them in UTC,
`show` as written, `verify` intact (a clock stepped back mid-run makes an end before the start, so it is not
refused), `--since` filters by them; runs made under faketime in 1969 and 2200 are listed, verified and compared,
and rescored under a clock set back from 2200 to 1969 (no audit command subtracts wall-clock times). Past 2262
Python itself cannot start (`import logging`: `timestamp too large to convert to C _PyTime_t`), before benchrun.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.execute.cache import DB_FILE, Store
from benchrun.testing.inprocess import child_env, cli
from benchrun.testing.lab import Lab
from tests.helpers.archives import synthetic_run
from tests.helpers.cacheentry import entry

pytestmark = pytest.mark.slow


def audit(cwd: Path, *args: str):
    return cli(*args, cwd=cwd, module="benchrun.audit")


# -- a group that shares the archive ---------------------------------------------------------------------------------

def test_every_file_a_run_makes_has_the_mode_the_umask_gives(tmp_path):
    """A run made under umask 002 (a group sharing a setgid archive): its record files and run.lock were made
    rw-r--r-- whatever the umask, so another member of the group could read the run but never rescore, resume or
    retry it (`permission denied writing .../run.lock`), while run.json beside them was rw-rw-r--."""
    old = os.umask(0o002)
    try:
        run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    finally:
        os.umask(old)
    modes = {path.name: oct(path.stat().st_mode & 0o777) for path in run_dir.iterdir()}
    assert modes == dict.fromkeys(["config.yaml", "manifest.json", "responses.jsonl", "scores.jsonl",
                                   "records.sha256", "run.lock", "run.json", "summary.json", "seal.json"], "0o664")


def test_a_private_run_stays_private(tmp_path):
    old = os.umask(0o077)
    try:
        run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    finally:
        os.umask(old)
    assert {oct(path.stat().st_mode & 0o777) for path in run_dir.iterdir()} == {"0o600"}


# -- temporary files that a killed writer left -----------------------------------------------------------------------

KILLED_WRITING = """
import os, signal, sys
from pathlib import Path
from benchrun.archive.atomic import atomic_file
with atomic_file(Path(sys.argv[1])) as handle:
    handle.write(b"half a file")
    handle.flush()
    os.kill(os.getpid(), signal.SIGKILL)
"""


def killed_writing(path: Path) -> Path:
    """The temporary file that a writer of `path`, killed mid-write, left beside it, aged an hour."""
    killed = subprocess.run([sys.executable, "-c", KILLED_WRITING, str(path)], env=child_env(), timeout=60)
    assert killed.returncode == -signal.SIGKILL
    [left] = [p for p in path.parent.iterdir() if p.name.startswith(f".{path.name}.")]
    os.utime(left, (left.stat().st_atime - 3600, left.stat().st_mtime - 3600))
    return left


def aged(path: Path, data: bytes = b"x") -> Path:
    path.write_bytes(data)
    os.utime(path, (path.stat().st_atime - 3600, path.stat().st_mtime - 3600))
    return path


@pytest.mark.parametrize("command", ["export", "report"])
def test_what_a_killed_writer_left_is_removed_by_the_next_write_of_that_file(tmp_path, command):
    """A killed `export --output` or `report --output` (or a run killed as it rewrote run.json) left its hidden
    temporary file beside the file for ever: every later write made a new one and none removed the old."""
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    output = tmp_path / "out" / "result"
    output.parent.mkdir()
    left = killed_writing(output)
    fresh = output.parent / f".result.{os.getpid()}.{'a' * 12}.tmp"
    fresh.write_bytes(b"a writer between making its file and locking it")
    other = aged(output.parent / f".other.1.{'b' * 12}.tmp")
    held = aged(output.parent / f".result.1.{'c' * 12}.tmp")
    with open(held, "rb") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        written = audit(tmp_path, command, str(run_dir), "--output", str(output))
    assert written.returncode == EXIT["ok"], written.stderr
    assert sorted(p.name for p in output.parent.iterdir()) == sorted(["result", fresh.name, other.name, held.name])
    assert left.name not in os.listdir(output.parent)
    assert output.read_bytes() != b"half a file"


def test_a_run_directorys_leftover_is_removed_by_the_next_rewrite_and_nothing_else(tmp_path):
    run_dir = synthetic_run(tmp_path / "run", [1.0, 0.0])
    left = killed_writing(run_dir / "report.html")
    link = run_dir / f".report.html.1.{'d' * 12}.tmp"
    link.symlink_to(tmp_path / "victim")
    (tmp_path / "victim").write_text("kept")
    os.utime(link, (0, 0), follow_symlinks=False)
    assert audit(tmp_path, "report", str(run_dir)).returncode == EXIT["ok"]
    assert (left.exists(), link.is_symlink(), (tmp_path / "victim").read_text()) == (False, True, "kept")


# -- the response cache, listed ---------------------------------------------------------------------------------------

def audit_cache(tmp_path: Path, cache: Path, *args: str):
    return audit(tmp_path, "cache", "--cache-dir", str(cache), *args)


def test_listing_an_empty_file_as_the_cache_leaves_it_empty(tmp_path):
    """`cache` opened the database for writing to list it: a 0-byte file (a cache being copied, a placeholder)
    became a 24 kB database of the cache's tables, and a cache it may not write could not be listed."""
    database = tmp_path / "cache" / DB_FILE
    database.parent.mkdir()
    database.touch()
    shown = audit_cache(tmp_path, database.parent)
    assert (shown.returncode, shown.stdout, database.stat().st_size) == (
        EXIT["ok"], f"response cache: {database}, 0 entries, 0 B\n", 0)
    assert sorted(os.listdir(database.parent)) == [DB_FILE]


def test_listing_a_cache_writes_no_entry_and_checks_its_version(tmp_path):
    cache = tmp_path / "cache"
    with Store(cache) as store:
        store.put("k1", entry())
    before = (cache / DB_FILE).read_bytes()
    shown = audit_cache(tmp_path, cache, "--json")
    assert (shown.returncode, json.loads(shown.stdout)["entries"], (cache / DB_FILE).read_bytes()) == (
        EXIT["ok"], 1, before)


@pytest.fixture
def read_only_cache(tmp_path):
    """A cache of one entry, seen through a read-only bind mount (root only)."""
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root")
    cache, mount = tmp_path / "cache", tmp_path / "mounted"
    with Store(cache) as store:
        store.put("k1", entry())
    mount.mkdir()
    if subprocess.run(["mount", "--bind", str(cache), str(mount)], capture_output=True).returncode != 0:
        pytest.skip("this machine cannot bind-mount")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(mount)], check=True, capture_output=True)
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_cache_on_a_read_only_medium_is_listed_and_its_clear_refused_in_one_line(tmp_path, read_only_cache):
    shown = audit_cache(tmp_path, read_only_cache, "--json")
    cleared = audit_cache(tmp_path, read_only_cache, "--clear")
    assert (shown.returncode, json.loads(shown.stdout)["entries"]) == (EXIT["ok"], 1)
    assert (cleared.returncode, cleared.stderr) == (
        EXIT["archive"], f"benchrun: error: read-only file system writing {read_only_cache / DB_FILE}\n")


# -- a copy of a run made while it was written ------------------------------------------------------------------------

def files_of(run_dir: Path) -> dict[str, bytes]:
    return {path.relative_to(run_dir).as_posix(): path.read_bytes() for path in run_dir.rglob("*") if path.is_file()}


def test_a_copy_of_a_run_made_while_it_ran_is_not_taken_for_a_killed_one(tmp_path):
    """A run directory copied while its writer wrote it (`cp -r`, rsync, a backup, `mv` to another file system):
    the copy's run.lock, which no one holds, was taken for a killed writer's, so `verify` told the user to `resume`
    it and `resume` asked the rest of the questions again beside the live run, two runs of one run id."""
    with Lab(tmp_path, n=30, latency_s=0.1) as lab:
        writer = lab.start(*lab.args())
        lab.wait_for(lambda: bool(lab.run_dirs()) and lab.lines(lab.run_dirs()[0]) > 3)
        [run_dir] = lab.run_dirs()
        copy = tmp_path / "copy"
        shutil.copytree(run_dir, copy)
        before = files_of(copy)
        verified = audit(tmp_path, "verify", str(copy))
        resumed = audit(tmp_path, "resume", str(copy))
        after = files_of(copy)
        writer.communicate(timeout=120)
    assert writer.returncode == EXIT["ok"]
    note = json.loads(before["run.lock"])
    elsewhere = (f"its writer (pid {note['pid']} on host {note['host']} since {note['since']}) is still running but "
                 "holds no lock here: this directory is a copy of its run, made while it wrote (cp, rsync, a backup, a "
                 "move to another file system)")
    assert (verified.returncode, verified.stdout.splitlines()[1]) == (EXIT["not_intact"], (
        f"FAIL  run.json: says 'running', but no live process holds run.lock: {elsewhere}; verify the run where it "
        "is written (record lines checked against records.sha256 only)"))
    assert (resumed.returncode, resumed.stderr) == (EXIT["archive"], (
        f"benchrun: error: in {str(copy)!r}: {elsewhere}; finish the run where it is written, and this copy only "
        "if that one is lost\n"))
    assert after == before
