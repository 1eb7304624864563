"""The twenty-second hostile pass of issue 19, the side attacking what this pass's other sides merged (rev22).

Fixed:
1. `benchrun-audit rescore RUN --scorer contains` of a task whose references are an option's capital letter (`B`) on
   a free-text answer was written, nearly every answer 1: a compile refuses that task so graded, the rescore did not
   (`compiler.answerable.refuse_unscorable` weighs the letters rule too).
2. contains found no number right after a letter of a script written without spaces (`答えは５です` did not hold 5,
   `気温は5度` neither, where `気温は－５度` held -5; `気温は-5度` held 5, not -5): such letters make no name with a
   number, as `CO5` does (`compiler.scoring.UNSPACED`, `BEFORE`).
3. `benchrun-audit --help > /dev/full` (and a command's `--help`) exited 0, nothing said, where benchrun's own help
   says its output was cut short since this pass: argparse's sys.exit(0) went past the check (`benchrun.audit.__main__
   .entry`).
4. A run or sweep directory refused for its path (`${` in it, a line break) was told `run benchrun in a folder ..., or
   give outputs= ...` where the command line named it (`hydra.run.dir=myrun`, which outputs= does not set) or the
   path was whole (`hydra.run.dir=/…/a\\${x}/run`, `outputs=/…`: no folder benchrun runs in is part of it): the way
   out names the key given, and the folder only for a relative path (`compose.hydranames._way_out`,
   `callbacks._given`).
5. A credential (or a value the archive cannot keep) that a runner file gives was said of 'config' and a runner key
   the user never wrote (`in 'config': runner.model[1]: secrets are never taken ...`), where every other bad value of
   a runner file is said of the file: the checks run inside `compose.runneryml.said_of_runner_file`, which reads a
   list's index (`model[1]`) and keeps the refusal's kind (a credential's: Hydra's copies are forgotten).
6. A joblib launcher's setting mistyped (`+hydra.launcher.n_job=2`) was taken by a dry run and the sweep and dropped
   by joblib (its Parallel takes any keyword for its backend): the sweep ran as many jobs at once as the machine has
   CPUs. Found by the runs2 side too, whose rule was merged: a setting joblib does not read down its loky chain is
   refused, with the name meant (`compose.lokykeys`); its library's own keywords (`idle_worker_timeout`) are handed on.

Held (tried, not changed): the `--set runner.max_response_bytes` advice, doubled a resume at a time, mends a run of
long answers; a 200 of a 1 MB HTML page is a one-line error each; benchrun's --version and help flags in every order
and into /dev/full; a sweep job refused for a model list holding a credential archives none of it; contains' new
signs and grouped numbers; `--help | head -1` and `>&-` for benchrun-audit; scratch folders' symlinks and owners (by
reading). /work/notes/p22/result-rev22.md has the whole list and what was left.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchrun.archive.reader import load_run
from benchrun.audit.rescore import rescore
from benchrun.compiler.scoring import contains
from benchrun.core.errors import EXIT, TaskError
from benchrun.testing.chat import Reply
from benchrun.testing.inprocess import child_env
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, make_run

MMLU = {"tasks.yml": "- name: mmlu\n  template: \"{question}\\n(A) {A}\\n(B) {B}\\n(C) {C}\\nAnswer with the letter.\"\n"
                     "  values_file: data/mmlu.csv\n  scorer: exact_match\n",
        "data/mmlu.csv": "id,question,A,B,C,reference\nm1,Capital of France?,Berlin,Paris,Rome,B\n"
                         "m2,Largest planet?,Mars,Venus,Jupiter,C\n"}
"""A multiple-choice task from a CSV, its references the right option's letter, graded by exact_match."""


def _wrong(request) -> Reply:
    return Reply(content=json.dumps({"answer": "Answer: (A) because"}))


@pytest.mark.slow
def test_a_rescore_by_contains_of_capital_letter_references_on_free_text_is_refused(tmp_path):
    """Before: rescore 001 written, contains 1.000 for two wrong answers (`Answer: (A) because` holds `B` and `C`)."""
    write_bench(tmp_path, MMLU)
    run_dir = make_run(tmp_path, "task.path=bench", responder=_wrong)
    with pytest.raises(TaskError) as refused:
        rescore(load_run(run_dir), ["contains"])
    assert str(refused.value) == (
        f"in '{run_dir / 'manifest.json'}': task 'mmlu': reference: the reference of sample 'mmlu:m1' is \"B\", a "
        "capital letter: contains finds it, ignoring case, in every answer with that letter in it (\"Answer: (C)\" "
        "holds \"A\", \"because\" holds \"B\"), so nearly every answer would score 1; the run's references are as it "
        "asked them: choose another scorer (exact_match)")
    assert not (run_dir / "rescores").exists()
    assert rescore(load_run(run_dir), ["exact_match"]).means


UNSPACED = [("答えは５です", 5, 1), ("気温は5度", 5, 1), ("答えは１５です", 5, 0), ("気温は-5度", -5, 1),
            ("気温は-5度", 5, 0), ("答えはＡ５です", 5, 0), ("คำตอบคือ5", 5, 1), ("CO5", 5, 0), ("COVID-19", -19, 0),
            ("COVID-19", 19, 1), ("第3章", "3章", 1), ("気温は－５度", -5, 1),
            ("๑๕", 5, 0), ("๑๕", 15, 1)]
"""Answers of a text written without spaces between words, the number the reference is and contains' score."""


@pytest.mark.parametrize(("answer", "reference", "score"), UNSPACED)
def test_a_number_after_a_letter_of_a_script_written_without_spaces_is_a_number(answer, reference, score):
    """Before: `答えは５です` (the answer is 5) and `気温は5度` did not hold 5 (a number after a letter is part of a name,
    as in CO5), where `気温は－５度` held -5; `気温は-5度` held 5, not -5."""
    assert contains(json.dumps({"answer": answer}, ensure_ascii=False), reference) == score


@pytest.mark.slow
@pytest.mark.parametrize("args", [["--help"], ["show", "--help"]])
def test_benchrun_audits_help_into_a_full_disk_says_it_was_cut_short(tmp_path, args):
    """Before: exit 0, nothing said (argparse ends its help with sys.exit(0), past entry's check of what was printed),
    where benchrun's own --help says it (this pass's runs side)."""
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "benchrun.audit", *args], cwd=tmp_path, env=child_env(None),
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (EXIT["archive"], "benchrun: error: disk full writing standard output: "
                                              "what was printed was cut short, not what was recorded\n")


@pytest.mark.parametrize(("args", "key"), [(["hydra.run.dir=myrun"], "hydra.run.dir"),
                                           (["-m", "hydra.sweep.dir=mysweep"], "hydra.sweep.dir")])
def test_a_run_directory_given_in_a_folder_whose_name_holds_an_interpolation_is_told_to_give_another(tmp_path, args,
                                                                                                      key):
    """Before: `...; run benchrun in a folder whose path holds no '${', or give outputs= a directory whose path holds
    none`: outputs= does not set a directory the command line names."""
    folder = tmp_path / "a${x}"
    folder.mkdir()
    done = call_benchrun("task=listbench", "runner.host=http://127.0.0.1:9", *args, cwd=folder)
    given = folder / args[-1].split("=")[1]
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'config': {key}: its path {given} holds '${{', which Hydra reads as an interpolation "
        "where it keeps the path in its config (the run's log, its output directory); run benchrun in a folder whose "
        f"path holds no '${{', or give {key} a directory whose path holds none\n"))
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize(("given", "key", "fix"), [
    ("hydra.run.dir={}/run", "hydra.run.dir", "give hydra.run.dir a directory whose path holds none"),
    ("outputs={}", "hydra.run.dir", "give outputs= a directory whose path holds none")])
def test_a_whole_path_holding_an_interpolation_is_not_told_to_run_elsewhere(tmp_path, given, key, fix):
    """Before: `...; run benchrun in a folder whose path holds no '${', or give outputs= a directory whose path holds
    none`: the folder benchrun runs in is no part of a whole path, and outputs= does not set a hydra.run.dir given."""
    folder = tmp_path / "a${x}"
    done = call_benchrun("task=listbench", "runner.host=http://127.0.0.1:9",
                         given.format(str(folder).replace("${", "\\${")), cwd=tmp_path)
    assert (done.returncode, done.stdout) == (EXIT["usage"], "")
    assert done.stderr.startswith(f"benchrun: error: in 'config': {key}: its path {folder}/"), done.stderr
    assert done.stderr.endswith(" holds '${', which Hydra reads as an interpolation where it keeps the path in its config "
                                f"(the run's log, its output directory); {fix}\n"), done.stderr
    assert not folder.exists()


KEY = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"
"""A credential's value, as $HF_TOKEN holds it."""


@pytest.mark.parametrize(("model", "key"), [(f"[llama3.2, {KEY}]", "model[1]"), (KEY, "model")])
def test_a_credential_a_runner_file_gives_is_said_of_that_file(tmp_path, model, key):
    """Before: `in 'config': runner.model[1]: secrets are never taken ...`, of a file and key the user never wrote,
    where a runner file's other bad values are said of the file (`said_of_runner_file`)."""
    (tmp_path / "runner.yml").write_text(f"runner_type: ollama\nmodel: {model}\n")
    done = call_benchrun("task=listbench", "runner_file=runner.yml", "runner.host=http://127.0.0.1:9", cwd=tmp_path,
                         env={"HF_TOKEN": KEY})
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: in 'runner.yml': {key}: secrets are never taken from the config, where they would be "
        "archived (the value of $HF_TOKEN); put an API key in an environment variable and name it with "
        "runner.api_key_env, and give URLs without user names or passwords\n"))
    assert [path.name for path in tmp_path.rglob("*") if not path.is_dir()] == ["runner.yml"]


@pytest.mark.parametrize(("given", "said"), [("+hydra.launcher.n_job=2", "n_job' (did you mean 'n_jobs'?)"),
                                             ("+hydra.launcher.prefr=threads", "prefr' (did you mean 'prefer'?)")])
def test_a_joblib_setting_mistyped_is_refused_with_its_name(tmp_path, given, said):
    """Before: taken, a dry run and the sweep alike (joblib.Parallel takes any keyword for its backend and dropped it):
    `n_job=2` ran as many jobs at once as the machine has CPUs (n_jobs=-1), nothing said."""
    done = call_benchrun("-m", "task=listbench", "runner.model=a,b", "hydra/launcher=joblib", given, "dry_run=true",
                         cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (EXIT["usage"], "", (
        f"benchrun: error: hydra.launcher.{given.split('.')[-1].split('=')[0]}: unknown setting '{said} of the "
        "joblib launcher, which joblib does not take (a key it does not name is dropped unread)\n"))
