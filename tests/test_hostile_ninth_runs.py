"""Hostile input, ninth pass, the process side (issue 19's fresh pass of the same kinds): real `python -m benchrun`
processes under abuse, the cases it found bad, each with the rule it now obeys.

- a custom_*.py that writes the API key to file descriptor 1 or 2 at import (`os.write(1, key)`, `sys.__stdout__`,
  as a C library's printf would), imported in the run's own process: Python's redirection of sys.stdout did not
  reach it, so the key went to the console unmasked (and to whatever the console was piped into); now the
  descriptors themselves point at a file while the file is imported, and what was written there goes to the run's log
  through the masking every handler has
- a benchmark's file or folder that is a symbolic link leading nowhere (a loop, `tasks.yml -> tasks.yml`, or a link
  to a file not there, as a copy that left the target behind makes): taken as absent, so a tasks.yml beside task
  folders was skipped and its tasks silently not run (exit 0), a custom_scorer.py's scorers were unknown, a task
  folder left out; a values file's was `missing`. Now refused in one line naming the link and where it leads
  (`compiler.files.present`), before anything is compiled
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.lab import SCORER, Lab
from tests.helpers.benchfiles import folder_task, task, tasks_yml, write_bench
from tests.helpers.commands import call_benchrun, run_benchrun

pytestmark = pytest.mark.slow

KEY = "ol-0123456789abcdefghijKLMN"


@pytest.mark.parametrize("write", [
    "os.write(1, ('the key: ' + os.environ['OLLAMA_API_KEY'] + '\\n').encode())",
    "os.write(2, ('the key: ' + os.environ['OLLAMA_API_KEY'] + '\\n').encode())",
    "sys.__stdout__.write('the key: ' + os.environ['OLLAMA_API_KEY'] + '\\n')",
])
def test_a_key_written_to_the_descriptors_at_import_goes_masked_to_the_log(tmp_path, write):
    source = f"import os\nimport sys\n\n{write}\n\n\n{SCORER}"
    with Lab(tmp_path, n=2, latency_s=0, scorer=source) as lab:
        done = run_benchrun(*lab.args(), cwd=tmp_path, env={"OLLAMA_API_KEY": KEY})
        [run_dir] = lab.run_dirs()
    assert (done.returncode, done.stderr, KEY in done.stdout) == (EXIT["ok"], "", False)
    assert "custom_scorer.py printed while it was imported:\nthe key: ***\n" in (run_dir / "benchrun.log").read_text()
    assert [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()] == []


@pytest.mark.parametrize("link, to, why", [
    ("tasks.yml", "tasks.yml", "a loop of symbolic links"),
    ("custom_scorer.py", "gone.py", "to 'gone.py', which is not there"),
    ("tasks/lost", "../elsewhere", "to '../elsewhere', which is not there"),
    ("data/v.jsonl", "v2.jsonl", "to 'v2.jsonl', which is not there"),
])
def test_a_link_that_leads_nowhere_is_refused_not_taken_as_absent(tmp_path, link, to, why):
    listed = task(values_file="data/v.jsonl", values=None, reference=None) if link == "data/v.jsonl" else task()
    listed = {key: value for key, value in listed.items() if value is not None}
    files = {**folder_task("add", "what is {a}?", "a,reference\n2,2\n")}
    if link != "tasks.yml":
        files["tasks.yml"] = tasks_yml(listed)
    bench = write_bench(tmp_path, files)
    (bench / link).parent.mkdir(exist_ok=True)
    (bench / link).symlink_to(to)
    done = call_benchrun("task.path=bench", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in '{link}': a symbolic link that leads nowhere ({why}); mend the link, or remove it\n"))
