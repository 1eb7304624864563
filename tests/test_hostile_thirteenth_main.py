"""Hostile input, thirteenth pass, what the lead session tried beside the three sides' passes: the cases it found
bad, each with the rule it now obeys.

- a file system that gives no locks (Lustre mounted without `-o flock`, NFS without its lock service, as many Slurm
  clusters' scratch space is): `flock` failing with ENOSYS/ENOLCK escaped the run, so Hydra printed `Error executing
  job with overrides: [...]` and the last resort blamed `function not implemented writing Hydra's files`; now the
  lock says what is wrong and where outputs can go, in one line (`archive.dirlock.NoLocks`), and `verify` of a
  killed run on such a file system reads its lock as held by no one (no writer can hold one there)
- a CPU without AVX (a Westmere, an Atom, a virtual machine's generic CPU): the README's install built llama.cpp for
  AVX2 and the first command died of SIGILL, reported as a model file to change; now the build takes the instruction
  sets up to AVX2 the building CPU has, and SIGILL as the engine loads is one line with the rebuild command
  (tests/test_llama_build.py, on a Westmere emulated by qemu-user)
- a run held to one core (`taskset`, a Slurm job of one CPU on a larger node): llama.cpp got a thread per core of the
  machine, spinning on the one core (60 s for the listbench against 32 s); now it gets the run's CPU affinity
  (tests/test_local_runner.py)

- a response cache refused as it opens (another program's database, another schema version, locked): its SQLite
  connection was left to the collector, which Python 3.13 reports as `ResourceWarning: unclosed database` (twelve
  tests of the suite failed there); now `Store` closes it before it refuses (`execute.cache.Store`)
- a scorer made by exec in custom_scorer.py, in a process started with `python -c` (a pytest-xdist worker, a
  launcher's): Python 3.13 files the `-c` text under `<string>`, so inspect gave that text as the scorer's source and
  the run went on, recording its sha256 as the scorer's; now code compiled from a string is refused before its
  source is sought (`compiler.scoring.source_sha256`)

What held: the read-only audit commands (`list`, `show`, `export`, `verify` of a sealed run) on a file system that
gives no locks.
"""

from __future__ import annotations

import json
import linecache
import re
import shutil
import sqlite3
import subprocess

import pytest

from benchrun.core.errors import EXIT, ConfigError
from benchrun.execute import cache
from benchrun.execute.cache import Store
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.commands import call_benchrun, run_benchrun
from tests.helpers.killed import killed_run, write_bench
from tests.helpers.sqlitefile import sqlite_db

COMPILER = shutil.which("cc") or shutil.which("gcc")
NO_FLOCK = "#include <errno.h>\nint flock(int fd, int op) { errno = ENOSYS; return -1; }\n"
"""A C library whose flock fails as on a file system that gives no locks (Lustre without -o flock)."""


@pytest.fixture
def no_locks(tmp_path) -> dict[str, str]:
    """The environment of a process on a file system that gives no locks (flock preloaded to fail with ENOSYS)."""
    if COMPILER is None:
        pytest.skip("a C compiler makes the preloaded flock")
    (tmp_path / "noflock.c").write_text(NO_FLOCK)
    subprocess.run([COMPILER, "-shared", "-fPIC", "-o", str(tmp_path / "noflock.so"), str(tmp_path / "noflock.c")],
                   check=True)
    return {"LD_PRELOAD": str(tmp_path / "noflock.so")}


def test_a_run_on_a_file_system_without_locks_is_refused_in_one_line(tmp_path, no_locks):
    with FakeOllama(models=["llama3.2"]) as server:
        result = run_benchrun(f"runner.host={server.url}", f"outputs={tmp_path / 'out'}", cwd=tmp_path, env=no_locks)
    [run_dir] = (tmp_path / "out").glob("*/*")
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        f"benchrun: error: function not implemented locking {run_dir / 'run.lock'}: its file system gives no locks, "
        "and a run directory is locked so that no two processes write one; put outputs on a file system that does "
        "(a local disk, NFS with its lock service, Lustre mounted with -o flock)\n"))
    assert not (run_dir / "run.json").exists()


def test_verify_reads_a_killed_run_on_a_file_system_without_locks(tmp_path, no_locks):
    write_bench(tmp_path / "bench")
    with FakeOllama(models=["llama3.2"]) as server:
        run_dir = killed_run(tmp_path, server)
    result = run_benchrun("verify", str(run_dir), cwd=tmp_path, env=no_locks, module="benchrun.audit")
    assert result.returncode == EXIT["not_intact"], result.stderr
    assert result.stderr == ""
    [finding] = re.findall(r"^FAIL  run\.json: (.*)$", result.stdout, re.M)
    assert re.fullmatch(r"says 'running', but no live process holds run\.lock: its writer \(pid \d+ on host \S+ since "
                        r"\S+\) stopped before the run ended \(killed, or its disk failed\); finish it with: "
                        rf"benchrun-audit resume {re.escape(str(run_dir))} \(record lines checked against "
                        r"records\.sha256 only\)", finding)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "running"


def test_a_cache_refused_as_it_opens_closes_its_database(tmp_path, monkeypatch):
    opened: list[sqlite3.Connection] = []
    connect = sqlite3.connect
    monkeypatch.setattr(cache.sqlite3, "connect", lambda *args, **kw: opened.append(connect(*args, **kw)) or opened[-1])
    (tmp_path / "c").mkdir()
    with sqlite_db(tmp_path / "c" / cache.DB_FILE) as db:
        db.execute("CREATE TABLE users (name TEXT)")
    with pytest.raises(ConfigError, match="holds another program's tables, 'users'"):
        Store(tmp_path / "c")
    with pytest.raises(sqlite3.ProgrammingError, match="closed database"):
        opened[0].execute("SELECT 1")


def test_a_scorer_made_by_exec_is_refused_where_a_string_has_source_filed(tmp_path, monkeypatch):
    """As Python 3.13 files a `python -c` command's text under `<string>` (linecache), and inspect reads it there."""
    monkeypatch.setitem(linecache.cache, "<string>", (29, None, ["def s(response, reference):\n", "    return 1\n"],
                                                      "<string>"))
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "tasks.yml").write_text("- name: t\n  template: 'say {a}'\n  values:\n    a: [1, 2]\n"
                                                  "  reference: ['1', '2']\n  scorer: s\n")
    (tmp_path / "bench" / "custom_scorer.py").write_text("exec('def s(response, reference):\\n    return 1')\n")
    result = call_benchrun("dry_run=true", "task.path=bench", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        "benchrun: error: in 'custom_scorer.py': scorer 's': its source code cannot be read (it was compiled from a "
        "string, <string>, not read from a file), and the manifest records its sha256; define it with def in the "
        "file\n"))
