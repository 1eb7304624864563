"""The response cache (issue 12): the SQLite store, its key, the network-file-system check, runs that take their
answers from it (against the loopback Ollama, counting the chat requests it gets), and `benchrun-audit cache`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrun.archive.reader import load_run
from benchrun.core.errors import EXIT
from benchrun.execute.cache import Repeat, RunCache, Store, cache_key
from benchrun.execute.cacheplace import cache_dir, default_dir, mount_type
from benchrun.execute.runners.openai import PROBE_PROMPT
from benchrun.testing.http_fake import json_response
from benchrun.testing.ollama_server import FakeOllama, Reply, _tag, fake_digest
from benchrun.testing.openai_server import FakeOpenAI
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import read_jsonl
from tests.helpers.cacheentry import entry
from tests.helpers.commands import bench_run, call_benchrun, run_benchrun, run_dir_of, sweep_dir_of
from tests.helpers.sqlitefile import sqlite_db

KEY_PARTS = {"runner": "ollama", "model": {"digest": "sha256:aa"}, "settings": {"model": "m", "options": {"seed": 0}},
             "prompt": "2+2?", "schema": {"type": "object"}, "repeat": Repeat(0, 0)}
CHANGED = {"runner": "local", "model": {"digest": "sha256:ab"}, "settings": {"model": "m", "options": {"seed": 1}},
           "prompt": "2+3?", "schema": {"type": "array"}, "repeat": Repeat(1, 0)}


# --- the store ----------------------------------------------------------------------------------------------------


def test_put_get_round_trip_and_wal(tmp_path):
    with Store(tmp_path / "c") as store:
        assert store.get("k") is None
        store.put("k", entry())
        store.put("k", entry(text="second"))  # a key keeps its first answer
        assert store.get("k") == entry()
        assert store.journal_mode == "wal"
    store.close()
    with sqlite_db(tmp_path / "c" / "responses.sqlite3") as db:
        assert db.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone() == ("2",)
    with Store(tmp_path / "c") as again:
        assert again.get("k").answer.text == '{"answer": 4}'  # it persists


def test_the_key_is_stable_and_changes_with_each_part():
    assert cache_key(**KEY_PARTS) == cache_key(**dict(KEY_PARTS))
    keys = {part: cache_key(**{**KEY_PARTS, part: value}) for part, value in CHANGED.items()}
    keys["seed"] = cache_key(**{**KEY_PARTS, "repeat": Repeat(0, 1)})
    assert len({cache_key(**KEY_PARTS), *keys.values()}) == len(CHANGED) + 2
    assert len(cache_key(**KEY_PARTS)) == 64


@pytest.mark.parametrize("prompt", ["2+2?", 'quote " and \\ and \u00e9 and \U0001f600', "", "\x00benchrun-cache-key-prompt-0b6f2c\x00"])
def test_a_runs_keys_are_cache_key_with_the_fixed_parts_rendered_once(prompt):
    run_cache = RunCache(None, "ollama", KEY_PARTS["model"], KEY_PARTS["settings"], "m", "run1", 2**20,
                         "runner.max_response_bytes")
    for schema, repeat in ((KEY_PARTS["schema"], Repeat(0, 0)), (CHANGED["schema"], Repeat(3, 7)),
                           ({"enum": ["\x00benchrun-cache-key-prompt-0b6f2c\x00"]}, Repeat(0, None))):
        for _ in range(2):  # rendered, then taken from what was rendered
            assert run_cache.key([{"role": "user", "content": prompt}], schema, repeat) == cache_key(
                **{**KEY_PARTS, "prompt": prompt, "schema": schema, "repeat": repeat})


CHAT = [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": '{"answer": 4}'}, {"role": "user", "content": "3+3?"}]


def test_a_chat_is_keyed_by_all_its_messages_and_a_lone_prompt_as_before():
    """A lone user message keeps the key a prompt had before chats (caches stay warm); a chat's every message counts."""
    run_cache = RunCache(None, "ollama", KEY_PARTS["model"], KEY_PARTS["settings"], "m", "run1", 2**20,
                         "runner.max_response_bytes")
    schema, repeat = KEY_PARTS["schema"], Repeat(0, 0)
    lone = run_cache.key([{"role": "user", "content": "3+3?"}], schema, repeat)
    assert lone == cache_key(**{**KEY_PARTS, "prompt": "3+3?", "repeat": repeat})
    chat = run_cache.key(CHAT, schema, repeat)
    assert chat == cache_key(**{**KEY_PARTS, "prompt": CHAT, "repeat": repeat}) != lone
    other_system = [{**CHAT[0], "content": "Answer briefly."}, *CHAT[1:]]
    assert run_cache.key(other_system, schema, repeat) not in (chat, lone)


def test_many_keys_in_one_lookup_and_a_damaged_one_among_them(tmp_path):
    with Store(tmp_path) as store:
        for i in range(300):
            store.put(f"k{i}", entry(text=f"answer {i}"))
        store._db.execute("UPDATE answers SET answer = '{not json' WHERE key = 'k7'")
        found = store.get_many([f"k{i}" for i in range(0, 256)] + ["missing"])
        assert sorted(found) == sorted(f"k{i}" for i in range(256) if i != 7)
        assert found["k255"] == entry(text="answer 255")
        assert store._db.execute("SELECT count(*) FROM answers WHERE key = 'k7'").fetchone() == (0,)


def test_stats_and_clear_by_digest(tmp_path):
    with Store(tmp_path) as store:
        for i in range(3):
            store.put(f"a{i}", entry(created_at=f"2026-12-01T10:00:0{i}+00:00"))
        store.put("b", entry(model="gemma3", digest="cd" * 32, created_at="2026-12-02T00:00:00+00:00"))
        stats = store.stats()
        assert [(m.model, m.digest, m.entries, m.newest) for m in stats.models] == [
            ("gemma3", "cd" * 32, 1, "2026-12-02T00:00:00+00:00"),
            ("llama3.2", "sha256:" + "ab" * 32, 3, "2026-12-01T10:00:02+00:00")]
        assert stats.entries == 4 and stats.path == tmp_path / "responses.sqlite3" and stats.size > 0
        assert [m.model for m in store.stats("sha256:cd").models] == ["gemma3"]
        assert store.clear("abab") == 3  # sha256: or not, on either side
        assert [m.model for m in store.stats().models] == ["gemma3"]
        assert store.clear() == 1 and store.stats().entries == 0


MOUNTINFO = """\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
40 27 0:50 / /home rw,relatime - nfs4 fs1:/home rw,vers=4.2
41 40 0:51 / /home/me/scratch rw - xfs /dev/sdb1 rw
42 27 0:52 / /lus rw - lustre 10.0.0.1@tcp:/lus rw
43 27 0:53 / /my\\040disk rw - ext4 /dev/sdc rw
"""


@pytest.mark.parametrize("path, expected", [
    ("/", "ext4"), ("/tmp/x", "ext4"), ("/home/me/.cache/benchrun", "nfs4"), ("/home/me/scratch/c", "xfs"),
    ("/homework", "ext4"), ("/lus/project", "lustre"), ("/my disk/c", "ext4"),
])
def test_mount_type_is_the_longest_mount_point_above(path, expected):
    assert mount_type(Path(path), MOUNTINFO) == expected


def test_proc_mounts_format_too():
    assert mount_type(Path("/scratch/a"), "/dev/vda / ext4 rw 0 0\nsrv:/x /scratch nfs rw 0 0\n") == "nfs"


def test_a_network_cache_dir_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr("benchrun.execute.cacheplace._read", lambda name: "1 0 0:1 / / rw - nfs4 srv:/ rw\n")
    with pytest.raises(Exception) as err:
        Store(tmp_path / "c")
    assert str(err.value) == (f"cache_dir: {tmp_path / 'c'} is on a network file system (nfs4), where SQLite's "
                              "locking is not safe; set cache_dir= to a directory on local disk, or cache=false")
    assert not (tmp_path / "c").exists()


def test_the_default_directory_honours_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_dir() == tmp_path / "xdg" / "benchrun" == cache_dir(None)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_dir() == tmp_path / "home" / ".cache" / "benchrun"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_dir() == tmp_path / "home" / ".cache" / "benchrun"
    assert cache_dir("c", tmp_path) == tmp_path / "c"


# --- runs ---------------------------------------------------------------------------------------------------------


def chats(server: FakeOllama) -> int:
    return sum(r["path"] == "/api/chat" for r in server.requests)


def run(tmp_path: Path, server: FakeOllama, *args: str) -> Path:
    result = bench_run(tmp_path, server.url, f"cache_dir={tmp_path / 'cache'}", *args)
    assert result.returncode == EXIT["ok"], result.stderr
    return run_dir_of(result.stdout)


def scores(run_dir: Path) -> list[tuple]:
    return [(s["id"], s["scorer"], s["metrics"]) for s in read_jsonl(run_dir / "scores.jsonl")]


def means(run_dir: Path) -> list[tuple]:
    return [(m["task"], m["metric"], m["n"], m["mean"]) for m in load_run(run_dir).summary.model_dump()["metrics"]]


class OtherDigest(FakeOllama):
    """The same models, listed with other digests (as after `ollama pull` of a new version)."""

    def routes(self):
        return {**super().routes(), ("GET", "/api/tags"): lambda _: json_response(
            {"models": [{**_tag(m), "digest": fake_digest(m + "-v2")} for m in self.models]})}


def test_a_second_identical_run_asks_nothing(tmp_path):
    with FakeOllama(responder=listbench_answer) as server:
        first = run(tmp_path, server)
        assert chats(server) == 18
        second = run(tmp_path, server)
        assert chats(server) == 18
    first_id = load_run(first).info.run_id
    responses = read_jsonl(second / "responses.jsonl")
    assert {r["cached_from"] for r in responses} == {first_id}
    assert {r["attempts"] for r in responses} == {0}
    answered = read_jsonl(first / "responses.jsonl")
    assert [(r["id"], r["text"], r["prompt_tokens"], r["durations_ns"]) for r in responses] == [
        (r["id"], r["text"], r["prompt_tokens"], r["durations_ns"]) for r in answered]
    assert scores(second) == scores(first) and means(second) == means(first)
    counts = json.loads((second / "run.json").read_text())["counts"]
    assert counts == {"samples": 18, "responses": 18, "request_errors": 0, "scorer_errors": 0, "format_invalid": 0,
                      "cached": 18}
    assert json.loads((first / "run.json").read_text())["counts"]["cached"] == 0
    verified = call_benchrun("verify", str(second), module="benchrun.audit", cwd=tmp_path)
    assert verified.returncode == EXIT["ok"] and verified.stdout.splitlines()[-1] == "intact"


@pytest.mark.parametrize("change", [["+runner.options.num_predict=64"], ["cache=false"],
                                    ["runner.options.seed=1"], ["task.only=[product]"]])
def test_what_changes_the_answer_asks_again(tmp_path, change):
    with FakeOllama(responder=listbench_answer) as server:
        run(tmp_path, server, "task.only=[product,symbol]")
        again = run(tmp_path, server, "task.only=[product,symbol]", *change)
        asked = chats(server) - 6
    cached = sum(r["cached_from"] is not None for r in read_jsonl(again / "responses.jsonl"))
    # task.only changes what is asked, not how: its three samples come from the cache
    assert (asked, cached) == ((0, 3) if change == ["task.only=[product]"] else (6, 0))


def test_cache_false_writes_nothing_either(tmp_path):
    with FakeOllama(responder=listbench_answer) as server:
        run(tmp_path, server, "cache=false")
        assert not (tmp_path / "cache").exists()
        run(tmp_path, server)
        assert chats(server) == 36


def test_another_digest_asks_again(tmp_path):
    with FakeOllama(responder=listbench_answer) as server:
        run(tmp_path, server)
    with OtherDigest(responder=listbench_answer) as server:
        again = run(tmp_path, server)
        assert chats(server) == 18
    assert {r["cached_from"] for r in read_jsonl(again / "responses.jsonl")} == {None}


def test_failed_requests_are_not_cached(tmp_path):
    def some_fail(req):
        return Reply(status=400, error="no") if req.prompt.startswith("what is the name") else listbench_answer(req)

    with FakeOllama(responder=some_fail) as server:
        first = run(tmp_path, server)
        assert chats(server) == 18
    with FakeOllama(responder=listbench_answer) as server:
        second = run(tmp_path, server)
        assert sorted(r["messages"][0]["content"][-1] for r in server.requests if r["path"] == "/api/chat") == [
            "#", "$", "@"]
    assert load_run(first).info.counts.request_errors == 3
    assert [r["id"] for r in read_jsonl(second / "responses.jsonl") if r["cached_from"] is None] == [
        "symbol:symb=@,exmeta=internet", "symbol:symb=$,exmeta=world", "symbol:symb=#,exmeta=internet"]


def test_two_parallel_sweep_jobs_share_one_cache(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    args = ["-m", f"outputs={tmp_path / 'outputs'}", f"cache_dir={tmp_path / 'cache'}", "hydra/launcher=joblib",
            "runner.options.temperature=0,0.5"]
    with FakeOllama(responder=listbench_answer) as server:
        first = run_benchrun(*args, f"runner.host={server.url}", cwd=tmp_path, timeout=180)
        assert first.returncode == EXIT["ok"], first.stderr
        assert chats(server) == 36
        second = run_benchrun(*args, f"runner.host={server.url}", cwd=tmp_path, timeout=180)
        assert second.returncode == EXIT["ok"], second.stderr
        assert chats(server) == 36
    for job in ("0_temperature-0", "1_temperature-0.5"):
        assert load_run(sweep_dir_of(second.stdout) / job).info.counts.cached == 18
    with Store(tmp_path / "cache") as store:
        assert store.stats().entries == 36


def test_a_cache_dir_on_a_network_file_system_stops_the_run(tmp_path, monkeypatch):
    monkeypatch.setattr("benchrun.execute.cacheplace._read", lambda name: "1 0 0:1 / / rw - lustre srv:/ rw\n")
    with FakeOllama(responder=listbench_answer) as server:
        result = bench_run(tmp_path, server.url, f"cache_dir={tmp_path / 'cache'}")
        assert chats(server) == 0
    assert result.returncode == EXIT["usage"]
    assert result.stderr == (f"benchrun: error: cache_dir: {tmp_path / 'cache'} is on a network file system "
                             "(lustre), where SQLite's locking is not safe; set cache_dir= to a directory on local "
                             "disk, or cache=false\n")
    no_cache = bench_run(tmp_path, server.url, "cache=false")
    assert no_cache.returncode == EXIT["runner"]  # no cache opened: on to the preflight


def test_list_and_show_say_how_many_came_from_the_cache(tmp_path):
    with FakeOllama(responder=listbench_answer) as server:
        run(tmp_path, server)
        second = run(tmp_path, server)
    listed = call_benchrun("list", str(tmp_path / "outputs"), "--json", module="benchrun.audit", cwd=tmp_path)
    assert [run["cached"] for run in json.loads(listed.stdout)] == [18, 0]
    table = call_benchrun("list", str(tmp_path / "outputs"), module="benchrun.audit", cwd=tmp_path).stdout
    assert table.count("18 cached") == 1
    shown = call_benchrun("show", str(second), module="benchrun.audit", cwd=tmp_path).stdout
    assert ("18/18 samples, 0 request errors, 0 scorer errors, 0 invalid formats, 18 from the cache"
            in " ".join(shown.split()))


def audit_cache(tmp_path: Path, *args: str):
    return call_benchrun("cache", "--cache-dir", str(tmp_path / "cache"), *args, module="benchrun.audit",
                         cwd=tmp_path)


def test_audit_cache_shows_and_clears(tmp_path):
    with FakeOllama(models=["llama3.2", "gemma3"], responder=listbench_answer) as server:
        run(tmp_path, server, "task.only=[product]")
        run(tmp_path, server, "task.only=[product,symbol]", "runner.model=gemma3")
    db = tmp_path / "cache" / "responses.sqlite3"
    with Store(tmp_path / "cache") as store:
        stats = store.stats()
    newest = {m.model: m.newest[:19].replace("T", " ") for m in stats.models}
    shown = audit_cache(tmp_path)
    size = db.stat().st_size
    assert shown.returncode == EXIT["ok"], shown.stderr
    assert shown.stdout == (
        f"response cache: {db}, 9 entries, {size / 1000:.1f} kB\n"
        "┏━━━━━━━━━━┳━━━━━━━━━━━━━━┳━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━┓\n"
        "┃ model    ┃ digest       ┃ entries ┃ newest (UTC)        ┃\n"
        "┡━━━━━━━━━━╇━━━━━━━━━━━━━━╇━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━┩\n"
        f"│ gemma3   │ {fake_digest('gemma3')[:12]} │       6 │ {newest['gemma3']} │\n"
        f"│ llama3.2 │ {fake_digest('llama3.2')[:12]} │       3 │ {newest['llama3.2']} │\n"
        "└──────────┴──────────────┴─────────┴─────────────────────┘\n")
    data = json.loads(audit_cache(tmp_path, "--json").stdout)
    assert [(m["model"], m["digest"], m["entries"]) for m in data["models"]] == [
        ("gemma3", fake_digest("gemma3"), 6), ("llama3.2", fake_digest("llama3.2"), 3)]
    assert (data["path"], data["entries"]) == (str(db), 9)

    cleared = audit_cache(tmp_path, "--clear", "--digest", fake_digest("gemma3")[:8])
    assert cleared.stdout.splitlines() == [
        f"cleared 6 entries of digest {fake_digest('gemma3')[:8]}",
        f"response cache: {db}, 3 entries, {db.stat().st_size / 1000:.1f} kB",
        "┏━━━━━━━━━━┳━━━━━━━━━━━━━━┳━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━┓",
        "┃ model    ┃ digest       ┃ entries ┃ newest (UTC)        ┃",
        "┡━━━━━━━━━━╇━━━━━━━━━━━━━━╇━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━┩",
        f"│ llama3.2 │ {fake_digest('llama3.2')[:12]} │       3 │ {newest['llama3.2']} │",
        "└──────────┴──────────────┴─────────┴─────────────────────┘"]
    assert audit_cache(tmp_path, "--clear").stdout.splitlines() == [
        "cleared 3 entries", f"response cache: {db}, 0 entries, {db.stat().st_size / 1000:.1f} kB"]


def test_audit_cache_without_a_cache_makes_none(tmp_path):
    shown = audit_cache(tmp_path)
    assert shown.stdout == f"response cache: {tmp_path / 'cache' / 'responses.sqlite3'}, 0 entries, 0 B\n"
    assert not (tmp_path / "cache").exists()
    bad = audit_cache(tmp_path, "--digest", "xyz")
    assert (bad.returncode, bad.stderr) == (
        EXIT["usage"], "benchrun: error: --digest: 'xyz' is not the start of a digest (hex digits, sha256: allowed)\n")


def openai_chats(server) -> int:
    """Chat requests, less the structured-output probe's."""
    return sum(r["path"].endswith("/chat/completions") and r["messages"][0]["content"] != PROBE_PROMPT
               for r in server.requests)


def test_openai_caches_only_when_asked_and_keys_on_the_fingerprint(tmp_path):
    def openai(server, *args: str) -> Path:
        result = call_benchrun("runner=openai", f"runner.base_url={server.url}", f"outputs={tmp_path / 'outputs'}",
                               f"cache_dir={tmp_path / 'cache'}", "task.only=[product]", *args, cwd=tmp_path)
        assert result.returncode == EXIT["ok"], result.stderr
        return run_dir_of(result.stdout)

    with FakeOpenAI(models=["llama3.2"], responder=listbench_answer, system_fingerprint="fp_1") as server:
        openai(server)
        assert not (tmp_path / "cache").exists()  # off by default: nothing pins the model
        first = openai(server, "cache=true")
        again = openai(server, "cache=true")
        assert openai_chats(server) == 6
    with FakeOpenAI(models=["llama3.2"], responder=listbench_answer, system_fingerprint="fp_2") as server:
        openai(server, "cache=true")
        assert openai_chats(server) == 3
    assert {r["cached_from"] for r in read_jsonl(again / "responses.jsonl")} == {load_run(first).info.run_id}
    assert load_run(first).info.identity["system_fingerprint"] == "fp_1"


def test_a_damaged_entry_is_asked_again_and_replaced(tmp_path):
    with FakeOllama(responder=listbench_answer) as server:
        run(tmp_path, server)
        with sqlite_db(tmp_path / "cache" / "responses.sqlite3") as db:
            (key_1, answer), (key_2, _) = db.execute("SELECT key, answer FROM answers ORDER BY key LIMIT 2")
            db.execute("UPDATE answers SET answer = ? WHERE key = ?", (json.dumps({**json.loads(answer),
                                                                                    "text": None}), key_1))
            db.execute("UPDATE answers SET answer = '{not json' WHERE key = ?", (key_2,))
        db.close()
        second = run(tmp_path, server)
        assert chats(server) == 18 + 2
        run(tmp_path, server)
        assert chats(server) == 18 + 2  # the fresh answers took the damaged entries' place
    info = json.loads((second / "run.json").read_text())
    assert (info["status"], info["counts"]["cached"], info["counts"]["request_errors"]) == ("completed", 16, 0)
