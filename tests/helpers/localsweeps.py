"""A submitit_local sweep of two models, stopped by SIGTERM to its process alone once both jobs ask; a controller and
its job, as submitit_local starts them, stopped by the takeback."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable

from benchrun.compose import takeback
from benchrun.core.procfs import stat_fields
from benchrun.testing.inprocess import child_env
from benchrun.testing.lab import wait_for
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.benchfiles import tasks_yml, write_bench

TASK = {"name": "t", "template": "say {a}", "values": {"a": [1, 2]}, "reference": ["1", "2"]}


def stopped_local_sweep(root: Path, started: Callable[[], None] | None = None) -> tuple[int, str, Path, list[dict]]:
    """(exit code, last line of standard error, sweep directory, each job's run.json) of the sweep, started in `root`
    with `started` run in its process before it execs (`preexec_fn`), its model answering after 60 s."""
    outputs = root / "outputs"
    write_bench(root, {"tasks.yml": tasks_yml(TASK)})
    with FakeOllama(models=["llama3.2", "gemma3"], latency_s=60) as server, subprocess.Popen(
            [sys.executable, "-m", "benchrun", "-m", "runner.model=llama3.2,gemma3", "hydra/launcher=submitit_local",
             "task.path=bench", f"runner.host={server.url}", "cache=false", f"outputs={outputs}"], cwd=root,
            env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=started) as sweep:
        try:
            wait_for(lambda: len(list(outputs.glob("*/*_sweep/*/responses.jsonl"))) == 2, 120)
            sweep.send_signal(signal.SIGTERM)
            _, stderr = sweep.communicate(timeout=120)
        except subprocess.TimeoutExpired as err:
            raise AssertionError(f"still running: {_outliving(outputs)}") from err
        finally:
            sweep.kill()
    [sweep_dir] = outputs.glob("*/*_sweep")
    runs = [json.loads((job / "run.json").read_text()) for job in sorted(sweep_dir.glob("[01]_*"))]
    return sweep.returncode, stderr.splitlines()[-1], sweep_dir, runs


def _outliving(outputs: Path) -> list[tuple[str, str]]:
    """(command line, last lines of its submitit logs) of each process that names `outputs` on its command line."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            line = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if str(outputs) in line:
                found.append((line, job_logs(outputs)))
    return found


def job_logs(outputs: Path) -> str:
    """The last lines each job of the sweeps in `outputs` wrote (submitit's logs of its output and errors), and each
    job's benchrun.log: what says where a job was when it was stopped."""
    logs = [*outputs.glob("*/*_sweep/.submitit/*/*_log.*"), *outputs.glob("*/*_sweep/*/benchrun.log")]
    return "\n".join(f"{log}: {log.read_text(errors='replace')[-1500:]}" for log in sorted(logs))


FORWARDING = textwrap.dedent("""
    import signal, subprocess, sys
    job = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]])
    signal.signal(signal.SIGTERM, lambda *_: job.send_signal(signal.SIGTERM))
    print(job.pid, flush=True)
    job.wait()
""")
"""As submitit's controller is: SIGTERM forwarded to its job, then waited on; ends when its job ends."""
BYPASSING = textwrap.dedent("""
    import pathlib, signal, sys, time
    signal.signal(signal.SIGTERM, lambda *_: print("Bypassing signal SIGTERM", flush=True))
    pathlib.Path(sys.argv[1]).touch()
    time.sleep(60)
""")
"""A job between submitit's setting SIGTERM to a handler that passes it over and benchrun's setting its own."""


def stopped_bypassing_job(root: Path, monkeypatch, started: Callable[[], None] | None = None) -> int | None:
    """The exit code of a FORWARDING controller of a BYPASSING job (both started with `started` run first) once the
    takeback stopped it, as a sweep's process does (its wait cut to 5 s); the job is gone by then."""
    sweep_dir, ready = root / "sweep", root / "ready"
    with subprocess.Popen([sys.executable, "-c", FORWARDING, BYPASSING, str(ready)], stdout=subprocess.PIPE,
                          text=True, preexec_fn=started) as controller:
        job = int(controller.stdout.readline())
        wait_for(ready.exists, 30)
        (sweep_dir / takeback.LAUNCHER_FILES / str(controller.pid)).mkdir(parents=True)
        monkeypatch.setattr(takeback, "MADE", takeback.Made(local_sweeps=[sweep_dir]))
        monkeypatch.setattr(takeback, "LOCAL_STOP_S", 5)
        takeback.stop_launched_jobs()
        code = controller.wait(timeout=30)
    wait_for(lambda: stat_fields(job) is None, 30)
    return code
