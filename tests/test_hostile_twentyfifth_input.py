"""The twenty-fifth hostile pass of issue 19, the side of what goes in and runs as processes: a review of what the
twenty-fourth pass added (counts as whole numbers, credentials, strict CSV, taking back, load failures), then a fresh
pass. /work/notes/p25/result-input.md has the whole list, what held and what was left.

Fixed:
1. Text for a number (`repeats='2'`) and text or a number for true/false (`dry_run=no`) were taken by pydantic's lax
   reading; `dry_run=no` ran a real run in a dry run's scratch folder, removed as it ended (core.settingsbase).
2. A count of one said in the plural where the last pass's rule (core.text.counted) was not applied: verify's
   `1 files unchanged`, show's `speed (1 answers, ...)`, the report's `(1 samples)`, `from 1 answers`, a partial
   merge's `1 answers not asked`.
3. A reference no answer can match was refused for `answer: Literal[...]` or `int`, not for the same `Optional[...]`
   (JSON Schema's anyOf with null): every answer scored 0 (compiler.answerable.answer_schema).
4. `~` with HOME unset for a user id with no entry in the user database (a container's): a RuntimeError traceback
   from `outputs=~/x`, `task.path=~/b`, the default cache, `benchrun-audit cache` (core.home.home).
5. A file of the working directory hiding a library that raised an OSError as it loaded (a `rich.py` opening a file
   not there) was left to the system's refusal: a traceback (core.loading.load_failure).
6. A key pasted as a word of benchrun-audit's command line was printed by its error (`no run directory or run id
   'hf_...'`), as benchrun's was before the last pass (core.secrets.refuse_key_words, from benchrun.audit.__main__).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from benchrun.audit.merge import _status as merge_status
from benchrun.core.errors import EXIT
from benchrun.core.lineage import Merge, MergedShard
from benchrun.core.records import Counts
from benchrun.testing.inprocess import child_env
from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer
from tests.helpers.auditcli import audit
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import bench_run, call_benchrun, run_dir_of

HOST = "runner.host=http://127.0.0.1:9"


WRONG_KINDS = {"repeats='2.0'": "repeats: Input should be a valid integer, not \"2.0\"",
               "repeats=two": "repeats: Input should be a valid integer, not \"two\"",
               "runner.timeout_s='1e400'": "runner.timeout_s: inf is not a finite number, and JSON (config.yaml, "
                                           "run.json, the manifest) has none for it: give a number",
               "dry_run=1": "dry_run: Input should be a valid boolean, not 1"}


def test_text_that_writes_no_number_or_a_number_for_true_or_false_is_refused(tmp_path):
    """Before: `1` taken as true; text that writes no number was pydantic's to read (`'1e400'` as no time limit)."""
    said = [call_benchrun("task=listbench", HOST, "dry_run=true", given, cwd=tmp_path) for given in WRONG_KINDS]
    assert [(done.returncode, done.stdout, done.stderr) for done in said] == [
        (EXIT["usage"], "", f"benchrun: error: in 'config': {why}\n") for why in WRONG_KINDS.values()]


def test_dry_run_no_is_refused_before_a_model_is_asked(tmp_path):
    """Before: pydantic read 'no' as false and ran the benchmark, Hydra's reading ('no' is true) put the run in a dry
    run's scratch folder, which was removed as the process ended: the model asked, the run lost, exit 0."""
    with FakeOpenAI(models=["m"], responder=listbench_answer) as server:
        done = call_benchrun("task=listbench", "runner=openai", f"runner.base_url={server.url}", "runner.model=m",
                             "cache=false", "dry_run=no", f"outputs={tmp_path / 'out'}", cwd=tmp_path)
        asked = [r for r in server.requests if r["path"].endswith("/chat/completions")]
    assert (done.returncode, done.stdout, done.stderr, asked, (tmp_path / "out").exists()) == (
        EXIT["usage"], "", "benchrun: error: in 'config': dry_run: Input should be a valid boolean, not \"no\"\n", [],
        False)


def test_a_number_setting_still_takes_a_whole_number_and_text_where_text_is_one(tmp_path):
    done = call_benchrun("task=listbench", HOST, "dry_run=true", "runner.timeout_s=2", "runner.keep_alive='5m'",
                         cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")


def test_a_run_of_one_sample_from_one_file_is_said_in_the_singular(tmp_path):
    """Before: verify said `sources: 1 files unchanged`, show `speed (1 answers, 0 failed)`, the report `t (1 samples)`
    and `from 1 answers, 0 failed requests`."""
    write_bench(tmp_path, {"tasks.yml": '- name: t\n  template: "say {a}"\n  values: {a: [x]}\n  reference: [x]\n'
                                        "  scorer: contains\n"})
    with FakeOllama(responder=lambda req: "x") as server:
        done = bench_run(tmp_path, server.url, "task.path=bench", "cache=false")
    run_dir = run_dir_of(done.stdout)
    verified, shown = audit(tmp_path, "verify", str(run_dir)), audit(tmp_path, "show", str(run_dir))
    html = tmp_path / "r.html"
    assert audit(tmp_path, "report", str(run_dir), "--output", str(html)).returncode == EXIT["ok"]
    assert (done.returncode, verified.stdout.splitlines()[-2].split(), "speed (1 answer, 0 failed)" in shown.stdout,
            "<summary>t (1 sample)</summary>" in html.read_text(), "from 1 answer, 0 failed requests" in
            html.read_text()) == (EXIT["ok"], ["ok", "sources:", "1", "file", "unchanged", "in",
                                               str(tmp_path / "bench")], True, True, True)


OPTIONAL = ("from typing import Literal, Optional\nfrom pydantic import BaseModel\n\n\nclass F(BaseModel):\n"
            "    answer: {}\n")


@pytest.mark.parametrize(("answer", "ref", "shown"), [
    ('Optional[Literal["yes", "no"]] = None', "Yes", '("yes", "no")'),
    ("Optional[int] = None", "1,000", "(an integer)")])
def test_a_reference_no_optional_answer_can_match_is_refused(tmp_path, answer, ref, shown):
    """Before: compiled, and exact_match scored every answer to `Yes` (or `1,000`) 0, as it refuses for the answer
    without Optional."""
    write_bench(tmp_path, {"custom_response.py": OPTIONAL.format(answer), "tasks.yml": (
        f'- name: t\n  template: "say {{a}}"\n  values: {{a: [1, 2]}}\n  reference: ["{ref}", "no"]\n  format: F\n')})
    done = call_benchrun("task.path=bench", HOST, "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'tasks.yml': task 't': tasks[0].reference: the reference of sample 't:a=1' is \"{ref}\", "
        f"which no answer of format 'F' {shown} matches: exact_match would score every answer to it 0; write it as "
        "the format answers it\n"))


NO_ENTRY = ["setpriv", "--reuid", "54321", "--regid", "54321", "--clear-groups"]
"""Run as a user id the user database has no entry for, as a container's arbitrary user is."""
UNHOMED = ("~ is the home directory, and HOME is unset and this user (id 54321) has no entry in the user database to "
           "give one; set HOME, or ")


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="runs as another user id (root only)")
@pytest.mark.parametrize(("module", "args", "said"), [
    ("benchrun", ["task.path=~/b", HOST, "dry_run=true"],
     f"the override 'task.path=~/b': {UNHOMED}give the path itself"),
    ("benchrun.audit", ["cache"], f"--cache-dir: the response cache's place, ~/.cache/benchrun: {UNHOMED}"
                                  "XDG_CACHE_HOME or --cache-dir")])
def test_a_home_no_user_entry_gives_is_one_line(module, args, said):
    """Before: a RuntimeError traceback ('Could not determine home directory'), exit 1."""
    env = {name: value for name, value in child_env().items() if name not in ("HOME", "XDG_CACHE_HOME")}
    done = subprocess.run([*NO_ENTRY, sys.executable, "-m", module, *args], cwd="/", env=env, capture_output=True,
                          text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: {said}\n")


@pytest.mark.parametrize("module", ["benchrun", "benchrun.audit"])
def test_a_file_hiding_a_library_that_fails_to_open_a_file_is_one_line(tmp_path, module):
    """Before: a FileNotFoundError traceback ending in ./rich.py, exit 1 (an OSError taken for the system's refusal)."""
    (tmp_path / "rich.py").write_text('open("settings.cfg")\n')
    done = subprocess.run([sys.executable, "-m", module, "list" if module.endswith("audit") else "dry_run=true"],
                          cwd=tmp_path, env=child_env(), capture_output=True, text=True, timeout=120)
    hiding = tmp_path / "rich.py"
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: Python could not load {hiding}, which benchrun needs: FileNotFoundError: [Errno 2] No such "
        f"file or directory: 'settings.cfg'; {hiding} (as 'rich'), of the working directory or $PYTHONPATH, hides the "
        "library of that name that benchrun imports: rename it, or run benchrun from another directory\n"))


KEY = "hf_AbCdEfGhIjKlMnOpQrStUv12345"


@pytest.mark.parametrize("words", [["show", KEY], ["verify", KEY], ["cache", "--cache-dir", KEY],
                                   ["list", f"--x={KEY}"]])
def test_a_key_pasted_as_a_word_of_benchrun_audit_is_refused_without_it(tmp_path, words):
    """Before: `no run directory or run id 'hf_...'`, the key printed whole (or the cache's path holding it)."""
    done = audit(tmp_path, *words)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        "benchrun: error: the command line: secrets are never taken from the command line, where an error naming the "
        "word would print it (a key by its prefix, hf_..., as a word of its own, an override's key or a flag's value); "
        "put an API key in an environment variable\n"))


def test_a_partial_merge_short_of_one_answer_says_it_in_the_singular(tmp_path):
    """Before: `merged with --partial: 1 answers not asked`."""
    shard = MergedShard(run_id="a" * 12, path=str(tmp_path / "s"), shard="1/2", status="interrupted", responses=1)
    merge = Merge(shards=(shard,), partial=True, merged_at="2026-12-05T20:00:00+00:00")
    assert merge_status(Counts(samples=2, responses=1), merge, 1, tmp_path) == (
        "interrupted", f"merged with --partial: 1 answer not asked; finish it with: benchrun-audit resume {tmp_path}")
