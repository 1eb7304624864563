"""Hostile input, twelfth pass, what the lead session tried beside the three sides' passes: the cases it found bad,
each with the rule it now obeys.

- `resume --host ''` / `retry --host ''` (an unset shell variable, `--host "$GPU"`): taken as no --host, so the run
  was asked of its own servers without a word, and the history noted `"host": ""`; now an empty or blank --host is
  refused in one line (`audit.resume.servers_given`)
- an empty path argument of an audit command (`export --output ''`, `report --output ''`, `merge --into ''`,
  `list ''`, `--root ''`): `Path('')` is the working directory, so an export failed as `is a directory writing .`
  and `list ''` listed the runs under `.`; now argparse refuses it in one line (`audit.arguments.path`, which every
  path argument of the audit commands takes, `--root` given by one owner)
- a cache place chosen by $XDG_CACHE_HOME or $HOME (no `cache_dir` given) under a file: the one-line error blamed
  `cache_dir:`, a setting the user never gave, and `benchrun-audit cache` blamed `--cache-dir:`; now each error names
  what chose the place (`cache_dir` or `--cache-dir` when given, else `$XDG_CACHE_HOME`, else `$HOME`:
  `execute.cacheplace.chosen_by`, carried by the cache's `Store`)
- a merge stopped part-way (SIGKILL, the OOM killer, Ctrl-C while it writes): `--into` held a `running` run whose
  summary was missing; merging again was refused (`already holds run ... (running)`), and the advice given, `resume`,
  needed the shards' model servers, gone with their Slurm jobs. Now the merged run is written in a hidden folder
  beside `--into` and renamed to it once it has ended, so `--into` holds the whole merged run or nothing; `--into`
  must be new or empty (`audit.merge._write`); a `--into` that is a symbolic link is followed to its folder (the
  rename would replace no link), and one to nothing is refused in one line. (Thirteenth pass: the hidden folder a
  SIGKILL left stayed for ever, beside every later merge; now the next merge into the same place removes each one
  whose lock no live merge holds, `audit.merge._clear_killed`.)

What held: a server listed twice in `runner.host` (also as `localhost` beside `127.0.0.1`, or with a trailing `/`),
an empty list, a server at another loopback address; `resume --host` given twice the same, a URL with `?` or `#`,
an unclosed IPv6 bracket, another scheme, a trailing `/`, an API path (`/api/chat`, refused by the preflight).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.archive.dirlock import DirLock
from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.commands import audit, bench_run, run_in_process


@pytest.mark.parametrize("command", ["resume", "retry"])
@pytest.mark.parametrize("given", ["", " "])
def test_resume_and_retry_refuse_an_empty_host(tmp_path, command, given):
    with Lab(tmp_path, n=4, latency_s=0) as lab:
        assert lab.call(*lab.args()).returncode == EXIT["ok"]
        [run_dir] = lab.run_dirs()
        before = {path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()}
        result = lab.call(command, str(run_dir), "--host", given, module="benchrun.audit")
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: --host {given!r}: not a server's URL; give http://host:port, or leave --host out to ask "
        "the run's own servers\n"))
    assert ({path.name: path.read_bytes() for path in run_dir.iterdir() if path.is_file()}, lab.run_dirs()) == (
        before, [run_dir])


@pytest.mark.parametrize(("command", "args", "name"), [
    ("export", ["RUN", "--output", ""], "--output"), ("report", ["RUN", "--output", " "], "--output"),
    ("merge", ["RUN", "--into", ""], "--into"), ("retry", ["RUN", "--into", ""], "--into"), ("list", [""], "ROOT"),
    ("show", ["RUN", "--root", ""], "--root"), ("rescore", ["RUN", "--scorers", ""], "--scorers")])
def test_an_empty_path_argument_is_refused_not_read_as_the_working_directory(tmp_path, command, args, name):
    with Lab(tmp_path, n=4, latency_s=0) as lab:
        assert lab.call(*lab.args()).returncode == EXIT["ok"]
        [run_dir] = lab.run_dirs()
        before = sorted(path for path in tmp_path.rglob("*"))
        result = audit(tmp_path, command, *(str(run_dir) if arg == "RUN" else arg for arg in args))
    assert (result.returncode, result.stdout, result.stderr.splitlines()[-1]) == (
        EXIT["usage"], "", f"benchrun-audit {command}: error: argument {name}: an empty path names no file or directory")
    assert sorted(path for path in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("chooser", ["XDG_CACHE_HOME", "HOME"])
def test_a_cache_place_no_option_chose_names_the_variable_that_did(tmp_path, monkeypatch, chooser):
    (tmp_path / "afile").write_text("x")
    place = tmp_path / "afile" / "sub"
    monkeypatch.setenv(chooser, str(place))
    if chooser == "HOME":
        monkeypatch.delenv("XDG_CACHE_HOME")
    made = place / ("benchrun" if chooser == "XDG_CACHE_HOME" else ".cache/benchrun")
    with FakeOllama() as server:
        ran = bench_run(tmp_path, server.url, "cache=true")
    listed = audit(tmp_path, "cache")
    assert (ran.returncode, ran.stdout, ran.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: ${chooser}: {tmp_path / 'afile'} is a file, so {made} cannot be made; set cache_dir= to a "
        "directory on local disk, or cache=false\n"))
    assert (listed.returncode, listed.stdout, listed.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: ${chooser}: {tmp_path / 'afile'} is a file, so {made} cannot be made\n"))


STOPPED = {
    "SIGKILL before the rename": "merge._into_place = lambda staging, into: os.kill(os.getpid(), signal.SIGKILL)",
    "Ctrl-C after two answers": "RunWriter.record = stopping(RunWriter.record)",
}
PATCHES = """
import os, signal, sys
from benchrun.archive.writer import RunWriter
from benchrun.audit import merge
from benchrun.audit.__main__ import main
def stopping(record, calls=[]):
    def stopped(*args):
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGINT)
        return record(*args)
    return stopped
{patch}
sys.exit(main(sys.argv[1:]))
"""


def _merge_stopped(root: Path, parts: list[Path], into: Path, stop: str) -> subprocess.CompletedProcess:
    """`benchrun-audit merge PARTS --into INTO` in a process stopped as `stop` says."""
    return subprocess.run([sys.executable, "-c", PATCHES.format(patch=STOPPED[stop]), "merge", *map(str, parts),
                           "--into", str(into)], cwd=root, env=child_env(), capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("stop", sorted(STOPPED))
def test_a_merge_stopped_part_way_leaves_no_merged_run_and_merging_again_works(tmp_path, stop):
    parts = [run_in_process(tmp_path, f"part{i}", f"shard={i}/3") for i in (1, 2, 3)]
    into = tmp_path / "merged"
    stopped = _merge_stopped(tmp_path, parts, into, stop)
    assert stopped.returncode == (-9 if stop.startswith("SIGKILL") else EXIT["interrupted"]), stopped.stderr
    assert not into.exists()
    listed = json.loads(audit(tmp_path, "list", str(tmp_path), "--json").stdout)
    assert sorted(run["path"] for run in listed) == sorted(map(str, parts))
    assert len(_staged(tmp_path)) == (1 if stop.startswith("SIGKILL") else 0)
    again = audit(tmp_path, "merge", *map(str, parts), "--into", str(into))
    assert again.returncode == EXIT["ok"], again.stderr
    assert _staged(tmp_path) == []
    assert json.loads((into / "run.json").read_text())["status"] == "completed"
    assert audit(tmp_path, "verify", str(into)).returncode == EXIT["ok"]


def _staged(root: Path) -> list[str]:
    """The hidden folders of merges into `root/merged` that are still there."""
    return sorted(path.name for path in root.iterdir() if path.name.startswith(".merged.merging-"))


def test_a_merge_leaves_the_hidden_folder_of_a_merge_still_running(tmp_path):
    parts = [run_in_process(tmp_path, f"part{i}", f"shard={i}/2") for i in (1, 2)]
    live = tmp_path / ".merged.merging-0123456789ab"
    live.mkdir()
    with DirLock(live):
        merged = audit(tmp_path, "merge", *map(str, parts), "--into", str(tmp_path / "merged"))
    assert merged.returncode == EXIT["ok"], merged.stderr
    assert _staged(tmp_path) == [live.name]


def test_a_merge_into_a_folder_that_holds_files_is_refused_with_nothing_written(tmp_path):
    parts = [run_in_process(tmp_path, f"part{i}", f"shard={i}/2") for i in (1, 2)]
    into = tmp_path / "merged"
    into.mkdir()
    (into / "notes.txt").write_text("mine\n")
    refused = audit(tmp_path, "merge", *map(str, parts), "--into", str(into))
    assert (refused.returncode, refused.stderr) == (EXIT["usage"], (
        f"benchrun: error: {into} holds files (notes.txt): a merged run goes into a new or empty directory; nothing "
        "was changed; pick a new directory (--into DIR)\n"))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["merged", "outputs"]
    assert [path.name for path in into.iterdir()] == ["notes.txt"]
    into.joinpath("notes.txt").unlink()
    assert audit(tmp_path, "merge", *map(str, parts), "--into", str(into)).returncode == EXIT["ok"]


def test_a_merge_into_a_link_lands_in_its_folder_and_a_link_to_nothing_is_refused(tmp_path):
    parts = [run_in_process(tmp_path, f"part{i}", f"shard={i}/2") for i in (1, 2)]
    (tmp_path / "folder").mkdir()
    (tmp_path / "link").symlink_to("folder")
    (tmp_path / "nowhere").symlink_to(tmp_path / "gone")
    merged = audit(tmp_path, "merge", *map(str, parts), "--into", str(tmp_path / "link"))
    refused = audit(tmp_path, "merge", *map(str, parts), "--into", str(tmp_path / "nowhere"))
    assert merged.returncode == EXIT["ok"], merged.stderr
    assert (tmp_path / "link").is_symlink() and json.loads((tmp_path / "folder" / "run.json").read_text())["merged"]
    assert (refused.returncode, refused.stderr) == (EXIT["usage"], (
        f"benchrun: error: {tmp_path / 'nowhere'} is a symbolic link to nothing (to {tmp_path / 'gone'}); nothing was "
        "changed; pick a new directory (--into DIR)\n"))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["folder", "link", "nowhere", "outputs"]
