"""Hostile input, seventeenth pass, the side that attacked this session's own new code (writer fencing, the CPUs a
process may use, the run's running time, the disk out of inodes, the asking side's merged changes): the cases it found
bad, each with the rule it now obeys.

- a live run's run.lock opened in an editor and saved (vim and emacs add a newline at the end): the writer took its
  own note, a newline added, for another writer's, said `another writer (pid <its own pid> ...) took this run over`,
  stopped (exit 4) and left its note in the lock. A note that parses as this holder's own is its own
  (`archive.dirlock.DirLock.taken_over`)
- a writer whose command line was longer than 4096 bytes (many overrides) wrote a note no reader reads whole: a copy
  of its run made while it wrote was taken over as a dead writer's (`unreadable`) and another writer was told
  `pid ? on host ? since ?`. A holder's note is kept within what readers read, its command cut
  (`archive.locknote.this_note`)
- a resume whose run.lock note was emptied by hand (`: > run.lock`) while it read its records and asked the model
  server, before it first wrote run.json: it said another writer (since ended) took the run over, exit 4, nothing
  asked. Before its first write a holder compares run.json with the file it found on taking the lock
  (`archive.dirlock.DirLock.still_held`, `_file_of`)
- a live run's run.lock saved by an editor as a new file in its place (vim's save by rename, `sed -i`): the writer
  held, renewed and at the end emptied the file it had locked, no longer at the path; meanwhile a resume was told the
  directory was a copy of its run (wrong advice), and the completed run's run.lock kept the writer's note, which says
  it died holding it. The holder now locks the file at the path anew when it holds its own note
  (`archive.dirlock.DirLock._lock_anew`, the lease's check; `archive.lease.Lease` renews the file held now)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading

import pytest

from benchrun.archive.dirlock import DirLock, probe
from benchrun.archive.locknote import NOTE_MAX, describe
from benchrun.core.errors import EXIT, ArchiveBusy
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import Lab

HOLDER = ("import sys, time\nfrom pathlib import Path\nfrom benchrun.archive.dirlock import DirLock\n"
          "DirLock(Path(sys.argv[1])).acquire()\nprint('held', flush=True)\ntime.sleep(60)\n")
"""A writer that holds a run directory's lock (`argv[1]`) until killed."""


@pytest.mark.slow
def test_a_live_runs_lock_saved_by_an_editor_with_a_newline_added_leaves_the_run_its_writers(tmp_path):
    with Lab(tmp_path, n=4) as lab:
        with lab.held_after(2, *lab.args()) as (proc, run_dir):
            with open(run_dir / "run.lock", "ab") as lock:
                lock.write(b"\n")  # `:wq` in vim: the note and the newline vim ends each file with
        _, err = proc.communicate(timeout=60)
        verified = lab.call("verify", str(run_dir), module="benchrun.audit")
    assert (proc.returncode, err, verified.stdout.splitlines()[-1]) == (0, "", "intact")
    assert (run_dir / "run.lock").read_bytes() == b""


@pytest.mark.slow
def test_a_copy_of_a_run_whose_live_writers_command_is_long_is_refused_as_a_copy(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with subprocess.Popen([sys.executable, "-c", HOLDER, str(run_dir), "é" * 2000], stdout=subprocess.PIPE,
                          text=True, env=child_env()) as holder:
        try:
            assert holder.stdout.readline() == "held\n"
            note = (run_dir / "run.lock").read_bytes()
            shutil.copytree(run_dir, tmp_path / "copy")
            with pytest.raises(ArchiveBusy) as refused:
                DirLock(tmp_path / "copy").acquire()
            with pytest.raises(ArchiveBusy) as busy:
                DirLock(run_dir).acquire()
        finally:
            holder.kill()
    since = json.loads(note)["since"]
    assert (len(note) <= NOTE_MAX, json.loads(note)["command"][-6:]) == (True, "ééé...")
    assert str(refused.value) == (
        f"in {str(tmp_path / 'copy')!r}: its writer (pid {holder.pid} on host {json.loads(note)['host']} since "
        f"{since}) is still running but holds no lock here: this directory is a copy of its run, made while it wrote "
        "(cp, rsync, a backup, a move to another file system); finish the run where it is written, and this copy "
        "only if that one is lost")
    assert str(busy.value).startswith(f"in {str(run_dir)!r}: another process is writing this run (pid {holder.pid} "
                                      f"on host {json.loads(note)['host']} since {since}); ")


@pytest.mark.slow
def test_a_resume_whose_lock_note_was_emptied_by_hand_before_it_wrote_goes_on_and_ends_intact(tmp_path):
    with Lab(tmp_path, n=4) as lab:
        with lab.held_after(2, *lab.args()) as (proc, run_dir):
            proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
        asked, answer = threading.Event(), threading.Event()
        show = lab.server._routes["POST", "/api/show"]
        lab.server._routes["POST", "/api/show"] = lambda request: (asked.set(), answer.wait(60), show(request))[-1]
        resume = lab.start("resume", str(run_dir), module="benchrun.audit")
        assert asked.wait(60)  # the resume holds the lock and asks the model server, nothing written yet
        (run_dir / "run.lock").write_bytes(b"")
        answer.set()
        _, err = resume.communicate(timeout=60)
        verified = lab.call("verify", str(run_dir), module="benchrun.audit")
    assert (resume.returncode, verified.stdout.splitlines()[-1], lab.lines(run_dir)) == (0, "intact", 4), err
    assert (run_dir / "run.lock").read_bytes() == b""


@pytest.mark.slow
def test_a_live_runs_lock_saved_by_an_editor_as_a_new_file_is_locked_anew_and_emptied_at_the_end(tmp_path):
    with Lab(tmp_path, n=4) as lab:
        with lab.held_after(2, *lab.args()) as (proc, run_dir):
            note = json.loads((run_dir / "run.lock").read_bytes())
            saved = run_dir / "run.lock.swp"
            saved.write_bytes((run_dir / "run.lock").read_bytes() + b"\n")
            os.replace(saved, run_dir / "run.lock")  # vim's save (backupcopy=auto), `sed -i`: a new file in its place
            lab.wait_for(lambda: probe(run_dir / "run.lock").held)
            resumed = lab.call("resume", str(run_dir), module="benchrun.audit")
        _, err = proc.communicate(timeout=60)
    assert (resumed.returncode, resumed.stderr) == (EXIT["archive"], (
        f"benchrun: error: in {str(run_dir)!r}: another process is writing this run ({describe(note)}); wait for it "
        "to finish or stop it first\n"))
    assert (proc.returncode, err, (run_dir / "run.lock").read_bytes()) == (0, "", b"")
