"""Speed figures: benchrun.archive.speed against hand-computed values, then end to end through a run, show and a sweep."""

from __future__ import annotations

import json
import re
import threading
from datetime import datetime
from pathlib import Path

from benchrun.archive import speed
from benchrun.archive.speed import SpeedTally, latency, nearest_rank
from benchrun.audit.__main__ import main as audit_main
from benchrun.core.errors import EXIT
from benchrun.core.records import ErrorInfo, Latency, ResponseRecord, Speed
from benchrun.testing.ollama_server import ChatRequest, FakeOllama, Reply
from tests.helpers.archives import read_jsonl
from tests.helpers.commands import bench_run, run_dir_of, sweep_dir_of

MS = 1_000_000
"""Nanoseconds in a millisecond."""


def response(seconds: float, completion: int | None = None, prompt: int | None = None, **extra) -> ResponseRecord:
    """An answered response (`durations` in ns as the server reports them; `error`, `cached_from`, ... as given)."""
    durations = extra.pop("durations", {})
    return ResponseRecord(id=f"t:{seconds}", task="t", text="{}", seconds=seconds, attempts=1,
                          completion_tokens=completion, prompt_tokens=prompt, durations_ns=durations, **extra)


def tally(records: list[ResponseRecord], wall_s: float | None = 0.0) -> Speed:
    counted = SpeedTally(wall_s)
    for record in records:
        counted.add(record)
    return counted.speed()


OLLAMA = [  # two answers as Ollama reports them
    response(0.5, 10, 20, durations={"total": 480 * MS, "load": 2000 * MS, "prompt_eval": 100 * MS, "eval": 250 * MS}),
    response(1.5, 30, 40, durations={"total": 1400 * MS, "load": 1 * MS, "prompt_eval": 100 * MS, "eval": 750 * MS}),
]
LEFT_OUT = [  # none of these counts in latency or tokens
    response(9.0, error=ErrorInfo(type="ReadTimeout", message="no answer within 9 s")),
    response(0.001, 1000, 1000, durations={"eval": 1 * MS, "prompt_eval": 1 * MS, "load": 9000 * MS},
             cached_from="a1b2c3d4e5f6"),
    response(0.002, 1000, 1000, durations={"eval": 1 * MS, "prompt_eval": 1 * MS, "load": 9000 * MS},
             carried_from="0123456789ab"),
]


def test_percentiles_by_the_nearest_rank_rule():
    """The p-th percentile is the value at rank ceil(p/100 * n) of the sorted values."""
    twenty = [float(i) for i in range(1, 21)]
    assert (nearest_rank(twenty, 50), nearest_rank(twenty, 95), nearest_rank(twenty, 100)) == (10.0, 19.0, 20.0)
    assert latency([0.3, 0.1, 0.2]) == Latency(p50=0.2, p95=0.3, max=0.3)  # ranks ceil(1.5) = 2, ceil(2.85) = 3
    assert latency([0.7]) == Latency(p50=0.7, p95=0.7, max=0.7)
    assert latency([]) is None


def test_server_durations_give_generation_prompt_and_load_speed():
    assert tally(OLLAMA, wall_s=1.6) == Speed(
        n=2, failed=0, latency_s=Latency(p50=0.5, p95=1.5, max=1.5),
        tokens_per_s=40.0,  # (10 + 30) tokens / (250 + 750) ms of eval
        tokens_per_s_from="server",
        prompt_tokens_per_s=300.0,  # (20 + 40) tokens / (100 + 100) ms of prompt_eval
        load_s=2.0,  # the longest load: the cold start
        wall_s=1.6, samples_per_s=1.25)


def test_cached_carried_and_failed_responses_are_left_out():
    assert tally(OLLAMA + LEFT_OUT, wall_s=1.5) == Speed(
        n=2, failed=1, latency_s=Latency(p50=0.5, p95=1.5, max=1.5), tokens_per_s=40.0, tokens_per_s_from="server",
        prompt_tokens_per_s=300.0, load_s=2.0, wall_s=1.5,
        samples_per_s=2.0)  # the 2 answers and the failed request over 1.5 s


def test_without_server_durations_tokens_per_second_is_over_wall_time():
    openai_like = [response(0.5, 10, 20), response(1.5, 30, 40, durations={"total": 1400 * MS})]
    assert tally(openai_like, wall_s=None) == Speed(
        n=2, failed=0, latency_s=Latency(p50=0.5, p95=1.5, max=1.5),
        tokens_per_s=20.0,  # (10 + 30) tokens / (0.5 + 1.5) s
        tokens_per_s_from="wall", prompt_tokens_per_s=None, load_s=None, wall_s=None, samples_per_s=None)


def test_server_speed_is_over_the_responses_that_report_an_eval_duration():
    mixed = [OLLAMA[0], response(2.0, 500, 5)]
    got = tally(mixed)
    assert (got.tokens_per_s, got.tokens_per_s_from, got.prompt_tokens_per_s) == (40.0, "server", 200.0)


def test_no_tokens_and_no_answers_give_no_figures():
    assert tally([response(0.5)]).tokens_per_s is None
    assert tally([response(0.5)]).tokens_per_s_from is None
    assert tally(LEFT_OUT[:1]) == Speed(n=0, failed=1, latency_s=None, tokens_per_s=None, tokens_per_s_from=None,
                                        prompt_tokens_per_s=None, load_s=None, wall_s=0.0, samples_per_s=None)


def test_the_figures_do_not_depend_on_record_order():
    records = [response(0.1 * i + 0.013, i, 2 * i, durations={"eval": 7 * i * MS + 3, "prompt_eval": 3 * MS})
               for i in range(1, 40)]
    assert tally(records) == tally(records[::-1]) == tally(records[20:] + records[:20])


def test_the_session_clock_runs_from_start_to_the_last_answer(monkeypatch):
    clock = iter([100.0, 101.0, 102.5])
    monkeypatch.setattr(speed.time, "perf_counter", lambda: next(clock))
    counted = SpeedTally(wall_s=1.0)  # an earlier session asked for 1 s
    counted.start()
    for record in OLLAMA:
        counted.add(record)
    assert (counted.wall_s(), counted.speed().samples_per_s) == (3.5, 2 / 3.5)


def test_an_unknown_earlier_session_leaves_the_wall_time_unknown():
    counted = SpeedTally(wall_s=None)
    counted.start()
    counted.add(OLLAMA[0])
    assert counted.speed().wall_s is None and counted.speed().samples_per_s is None


SUMS = {"what is 2 + 3?": 5, "what is 4 + 5?": 9, "what is 8 + 9?": 17}
TOKENS = {"llama3.2": (8, 200 * MS), "gemma3": (8, 400 * MS)}
"""Completion tokens and eval time per answer: 40 and 20 tokens/s."""


def timed_answer(req: ChatRequest) -> Reply:
    """folderbench's sums, right, with Ollama's counts and durations fixed per model; the first sum loads the model."""
    completion, eval_ns = TOKENS[req.model]
    load = 1500 * MS if req.prompt == "what is 2 + 3?" else 2 * MS
    return Reply(content=json.dumps({"answer": SUMS[req.prompt]}), delay_s=0.02, eval_count=completion,
                 eval_duration=eval_ns, prompt_eval_count=30, prompt_eval_duration=50 * MS, load_duration=load,
                 total_duration=load + 50 * MS + eval_ns)


def measured(run_dir: Path) -> tuple[Latency, float, float]:
    """What the wall clock gave: the latency of the run's response records, its wall time and samples per second."""
    summary = json.loads((run_dir / "summary.json").read_text())["speed"]
    seconds = [r["seconds"] for r in read_jsonl(run_dir / "responses.jsonl")]
    return latency(seconds), summary["wall_s"], summary["samples_per_s"]


def test_a_run_records_its_speed_and_show_prints_it(tmp_path, capsys):
    with FakeOllama(models=["llama3.2"], responder=timed_answer) as server:
        result = bench_run(tmp_path, server.url, "task=folderbench", "runner.concurrency=1")
    assert result.returncode == EXIT["ok"], result.stderr
    run_dir = run_dir_of(result.stdout)
    lat, wall, rate = measured(run_dir)
    assert json.loads((run_dir / "summary.json").read_text())["speed"] == {
        "n": 3, "failed": 0, "latency_s": lat.model_dump(), "tokens_per_s": 40.0, "tokens_per_s_from": "server",
        "prompt_tokens_per_s": 600.0, "load_s": 1.5, "wall_s": wall, "samples_per_s": rate}
    info = json.loads((run_dir / "run.json").read_text())
    took = datetime.fromisoformat(info["ended_at"]) - datetime.fromisoformat(info["started_at"])
    asked = sum(r["seconds"] for r in read_jsonl(run_dir / "responses.jsonl"))  # one after another: concurrency 1
    assert lat.p50 >= 0.02 and asked <= wall <= took.total_seconds() and rate == 3 / wall

    assert audit_main(["show", str(run_dir)]) == EXIT["ok"]
    shown = capsys.readouterr().out
    assert [line.rstrip() for line in shown.split("\n\n")[-1].splitlines()] == [
        "speed (3 answers, 0 failed)",
        "┏━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓",
        "┃ figure          ┃         value ┃",
        "┡━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩",
        f"│ latency p50 (s) │ {lat.p50:13.3f} │",
        f"│ latency p95 (s) │ {lat.p95:13.3f} │",
        f"│ latency max (s) │ {lat.max:13.3f} │",
        "│ tokens/s        │ 40.0 (server) │",
        "│ prompt tokens/s │         600.0 │",
        "│ load (s)        │         1.500 │",
        f"│ wall (s)        │ {wall:13.3f} │",
        f"│ samples/s       │ {rate:13.1f} │",
        "└─────────────────┴───────────────┘"]
    assert audit_main(["show", str(run_dir), "--json"]) == EXIT["ok"]
    assert json.loads(capsys.readouterr().out)["speed"]["tokens_per_s"] == 40.0


def test_a_sweep_sets_the_jobs_speed_side_by_side(tmp_path):
    with FakeOllama(models=["llama3.2", "gemma3"], responder=timed_answer) as server:
        result = bench_run(tmp_path, server.url, "task=folderbench", "runner.model=llama3.2,gemma3", multirun=True)
    assert result.returncode == EXIT["ok"], result.stderr
    sweep_dir = sweep_dir_of(result.stdout)
    sweep = json.loads((sweep_dir / "sweep.json").read_text())
    assert {job: (s["tokens_per_s"], s["prompt_tokens_per_s"], s["load_s"], s["n"])
            for job, s in sweep["speed"].items()} == {"0_llama3.2": (40.0, 600.0, 1.5, 3),
                                                      "1_gemma3": (20.0, 600.0, 1.5, 3)}
    llama, gemma = (measured(sweep_dir / job) for job in ("0_llama3.2", "1_gemma3"))
    table = result.stdout.split("\nspeed")[-1].splitlines()
    assert table[1:] == [
        "┏━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓",
        "┃ figure          ┃      llama3.2 ┃        gemma3 ┃",
        "┡━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩",
        f"│ latency p50 (s) │ {llama[0].p50:13.3f} │ {gemma[0].p50:13.3f} │",
        f"│ latency p95 (s) │ {llama[0].p95:13.3f} │ {gemma[0].p95:13.3f} │",
        "│ tokens/s        │ 40.0 (server) │ 20.0 (server) │",
        "│ prompt tokens/s │         600.0 │         600.0 │",
        "│ load (s)        │         1.500 │         1.500 │",
        f"│ samples/s       │ {llama[2]:13.1f} │ {gemma[2]:13.1f} │",
        "└─────────────────┴───────────────┴───────────────┘",
        f"sweep directory: {sweep_dir}"]


def test_compare_sets_each_runs_speed_beside_the_baselines(tmp_path, capsys):
    with FakeOllama(models=["llama3.2", "gemma3"], responder=timed_answer) as server:
        result = bench_run(tmp_path, server.url, "task=folderbench", "runner.model=llama3.2,gemma3", multirun=True)
    sweep_dir = sweep_dir_of(result.stdout)
    assert audit_main(["compare", str(sweep_dir), "--json"]) == EXIT["ok"]
    [comparison] = json.loads(capsys.readouterr().out)["comparisons"]
    ratios = {line["figure"]: (line["baseline"], line["value"], line["ratio"]) for line in comparison["speed"]}
    assert {key: ratios[key] for key in ("tokens_per_s", "prompt_tokens_per_s", "load_s")} == {
        "tokens_per_s": (40.0, 20.0, 0.5), "prompt_tokens_per_s": (600.0, 600.0, 1.0), "load_s": (1.5, 1.5, 1.0)}
    assert audit_main(["compare", str(sweep_dir)]) == EXIT["ok"]
    out = capsys.readouterr().out
    assert re.search(r"^│ tokens/s        │     40\.0 │   20\.0 │ 0\.50x │$", out, re.M), out


def test_a_retry_leaves_the_answers_it_carried_over_out(tmp_path):
    def flaky(req: ChatRequest) -> Reply:
        if req.prompt == "what is 4 + 5?" and req.attempt == 1:
            return Reply(status=400, error="bad luck")
        return timed_answer(req)

    with FakeOllama(models=["llama3.2"], responder=flaky) as server:
        run_dir = run_dir_of(bench_run(tmp_path, server.url, "task=folderbench").stdout)
        first = json.loads((run_dir / "summary.json").read_text())["speed"]
        assert (first["n"], first["failed"]) == (2, 1)
        assert audit_main(["retry", str(run_dir)]) == EXIT["ok"]
    retried = json.loads((run_dir.with_name(run_dir.name + ".retry1") / "summary.json").read_text())["speed"]
    assert (retried["n"], retried["failed"], retried["tokens_per_s"], retried["load_s"]) == (1, 0, 40.0, 0.002)


def test_a_rescore_keeps_the_runs_speed(tmp_path):
    with FakeOllama(models=["llama3.2"], responder=timed_answer) as server:
        run_dir = run_dir_of(bench_run(tmp_path, server.url, "task=folderbench").stdout)
    assert audit_main(["rescore", str(run_dir)]) == EXIT["ok"]
    original, rescored = (json.loads((d / "summary.json").read_text())["speed"]
                          for d in (run_dir, run_dir / "rescores" / "001"))
    assert rescored == original


def test_a_resume_adds_its_time_to_the_interrupted_sessions(tmp_path):
    cut = {"what is 8 + 9?"}

    def cut_off(req: ChatRequest) -> Reply:
        if req.prompt not in cut:
            return timed_answer(req)
        threading.Thread(target=server.stop).start()  # the server goes away
        return Reply(drop=True)

    with FakeOllama(models=["llama3.2"], responder=cut_off) as server:
        result = bench_run(tmp_path, server.url, "task=folderbench", "runner.concurrency=1", "runner.retries=1",
                           "runner.backoff_s=0.01")
        assert result.returncode == EXIT["runner"], result.stderr
        run_dir = Path(re.search(r"benchrun-audit resume (\S+)", result.stderr)[1])
        before = json.loads((run_dir / "summary.json").read_text())["speed"]
        cut.clear()
        server.start()
        assert audit_main(["resume", str(run_dir)]) == EXIT["ok"]
    after = json.loads((run_dir / "summary.json").read_text())["speed"]
    assert (before["n"], after["n"], after["tokens_per_s"], after["load_s"]) == (2, 3, 40.0, 1.5)
    assert before["wall_s"] > 0.04 and after["wall_s"] > before["wall_s"]
    assert after["samples_per_s"] == 3 / after["wall_s"]


def test_the_report_charts_tokens_per_second_and_latency_and_lists_the_figures(tmp_path):
    from benchrun.audit.report import write_report

    with FakeOllama(models=["llama3.2", "gemma3"], responder=timed_answer) as server:
        result = bench_run(tmp_path, server.url, "task=folderbench", "runner.model=llama3.2,gemma3", multirun=True)
    sweep_dir = sweep_dir_of(result.stdout)
    html = write_report(sweep_dir).read_text()
    speed_part = html.split("<h2>Speed</h2>")[1].split("<h2>")[0]
    assert re.findall(r"<figcaption>([^<]+)</figcaption>", speed_part) == ["tokens/s", "latency p50 (s)"]
    assert '<title id="speed-tokens_per_s">tokens/s by run</title>' in speed_part
    assert "<title>llama3.2 · whole run: 40.000 (n=3)</title>" in speed_part
    assert "<title>gemma3 · whole run: 20.000 (n=3)</title>" in speed_part
    provenance = html.split('id="provenance"')[1]
    assert ("<tr><td>speed</td><td><pre>latency p50 (s) " in provenance
            and "tokens/s 40.0 (server)\nprompt tokens/s 600.0\nload (s) 1.500\n" in provenance
            and "from 3 answers, 0 failed requests</pre>" in provenance)
