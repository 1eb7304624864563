"""Runs for the thirty-second hostile pass of the archive side: a record line given other lineage fields and sealed
over, a run merged from two shard runs (with a retry of it), and a run of repeats whose summary leaves out the samples
its pass@k and consistency are over."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

from benchrun.archive.speed import SpeedTally
from benchrun.core.records import ResponseRecord
from benchrun.testing.ollama_server import FakeOllama
from tests.helpers.answers import BROKEN, SAY_A, broken_answer, listbench_answer, one_request_fails
from tests.helpers.archives import reseal, synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.benchfiles import write_bench
from tests.helpers.commands import run_in_process
from tests.helpers.judgedruns import Judging, judged_eight
from tests.helpers.p25_archive import sealed_over
from tests.helpers.p26_archive import sealed_line
from tests.helpers.p31_archive import summary_rewritten


def given(**fields: Any) -> Callable[[bytes], bytes]:
    """A record line's change: `fields` set (a value None: the field taken out)."""
    def change(line: bytes) -> bytes:
        record = {**json.loads(line), **fields}
        return json.dumps({key: value for key, value in record.items()
                           if value is not None or key not in fields}).encode() + b"\n"
    return change


def sealed_fields(run_dir: Path, name: str, number: int, **fields: Any) -> Path:
    """Line `number` of record file `name` of a finished run given `fields` (`given`), sealed over."""
    return sealed_line(run_dir, name, number, given(**fields))


def merged_run(root: Path) -> Path:
    """root/merged: the listbench run of BROKEN (product (5,5) failed, HTTP 503) merged from its shards 1/2 and 2/2."""
    shutil.copytree(Path(__file__).parents[2] / "benchrun" / "demos" / "listbench", root / "bench")
    shards = [run_in_process(root, f"s{i}", f"shard={i}/2", "task.path=bench", *BROKEN, responder=broken_answer)
              for i in (1, 2)]
    done = audit(root, "merge", *map(str, shards), "--into", str(root / "merged"))
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return root / "merged"


def retried(root: Path, run_dir: Path) -> Path:
    """A retry of `run_dir` (its failed sample asked again of a server that answers it)."""
    with FakeOllama(models=["llama3.2"], responder=listbench_answer) as server:
        done = audit(root, "retry", str(run_dir), "--host", server.url)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return run_dir.with_name(f"{run_dir.name}.retry1")


def left_out_run(root: Path) -> Path:
    """A run of SAY_A asked three times a sample, `say 1`'s second request failed: its pass@k, majority@k and
    consistency are over `say 2` alone (`over 1 of 2 samples`)."""
    write_bench(root, {"tasks.yml": SAY_A})
    return run_in_process(root, "r", "task.path=bench", "repeats=3", "runner.options.seed=0", "runner.retries=0",
                          responder=one_request_fails)


def bases_deleted(summary: dict[str, Any]) -> None:
    """A summary.json's at_k_samples (each line's) and consistency_samples taken out."""
    summary.pop("consistency_samples")
    for line in summary["metrics"]:
        line.pop("at_k_samples", None)


SERVERS = '"runner": {"host": ["http://a:1", "http://b:2"]}'
"""run.json's runner of a run asking a list of two servers."""


def hosts_run(run_dir: Path) -> Path:
    """A finished synthetic run (values 1, 0) whose answers came from two servers, http://a:1 and http://b:2, its
    summary's speed made by the writer's own tally of them: as a run over a list of servers leaves it (its run.json's
    runner lists them)."""
    sealed_over(synthetic_run(run_dir, [1, 0]), lambda text: text.replace('"runner": {}', SERVERS))
    for number, host in ((1, "http://a:1"), (2, "http://b:2")):
        sealed_fields(run_dir, "responses.jsonl", number, host=host)
    return speed_remade(run_dir)


def speed_remade(run_dir: Path) -> Path:
    """A finished run's summary.json speed made again by the writer's own tally of its responses over the wall time
    it says, sealed: as a writer of those responses would have left it."""
    tally = SpeedTally()
    for line in (run_dir / "responses.jsonl").read_text().splitlines():
        tally.add(ResponseRecord.model_validate_json(line))
    made = tally.speed().model_dump(mode="json")

    def remade(summary: dict[str, Any]) -> None:
        wall = summary["speed"]["wall_s"]
        hosts = {host: _over(figures, wall) for host, figures in made.get("hosts", {}).items()}
        summary["speed"] = {**_over(made, wall), **({"hosts": hosts} if hosts else {})}
    summary_rewritten(run_dir, remade)
    return run_dir


def _over(figures: dict[str, Any], wall: float | None) -> dict[str, Any]:
    """Speed `figures` over the wall time `wall` (a server's too: one answering to the run's end has the run's)."""
    return {**figures, "wall_s": wall, "samples_per_s": (figures["n"] + figures["failed"]) / wall if wall else None}




def judged_retry(root: Path, asked: int = 8) -> Path:
    """A finished run of eight answers each graded by a judge, whose run.json names a parent it carried none of (a
    retry that asked every sample again: `asked` 8), sealed."""
    with FakeOllama(models=["llama3.2", "qwen2.5"], responder=Judging()) as server:
        done, run_dir = judged_eight(root, server.url)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    info = json.loads((run_dir / "run.json").read_text())
    parent = {"run_id": "7" * 12, "path": str(root / "parent"), "carried": 0, "asked": asked}
    (run_dir / "run.json").write_text(json.dumps({**info, "parent": parent}, indent=2))
    reseal(run_dir)
    return run_dir
