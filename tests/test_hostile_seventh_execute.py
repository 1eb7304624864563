"""Hostile input, seventh pass, the asking side (issue 19's fresh pass of the same kinds): the cases it found bad, each
with the rule it now obeys.

- a list of servers where one lists the model's digest as `sha256:<hex>` or in upper case: refused as serving a
  different model, though the digest is the same; now digests are compared as the one hash they name
"""

from __future__ import annotations

import json
from contextlib import ExitStack

from benchrun.core.errors import EXIT
from benchrun.testing.ollama_server import FakeOllama, fake_digest
from tests.helpers.answers import listbench_answer
from tests.helpers.archives import read_jsonl
from tests.helpers.commands import call_benchrun, run_dir_of

DIGEST = fake_digest("llama3.2")


def test_one_digest_written_two_ways_is_one_model_to_a_list_of_servers(tmp_path):
    spellings = [DIGEST, f"sha256:{DIGEST}", DIGEST.upper(), f"SHA256:{DIGEST.upper()}"]
    with ExitStack() as stack:
        servers = [stack.enter_context(FakeOllama(models=["llama3.2"], responder=listbench_answer,
                                                  digests={"llama3.2": spelt})) for spelt in spellings]
        urls = ",".join(server.url for server in servers)
        result = call_benchrun(f"runner.host=[{urls}]", "cache=false", f"outputs={tmp_path / 'outputs'}", cwd=tmp_path)
    assert result.returncode == EXIT["ok"], result.stderr
    run_dir = run_dir_of(result.stdout)
    assert len(read_jsonl(run_dir / "responses.jsonl")) == 18
    hosts = json.loads((run_dir / "run.json").read_text())["identity"]["hosts"]
    assert [host["digest"] for host in hosts] == spellings  # kept as each server wrote it
