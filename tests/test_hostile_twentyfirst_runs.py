"""Hostile input, twenty-first pass, the files-and-processes side (issue 19's fresh pass of the same kinds): hostile
command lines, sweeps and process surroundings, the cases it found bad, each with the rule it now obeys.

- a key a sweep's command line both sweeps and gives again (`-m runner.model=llama3.2,gemma3 runner.model=mistral`):
  Hydra's sweeper kept the last alone, so the sweep of two models was one job asking mistral, exit 0, the list said
  nowhere (alike `runner.model=mistral runner.model=llama3.2,gemma3`: mistral's run never made; and with
  `++runner.model=mistral`, a key of its own to Hydra's sweeper, two jobs both asking mistral). Now refused in one
  line before anything is made (`compose.sweepsize.swept`)
- a run started into a directory holding a `rescores/` folder (another run's, copied with its files, or a run's
  directory emptied of all else): the run completed (exit 0), took that folder for its own rescorings, and `verify`
  of the fresh run failed (`FAIL rescores/001/rescore.json: is rescore 001 of run 5afe8f04f444 ..., not of this run`,
  `NOT intact`). Now the directory is refused in one line before anything is written (`archive.claims.refusal`, which
  every run's claim asks: a run's, a sweep job's, a retry's or a merge's `--into`)
- `hydra.output_subdir=` a name of the run's own (`run.json`, `rescores`, `run.lock`, `benchrun.log`): Hydra put its
  copies of the config in a folder of that name, then the run was refused in the directory just made for it, with
  words that blamed the directory (`... holds a sweep (its jobs' runs), which a run made there would hide`, `already
  holds a run's files (run.json)`, `file exists: .../benchrun.log`), which was left there holding Hydra's files. Now
  refused before Hydra writes anything (`compose.hydranames.inside_refusal`)
- `hydra.sweep.subdir=` a hidden name (`.x`, `.${hydra.job.num}`): the job's run completed, and the sweep's
  sweep.json listed no job (`"jobs": []`), its table was empty and `list` showed nothing (every reader of a sweep
  passes over dot folders), exit 0; or a name of the sweep's own files: `sweep.json` (the run completed, then
  `is a directory writing .../sweep.json`, exit 4, the sweep summed up nowhere), `multirun.yaml` (`file exists`,
  exit 4). Now refused before anything is made (`compose.hydranames.subdir_refusal`)
- a runner file (the seed's runner.yml) whose key is wrong (`model: [llama3.2, llama3.2]`, `runner_type: OLLAMA`,
  `options: {temperature: hot}`, `hots: 1`): said to be `in 'config': runner.model: ...`, naming neither the file
  nor the key the user wrote (`runner.type` for `runner_type`). Now said of the file and its key (`in 'runner.yml':
  runner_type: unknown runner type 'OLLAMA' ...`; `compose.runneryml.said_of_runner_file`)
- a run (or a dry run) into a directory that held another Hydra application's `.hydra/` folder and the user's own
  `benchrun.log`, refused by its config (`runner.options.temperature=hot`): taking back what Hydra had made for it
  removed that `.hydra/` whole (files Hydra never wrote among them) and the user's log, which Hydra had only appended
  to. Now only what Hydra wrote is taken back: its three copies, and a log or a folder that was not there
  (`compose.takeback.note_found`)
- a preset of the user's own (`--config-dir my model=bad`) that is not YAML (`a: [`), gives a key twice, or is not
  UTF-8: a traceback of 60 lines (`yaml.parser.ParserError`, `UnicodeDecodeError`), exit 1. Now one line naming the
  file, the line and the column (`cli.hydra_error`, with core.yamlfile's words for a YAML syntax error)
- a config printed resolved with an interpolation that cannot be had (`--cfg job --resolve runner.model=${nope}`):
  `in 'config': cannot resolve: None`. Now what OmegaConf said and the override that holds it
  (`compose.config.unresolvable`)
- a sweep one of whose job directories is removed as the job runs (a cleanup, `rm -rf` of the wrong folder): the job
  failed (`no such file or directory writing .../0_llama3.2/summary.json`), sweep.json listed the other job alone,
  and the sweep exited 0. Now the sweep says it launched more jobs than its directory holds, and exits 1
  (`callbacks.SweepSummaryCallback`)
- a flag Hydra's parser refuses (`benchrun --dry-run`, `--cfg=foo`, `--config-dir` without its directory): Hydra's
  usage, seven lines, then `__main__.py: error: unrecognized arguments: --dry-run` (the program named `__main__.py`).
  Now one line, with where the flags are listed and how a setting is given (`benchrun.__main__`)
- a sweep whose benchmark changed while it ran (a reference mended in tasks.yml as the first job was asked): each job
  compiles the benchmark as it starts, so the jobs asked two benchmarks under one name, and the sweep's table compared
  them side by side, exit 0. Now the sweep names the file the jobs read otherwise and exits 1
  (`archive.sweepsources.changed_source`, from `callbacks.SweepSummaryCallback`)
- a run a script starts in the background (`benchrun ... &`, which a shell starts ignoring SIGINT and SIGQUIT so that
  the Ctrl-C meant for the script's foreground leaves it be): SIGINT stopped it all the same (`interrupted by SIGINT:
  run ... is recorded as 'interrupted' with 1 of 18 samples`, exit 130), SIGQUIT alone being kept ignored. Now a run
  started ignoring SIGINT goes on ignoring it, as with SIGQUIT and nohup's SIGHUP (`core.interrupts.KEPT_IGNORED`)
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import pytest

from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import wait_for
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_benchrun

TWICE = ("benchrun: error: in 'config': runner.model is given more than once on the command line ({said}), and a sweep "
         "keeps only the last, so the values of the others would never run; give it once, listing every value the "
         "sweep is to run\n")


@pytest.mark.parametrize("given", [["runner.model=llama3.2,gemma3", "runner.model=mistral"],
                                   ["runner.model=mistral", "runner.model=llama3.2,gemma3"],
                                   ["runner.model=llama3.2,gemma3", "++runner.model=mistral"]])
@pytest.mark.parametrize("dry", [[], ["dry_run=true"]])
def test_a_key_a_sweep_varies_given_again_on_the_command_line_is_refused(tmp_path, given, dry):
    done = call_benchrun("-m", *given, "runner.host=http://127.0.0.1:9", "outputs=outputs", *dry, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", TWICE.format(said=", then ".join(given)))
    assert not (tmp_path / "outputs").exists()


def test_a_sweep_giving_one_list_twice_alike_runs_it_once(tmp_path):
    done = call_benchrun("-m", "runner.model=llama3.2,gemma3", "runner.model=llama3.2,gemma3", "dry_run=true",
                         cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["ok"], "")
    assert done.stdout.count("dry run: no model was called") == 2


def test_a_run_into_a_directory_holding_a_rescores_folder_is_refused(tmp_path):
    planted = tmp_path / "proj" / "rescores" / "001" / "rescore.json"
    planted.parent.mkdir(parents=True)
    planted.write_text('{"rescore": 1}\n')
    with FakeOllama(models=["llama3.2"]) as server:
        done = call_benchrun(f"runner.host={server.url}", "hydra.run.dir=proj", "cache=false", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", "benchrun: error: proj holds a rescores/ folder (another run's rescorings?), which a run "
        "made there would take for its own; nothing was changed; pick a new directory (hydra.run.dir=...)\n")
    assert sorted(path.relative_to(tmp_path).as_posix() for path in (tmp_path / "proj").rglob("*")) == [
        "proj/rescores", "proj/rescores/001", "proj/rescores/001/rescore.json"]


@pytest.mark.parametrize("name", ["run.json", "rescores", "run.lock", "benchrun.log"])
def test_hydras_copies_taking_a_name_of_the_runs_own_are_refused_before_anything_is_made(tmp_path, name):
    done = call_benchrun(f"hydra.output_subdir={name}", "runner.host=http://127.0.0.1:9", "outputs=outputs",
                         cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: hydra.output_subdir={name}: a name the run's own files take, which "
        "Hydra's copies of the config would have (the run then refused in its own directory as holding a run or a "
        "sweep, or failing as it writes); leave it out (.hydra)\n")
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("subdir", [".hidden", ".${hydra.job.num}", "sweep.json", "multirun.yaml"])
def test_a_sweeps_job_directory_hidden_or_named_as_the_sweeps_own_files_is_refused(tmp_path, subdir):
    done = call_benchrun("-m", "runner.model=llama3.2", f"hydra.sweep.subdir={subdir}",
                         "runner.host=http://127.0.0.1:9", "outputs=outputs", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: hydra.sweep.subdir={subdir}: a job's directory is named apart from the "
        "sweep's own files (sweep.json, multirun.yaml) and is not hidden (a name starting with '.', which every reader "
        "of the sweep passes over); leave hydra.sweep.subdir out (benchrun names each job by what it varies), or name "
        "jobs by ${hydra.job.num}\n")
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize(("written", "said"), [
    ("model: [llama3.2, llama3.2]\n", "model: a model name, or a list of different model names"),
    ("runner_type: OLLAMA\nmodel: llama3.2\n",
     "runner_type: unknown runner type 'OLLAMA' (did you mean 'ollama'?)"),
    ("model: llama3.2\noptions: {temperature: hot}\n", 'options.temperature: Input should be a valid number, not "hot"'),
    ("model: llama3.2\nhots: 1\n", "hots: unknown key 'hots' (did you mean 'host'?)")])
def test_a_runner_files_wrong_key_is_said_of_the_file_and_its_key(tmp_path, written, said):
    (tmp_path / "runner.yml").write_text(written)
    done = call_benchrun("runner_file=runner.yml", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: in 'runner.yml': {said}\n")


def test_a_wrong_runner_key_the_command_line_gives_beside_a_runner_file_is_said_of_the_config(tmp_path):
    (tmp_path / "runner.yml").write_text("model: llama3.2\n")
    done = call_benchrun("runner_file=runner.yml", "runner.timeout_s=soon", "dry_run=true", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        EXIT["usage"], "benchrun: error: in 'config': runner.timeout_s: Input should be a valid number, not \"soon\"\n")


@pytest.mark.parametrize("dry", ["false", "true"])
def test_a_run_refused_by_its_config_takes_back_only_what_hydra_made(tmp_path, dry):
    (tmp_path / "proj" / ".hydra").mkdir(parents=True)
    (tmp_path / "proj" / ".hydra" / "notes.txt").write_text("another application's\n")
    (tmp_path / "proj" / "benchrun.log").write_text("my own log\n")
    done = call_benchrun("hydra.run.dir=proj", "runner.options.temperature=hot", f"dry_run={dry}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["usage"], "benchrun: error: in 'config': runner.options.temperature: "
                                              'Input should be a valid number, not "hot"\n')
    assert sorted(path.relative_to(tmp_path).as_posix() for path in (tmp_path / "proj").rglob("*")) == [
        "proj/.hydra", "proj/.hydra/notes.txt", "proj/benchrun.log"]
    assert (tmp_path / "proj" / "benchrun.log").read_text().startswith("my own log\n")


@pytest.mark.parametrize(("written", "said"), [
    (b"a: [\n", "line 2, column 1: YAML syntax error: expected the node content, but found '<stream end>' (while "
                "parsing a flow node at line 2, column 1)"),
    (b"a: 1\na: 2\n", "line 2, column 1: YAML syntax error: found duplicate key a (while constructing a mapping at line "
                      "1, column 1)"),
    (b'a: "\xff"\n', "line 1, column 5: not UTF-8 text (invalid start byte, 0xff); save it as UTF-8")])
def test_a_preset_of_ones_own_that_hydra_cannot_read_is_one_line(tmp_path, written, said):
    (tmp_path / "my" / "model").mkdir(parents=True)
    (tmp_path / "my" / "model" / "bad.yaml").write_bytes(written)
    done = call_benchrun("--config-dir", "my", "model=bad", "dry_run=true", cwd=tmp_path)
    preset = (tmp_path / "my" / "model" / "bad.yaml").resolve()
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", f"benchrun: error: in '{preset}': {said}\n")


def test_a_config_printed_resolved_says_which_interpolation_cannot_be_had(tmp_path):
    done = call_benchrun("--cfg", "job", "--resolve", "runner.model=${nope}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (EXIT["usage"], "benchrun: error: in 'config': runner.model: cannot "
                                              "resolve: Interpolation key 'nope' not found (from the override "
                                              "'runner.model=${nope}')\n")


SCORER = "def s(response, values):\n    return 1\n"
REMOVER = ("import glob\nimport shutil\n\n\ndef s(response, reference):\n"
           "    for job in glob.glob('outputs/*/*_sweep/0_*'):\n        shutil.rmtree(job)\n    return 1\n")


def test_a_sweep_whose_job_directory_was_removed_as_it_ran_fails(tmp_path):
    write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n  reference: ['1']\n"
                                        "  scorer: s\n", "custom_scorer.py": REMOVER})
    with FakeOllama(models=["llama3.2", "gemma3"]) as server:
        done = call_benchrun("-m", "task.path=bench", "runner.model=llama3.2,gemma3", f"runner.host={server.url}",
                             "outputs=outputs", "cache=false", cwd=tmp_path)
    sweep_dir = next((tmp_path / "outputs").glob("*/*_sweep"))
    assert (done.returncode, done.stderr.splitlines()[-1]) == (
        EXIT["sweep_failed"], f"benchrun: error: the sweep launched 2 jobs, and {sweep_dir} holds 1 of them (a job's "
        "directory removed while the sweep ran?): sweep.json lists only those")
    assert [job["dir"] for job in json.loads((sweep_dir / "sweep.json").read_text())["jobs"]] == ["1_gemma3"]


@pytest.mark.slow
@pytest.mark.parametrize(("flag", "said"), [
    ("--dry-run", "unrecognized arguments: --dry-run"),
    ("--cfg=foo", "argument --cfg/-c: invalid choice: 'foo' (choose from 'job', 'hydra', 'all')")])
def test_a_flag_hydras_parser_refuses_is_one_line(tmp_path, flag, said):
    done = run_benchrun(flag, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT["usage"], "", f"benchrun: error: {said}; benchrun --hydra-help lists its flags, and a setting is key=value "
        "(dry_run=true)\n")


EDITOR = ("def s(response, reference):\n    with open('bench/tasks.yml', encoding='utf-8') as file:\n"
          "        text = file.read()\n    if '# mended' not in text:\n"
          "        with open('bench/tasks.yml', 'a', encoding='utf-8') as file:\n            file.write('# mended\\n')\n"
          "    return 1\n")


def test_a_sweep_whose_benchmark_changed_while_it_ran_fails_naming_the_file(tmp_path):
    bench = write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n"
                                                "  reference: ['1']\n  scorer: s\n", "custom_scorer.py": EDITOR})
    with FakeOllama(models=["llama3.2", "gemma3"]) as server:
        done = call_benchrun("-m", "task.path=bench", "runner.model=llama3.2,gemma3", f"runner.host={server.url}",
                             "outputs=outputs", "cache=false", cwd=tmp_path)
    said = re.fullmatch(r"benchrun: error: jobs 0_llama3.2 and 1_gemma3 read (.*) with other bytes \(sha256 "
                        r"[0-9a-f]{12}, then [0-9a-f]{12}\): the benchmark changed while the sweep ran, and the sweep's "
                        r"table compares them as one; run the sweep again", (done.stderr.splitlines() or [""])[-1])
    assert (done.returncode, said and said[1]) == (EXIT["sweep_failed"], str(bench / "tasks.yml"))


@pytest.mark.slow
def test_a_run_a_script_starts_in_the_background_goes_on_through_ctrl_c(tmp_path):
    write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {a}'\n  values: {a: [1, 2, 3, 4, 5, 6, 7, 8]}\n"
                                        "  reference: calculated\n  scorer: s\n", "custom_scorer.py": SCORER})
    with FakeOllama(models=["llama3.2"], latency_s=0.3) as server:
        script = (f"'{sys.executable}' -m benchrun task.path=bench runner.host={server.url} outputs=outputs cache=false "
                  "runner.concurrency=1 & echo $! > pid; wait $!")
        shell = subprocess.Popen(["sh", "-c", script], cwd=tmp_path, env=child_env(), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: any(path.stat().st_size for path in tmp_path.glob("outputs/*/*/responses.jsonl")), 60)
            os.kill(int((tmp_path / "pid").read_text()), signal.SIGINT)
            _, stderr = shell.communicate(timeout=120)
        finally:
            shell.kill()
    run = json.loads(next(tmp_path.glob("outputs/*/*/run.json")).read_text())
    assert (shell.returncode, stderr, run["status"]) == (EXIT["ok"], "", "completed")
