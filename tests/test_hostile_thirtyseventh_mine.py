"""The thirty-seventh hostile pass, the lead's side: the interpreter's settings a machine gives, and its limits.

Fixed:
1. A machine's $PYTHONINTMAXSTRDIGITS (Python's limit on the digits of an integer read from text) decided whether
   an answer was a valid format: `{"answer": 111…}` of 700 digits was valid on a machine of Python's default limit
   and an invalid format under PYTHONINTMAXSTRDIGITS=640; the scorer process and a sweep's workers inherited the
   limit too. benchrun and benchrun-audit set it to Python's own default, for themselves and every process they
   start (`core.intdigits`).
2. Under a memory limit just short of what benchrun's console needs (`ulimit -v 50000`), the error line itself was
   lost: loading benchrun.console to print it raised MemoryError, a traceback. The line is then printed plainly.
3. A custom scorer whose value follows `hash()` or a set's order scored otherwise in every rescore of the run (Python
   draws a new hash seed for each process): `rescore` said `p:a=1 h: 189 -> 435`, values changed with nothing
   changed. The benchmark's code runs with one hash seed (`core.codeenv.HASH_SEED`), in the run and every rescore.
4. Under a small stack limit that Python starts under (`ulimit -Ss 128`), a tasks.yml nested 900 deep ended the run
   with a segmentation fault (exit 139, no line, the run left `running`) where the usual 8 MiB stack refuses it in
   one line. The soft limit is raised to 8 MiB where the hard limit allows, and a hard limit below 1 MiB is refused
   before anything is made (`core.stacklimit`).
5. Under a switch that makes Python itself write to standard error (PYTHONVERBOSE=1, PYTHONPROFILEIMPORTTIME=1,
   PYTHONMALLOCSTATS=1), benchrun.log said the interpreter's hundreds of lines (`import _frozen_importlib # frozen`)
   were what `custom_scorer.py printed while it was imported`. The benchmark's code runs without those switches
   (`core.codeenv.INTERPRETER_TALK`).
6. run.json named the embedded engine by llama_cpp's version alone, while $LLAMA_CPP_LIB_PATH (or LD_LIBRARY_PATH,
   LD_PRELOAD) loads another build of llama.cpp under it: a run answered by a library of other bytes was recorded as
   one answered by the installed one. The model's identity lists the llama.cpp and ggml libraries the engine
   process loaded, by path, with their sha256 (`execute.runners.enginefiles`).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.util
import json
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun import __main__ as benchrun_main
from benchrun.core.errors import EXIT
from benchrun.testing.inprocess import child_env
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.auditcli import audit
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import bench_run, call_benchrun, run_dir_of

BIG = '{"answer": ' + "1" * 700 + "}"
"""An answer of an integer of 700 digits, as text: more than PYTHONINTMAXSTRDIGITS=640, less than Python's default."""


def _int_answer(req) -> str:
    return BIG if req.prompt == "say 1" else '{"answer": 2}'


def test_a_machines_digit_limit_does_not_decide_an_answers_format(tmp_path):
    bench = write_bench(tmp_path, {
        "tasks.yml": "- name: p\n  template: 'say {a}'\n  values: {a: [1, 2]}\n  reference: ['1', '2']\n"
                     "  format: IntAnswer\n  scorer: [calculated]\n",
        "custom_scorer.py": "import json\ndef calculated(response, values):\n"
                            "    return int(json.loads(response)['answer'] % 10 == 1)\n",
        "custom_response.py": "from pydantic import BaseModel\nclass IntAnswer(BaseModel):\n    answer: int\n"})
    sys.set_int_max_str_digits(640)  # as the interpreter set it from the machine's $PYTHONINTMAXSTRDIGITS
    try:
        with FakeOllama(responder=_int_answer) as server:
            result = bench_run(tmp_path, server.url, f"task.path={bench}", "cache=false")
    finally:
        sys.set_int_max_str_digits(sys.int_info.default_max_str_digits)
    assert result.returncode == EXIT["ok"], result.stderr
    assert result.stdout.splitlines()[-2] == ("completed: 2/2 samples, 0 request errors, 0 scorer errors, "
                                              "0 invalid formats")
    scores = [json.loads(line) for line in (run_dir_of(result.stdout) / "scores.jsonl").read_text().splitlines()]
    assert [(s["id"], s["scorer"], s["metrics"]) for s in scores] == [
        ("p:a=1", "format_valid", {"format_valid": 1}), ("p:a=1", "calculated", {"calculated": 1}),
        ("p:a=2", "format_valid", {"format_valid": 1}), ("p:a=2", "calculated", {"calculated": 0})]


class _NoMemory(importlib.abc.MetaPathFinder):
    """Finds benchrun.console as a memory limit does: it cannot be loaded."""

    def find_spec(self, name, path, target=None):
        if name.startswith("benchrun.console"):
            raise MemoryError
        return None


def test_the_error_line_is_said_where_memory_is_too_short_for_the_console(monkeypatch, capsys):
    for name in [name for name in sys.modules if name.startswith("benchrun.console")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_NoMemory(), *sys.meta_path])
    benchrun_main._error("out of   memory")
    assert capsys.readouterr().err == "benchrun: error: out of memory\n"


def test_a_scorer_that_follows_hash_scores_alike_in_the_run_and_its_rescore(tmp_path):
    bench = write_bench(tmp_path, {
        "tasks.yml": "- name: p\n  template: 'say {a}'\n  values: {a: [1]}\n  scorer: [h]\n",
        "custom_scorer.py": "def h(response, values):\n    return hash('alpha') % 1000\n"})
    with FakeOllama(responder=lambda req: '{"answer": 1}') as server:
        result = bench_run(tmp_path, server.url, f"task.path={bench}", "cache=false")
    rescored = audit(tmp_path, "rescore", str(run_dir_of(result.stdout)))
    assert rescored.returncode == EXIT["ok"], rescored.stderr
    assert rescored.stdout.splitlines()[-3:-1] == ["0 sample values changed", "0 scorer errors"]


def _deep_bench(tmp_path):
    depth = 900
    return write_bench(tmp_path, {"tasks.yml": "- name: t\n  template: 'say {a}'\n  values: {a: [1]}\n  extra: "
                                               + "[" * depth + "]" * depth + "\n"})


def _under_stack(tmp_path, soft: int, hard: int, *args: str) -> subprocess.CompletedProcess:
    """A real `python -m benchrun ARGS` whose stack limit is (soft, hard) from its start."""
    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_STACK, (soft, hard))
    return subprocess.run([sys.executable, "-m", "benchrun", *args], cwd=tmp_path, env=child_env(None),
                          capture_output=True, text=True, timeout=120, preexec_fn=limited)


def test_a_deep_file_under_a_small_soft_stack_limit_is_refused_in_one_line(tmp_path):
    bench = _deep_bench(tmp_path)
    result = _under_stack(tmp_path, 128 * 1024, resource.RLIM_INFINITY, f"task.path={bench}", "dry_run=true")
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        "benchrun: error: in 'tasks.yml': lists and mappings nested more than 32 deep (at [0].extra[0][0]…); a "
        "benchmark file needs 5 at most\n"))


def test_a_hard_stack_limit_too_small_to_refuse_a_deep_file_is_refused_first(tmp_path):
    bench = _deep_bench(tmp_path)
    result = _under_stack(tmp_path, 256 * 1024, 256 * 1024, f"task.path={bench}", "dry_run=true")
    assert (result.returncode, result.stderr) == (EXIT["archive"], (
        "benchrun: error: the stack limit is 256 KiB (ulimit -s), which benchrun cannot raise (its hard limit): a "
        "file nested deep could end it without a word before Python says so; give it 1024 KiB at least: "
        "ulimit -s 8192\n"))


@pytest.mark.parametrize("switch", ["PYTHONVERBOSE", "PYTHONPROFILEIMPORTTIME", "PYTHONMALLOCSTATS"])
def test_what_the_interpreter_says_is_not_logged_as_what_the_benchmarks_file_printed(tmp_path, switch):
    bench = write_bench(tmp_path, {
        "tasks.yml": "- name: p\n  template: 'say {a}'\n  values: {a: [1]}\n  scorer: [h]\n",
        "custom_scorer.py": "print('loaded')\ndef h(response, values):\n    return 1\n"})
    with FakeOllama(responder=lambda req: '{"answer": 1}') as server:
        result = call_benchrun(f"task.path={bench}", f"runner.host={server.url}", f"outputs={tmp_path / 'out'}",
                               "cache=false", cwd=tmp_path, env={switch: "1"})
    assert result.returncode == EXIT["ok"], result.stderr
    logged = (run_dir_of(result.stdout) / "benchrun.log").read_text().splitlines()
    assert [line.split("[INFO] - ")[-1] for line in logged] == ["custom_scorer.py printed while it was imported:",
                                                                "loaded"]


def test_the_engine_library_llama_cpp_lib_path_chose_is_named_with_its_digest(tmp_path):
    installed = Path(importlib.util.find_spec("llama_cpp").submodule_search_locations[0]) / "lib"
    other = tmp_path / "lib"
    shutil.copytree(installed, other, symlinks=True)
    with (other / "libllama.so").open("ab") as library:
        library.write(b"another build")
    listed = subprocess.run(
        [sys.executable, "-c", "import json, llama_cpp\nfrom benchrun.execute.runners.enginefiles import engine_files\n"
                               "print(json.dumps(engine_files()))"],
        env=child_env({"LLAMA_CPP_LIB_PATH": str(other)}), capture_output=True, text=True, timeout=60, check=True)
    files = json.loads(listed.stdout)
    built = (other / "libllama.so").resolve()
    assert files[str(built)] == hashlib.sha256(built.read_bytes()).hexdigest()
    assert not [path for path in files if path.startswith(str(installed))]
