"""The thirty-third hostile pass, the command line beside the sides. Fixed:
1. A umask that takes the owner's own permissions away (`umask 0177`: folders made 0600): a run's directory Hydra
   made could not be entered, a traceback (as a user; as root the run went on, its folders left for no one else to
   enter), and `benchrun-audit rescore` left a `rescores/` folder no later rescore of the run could enter, under any
   umask. Refused before anything is made, by `benchrun` and each command of benchrun-audit that writes
   (`core.filemode`); the reading ones (verify) are left to read.
2. `hydra.verbose=5` (or `null`, `{a:1}`, `[true]`, `[a,5]`) was `Hydra could not go on: AssertionError: assert
   isinstance(verbose_config, (bool, str)) ...` or logging's `TypeError: A logger name must be a string`: refused
   before Hydra, naming what it takes (`compose.commandline._refuse_unread_verbose`).
3. A joblib sweep of `hydra.launcher.backend=threading` (or `multiprocessing`, or `prefer=threads`) ran each job in
   a process of its own, as Hydra's joblib launcher always does (loky), with nothing said: refused
   (`compose.lokykeys.overridden_refusal`), a dry run's too.
4. `+shards=2` (or `++shards=2`, `~shards`) was said `unknown key 'shards' (did you mean 'shard'?)`, where `shards=n`
   is a word of benchrun's own command line: said so, and how to write it (`core.shards.expand_shards`).
5. Review: 1.'s umask was read by setting one and putting it back, so a file another thread of the process made in
   between (a scorer's, the in-process fake server's) was made under umask 077: read from /proc
   (`core.procfs.status_field`), never set where /proc says it.
"""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from benchrun.core.errors import EXIT, ArchiveError
from benchrun.core.filemode import refuse_owner_masked
from tests.helpers.archives import synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.commands import call_benchrun


@pytest.fixture
def owner_masked() -> Iterator[None]:
    """This process's umask 0177 (its folders made 0600), put back after."""
    before = os.umask(0o177)
    try:
        yield
    finally:
        os.umask(before)


def masked_line(command: str) -> str:
    return (f"benchrun: error: umask 0177 takes your own permissions away from the folders and files {command} makes "
            "(a folder it could not enter, a file it could not read back, left in the archive for every later "
            "command); set a umask that leaves them: umask 022 (or 077, yours alone)\n")


def test_a_run_under_a_umask_taking_the_owners_permissions_is_refused_before_anything_is_made(tmp_path, owner_masked):
    done = call_benchrun("runner.host=http://127.0.0.1:9", "outputs=out", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["archive"], "", masked_line("benchrun"))
    assert list(tmp_path.iterdir()) == []


def test_a_rescore_under_such_a_umask_is_refused_and_a_verify_reads_on(tmp_path):
    run_dir = synthetic_run(tmp_path / "r", [1, 0])
    before = os.umask(0o177)
    try:
        rescored, verified = audit(tmp_path, "rescore", str(run_dir)), audit(tmp_path, "verify", str(run_dir))
    finally:
        os.umask(before)
    assert (rescored.returncode, rescored.stderr) == (EXIT["archive"], masked_line("benchrun-audit rescore"))
    assert not (run_dir / "rescores").exists()
    assert (verified.returncode, verified.stdout.splitlines()[-1]) == (EXIT["ok"], "intact")


def test_the_umask_is_read_without_being_set():
    set_to: list[int] = []
    before = os.umask(0o177)
    try:
        with pytest.MonkeyPatch.context() as patched, pytest.raises(ArchiveError) as refused:
            patched.setattr(os, "umask", lambda mask: set_to.append(mask) or 0o022)
            refuse_owner_masked("benchrun")
    finally:
        os.umask(before)
    assert (str(refused.value).split(" takes")[0], set_to) == ("umask 0177", [])


def test_a_umask_keeping_the_owners_permissions_is_taken(tmp_path):
    before = os.umask(0o077)
    try:
        done = call_benchrun("runner.host=http://127.0.0.1:9", "dry_run=true", cwd=tmp_path)
    finally:
        os.umask(before)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")


@pytest.mark.parametrize("value", ["5", "null", "{a:1}", "[true]", "[a,5]", "1.5"])
def test_a_hydra_verbose_its_logging_cannot_read_is_refused_before_hydra(tmp_path, value):
    done = call_benchrun(f"hydra.verbose={value}", "runner.host=http://127.0.0.1:9", "outputs=out", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: in 'config': hydra.verbose: takes true (every logger at DEBUG), a logger's name or a list "
        f"of names ([benchrun,httpx]), not {value}\n"))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["true", "benchrun", "[benchrun,httpx]", "false"])
def test_a_hydra_verbose_its_logging_reads_is_taken(tmp_path, value):
    done = call_benchrun(f"hydra.verbose={value}", "runner.host=http://127.0.0.1:9", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")


@pytest.mark.parametrize("given", ["backend=threading", "backend=multiprocessing", "prefer=threads"])
def test_a_joblib_setting_its_launcher_overrides_is_refused(tmp_path, given):
    done = call_benchrun("-m", "runner.model=a,b", "hydra/launcher=joblib", f"hydra.launcher.{given}",
                         "runner.host=http://127.0.0.1:9", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: hydra.launcher.{given}: Hydra's joblib launcher runs each job in a process of its own "
        "(joblib's loky backend) whatever it is given; leave it out\n"))


@pytest.mark.parametrize("given", ["+shards=2", "++shards=2", "~shards"])
def test_shards_given_as_a_key_is_said_as_the_command_lines_word_it_is(tmp_path, given):
    done = call_benchrun(given, "runner.host=http://127.0.0.1:9", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["usage"], (
        f"benchrun: error: {given}: shards=n is a word of benchrun's command line (the sweep shard=1/n,...,n/n), not "
        "a key of the config: write it as shards=8, without '+' or '~'\n"))
