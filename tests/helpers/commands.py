"""Running benchrun and benchrun-audit from tests: in this process (the run path), as a real process (signals,
crashes, what the interpreter itself does), or as a whole run against a fresh fake server; and what their output
says (the run or sweep directory, the manifest ids)."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from benchrun.app import run
from benchrun.compose.config import register_with_hydra
from benchrun.core.errors import EXIT, BenchrunError
from benchrun.core.resources import conf_dir
from benchrun.testing.inprocess import child_env, cli
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import listbench_answer

call_benchrun = cli
"""`python -m benchrun ...` (or `module=...`) called in this process: benchrun.testing.inprocess.cli."""


def run_benchrun(*args: str, cwd: Path, env: dict[str, str] | None = None,
                 module: str = "benchrun", timeout: float = 120) -> subprocess.CompletedProcess:
    """A real `python -m benchrun ...` subprocess; stdout/stderr captured as text."""
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=child_env(env),
                          capture_output=True, text=True, timeout=timeout)


def audit(root: Path, *args: str) -> subprocess.CompletedProcess:
    """A real `benchrun-audit ARGS` process in `root`."""
    return run_benchrun(*args, cwd=root, module="benchrun.audit")


def bench_run(tmp_path: Path, url: str, *args: str, multirun: bool = False):
    """`python -m benchrun [-m] runner.host=url outputs=tmp_path/outputs args...` in tmp_path, in this process."""
    flags = ["-m"] if multirun else []
    return call_benchrun(*flags, f"runner.host={url}", f"outputs={tmp_path / 'outputs'}", *args, cwd=tmp_path)


def make_run(root: Path, *overrides: str, responder=listbench_answer, models=("llama3.2", "gemma3"),
             multirun: bool = False) -> Path:
    """A real run (or sweep) made by `python -m benchrun` (in this process) in `root` against a fresh fake server; its
    directory. The answers are the responder's: the response cache is off (cache=false)."""
    root.mkdir(parents=True, exist_ok=True)
    with FakeOllama(models=list(models), responder=responder) as server:
        result = bench_run(root, server.url, "cache=false", *overrides, multirun=multirun)
    if result.returncode not in (EXIT["ok"], EXIT["sweep_failed"]):
        raise AssertionError(f"benchrun failed ({result.returncode}): {result.stderr}")
    return sweep_dir_of(result.stdout) if multirun else run_dir_of(result.stdout)


def run_in_process(root: Path, name: str, *overrides: str, responder=listbench_answer,
                   models=("llama3.2", "gemma3")) -> Path:
    """A real run, as `python -m benchrun OVERRIDES` makes it but in this process (Hydra composes the config,
    `benchrun.app.run` does the rest), against a fresh loopback Ollama; its directory root/outputs/name. A run
    that fails is recorded as failed, as on the command line. The answers are the responder's (cache=false)."""
    register_with_hydra()
    run_dir = root / "outputs" / name
    with FakeOllama(models=list(models), responder=responder) as server:
        args = [f"runner.host={server.url}", "cache=false", *overrides]
        try:
            with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3", job_name="benchrun"):
                cfg = compose("config", overrides=[f"outputs={root / 'outputs'}", *args])
        finally:
            GlobalHydra.instance().clear()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(BenchrunError):
            run(cfg, run_dir, overrides=args, cwd=root)
    return run_dir


def run_dir_of(stdout: str) -> Path:
    return Path(re.search(r"^run directory: (.+)$", stdout, re.M)[1])


def sweep_dir_of(stdout: str) -> Path:
    return Path(re.search(r"^sweep directory: (.+)$", stdout, re.M)[1])


def manifest_ids(stdout: str) -> list[str]:
    return re.findall(r"manifest id: ([0-9a-f]{64})", stdout)


def squeezed(text: str) -> str:
    """`text` without its whitespace: what `show` prints, however its table folds long lines."""
    return "".join(text.split())
