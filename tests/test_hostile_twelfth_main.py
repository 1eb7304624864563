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

What held: a server listed twice in `runner.host` (also as `localhost` beside `127.0.0.1`, or with a trailing `/`),
an empty list, a server at another loopback address; `resume --host` given twice the same, a URL with `?` or `#`,
an unclosed IPv6 bracket, another scheme, a trailing `/`, an API path (`/api/chat`, refused by the preflight).
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.lab import Lab
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.commands import audit, bench_run


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
