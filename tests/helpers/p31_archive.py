"""Runs for the thirty-first hostile pass of the archive side: a judge (runner=openai) whose server answered the
preflight's probe as one model and every grade as another, and a finished run whose summary.json was rewritten and
sealed again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from benchrun.testing.ollama_server import FakeOllama
from benchrun.testing.oracle import demo
from tests.helpers.archives import reseal
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import call_benchrun, run_dir_of
from tests.helpers.judges import JUDGES, RESPONSE, TASKS, answer
from tests.helpers.p30_archive import SwitchedAfterProbe


def switched_judge(probed: str, later: str) -> SwitchedAfterProbe:
    """A judge server (runner=openai, serving `qwen`) answering the preflight's probe as `probed`, every grade as
    `later`."""
    judge = SwitchedAfterProbe(probed, later)
    judge.responder = demo
    return judge


def switched_judge_run(root: Path, probed: str, later: str) -> Path:
    """A finished run of the judged symbol benchmark whose judge (runner=openai, structured=auto) is served by
    `switched_judge(probed, later)`."""
    write_bench(root, {"tasks.yml": TASKS, "judges.yml": JUDGES, "custom_response.py": RESPONSE})
    with FakeOllama(models=["llama3.2"], responder=answer) as model, switched_judge(probed, later) as judge:
        done = call_benchrun(f"runner.host={model.url}", "task.path=bench", "judge.runner=openai",
                             f"judge.base_url={judge.url}", "judge.model=qwen", "+judge.structured=auto", "cache=false",
                             f"outputs={root / 'o'}", cwd=root)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return run_dir_of(done.stdout)


def summary_rewritten(run_dir: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """`run_dir`'s summary.json changed by `change` (its data, in place), digested again and sealed: as a writer that
    wrote it so would have left it."""
    path = run_dir / "summary.json"
    summary = json.loads(path.read_text())
    change(summary)
    path.write_text(json.dumps(summary, indent=2))
    reseal(run_dir, "summary.json")


def summary_removed(run_dir: Path, **counts: int) -> Path:
    """A finished run's summary.json deleted and dropped from run.json's final digests, its `counts` changed, sealed
    again: as a writer that wrote no summary would have left it."""
    (run_dir / "summary.json").unlink()
    info = json.loads((run_dir / "run.json").read_text())
    del info["files"]["summary.json"]
    (run_dir / "run.json").write_text(json.dumps({**info, "counts": {**info["counts"], **counts}}, indent=2))
    reseal(run_dir)
    return run_dir
