"""The thirty-second hostile pass of issue 19, the asking side.

1. Ollama's /api/ps (the context length the model is loaded with, asked beside the run after its first answer) went
   through the preflight's calls: answered busy with a Retry-After mid-run, it was asked again (runner.retries times)
   and said on the console `... the preflight is asked again then (try 2 of 3)`, of a preflight long done. A
   best-effort read whose wait the run's end would not wait out (`runners.ollama.LOADED_WAIT_S`), it is asked once
   and says nothing (`runners.ollama.OllamaRunner._loaded_with`)
2. a list of Ollama servers (`runner.host=[a,b]`) that loaded the model with different context lengths (each kept in
   its entry of run.json's `identity.hosts`) said nothing of it: a run's answers came from differently-configured
   servers. The end of the run warns of it (`execute.hosts.HostPool.loaded`), and `show`'s servers row says each
   server's context (`audit.heading.parts`)
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from benchrun.execute.runners import ollama
from tests.helpers.p31_asking import busy_listing
from tests.helpers.p32_asking import pooled_warned


@pytest.mark.parametrize("after", ["0", "1"])
def test_ollamas_loaded_models_answered_busy_mid_run_are_asked_once_and_said_nothing_of(tmp_path, monkeypatch, after):
    monkeypatch.setattr(ollama, "LOADED_WAIT_S", 0.1)
    _, done, times = busy_listing(tmp_path, "ollama", after, times=9, path="/api/ps")
    assert (done.returncode, done.stderr, times) == (EXIT["ok"], "", 1)


def test_servers_of_a_list_that_loaded_the_model_with_different_context_lengths_are_warned_of(tmp_path):
    (first, second, third), said, shown = pooled_warned(tmp_path, 4096, 8192, None)
    assert said == (f"benchrun: warning: the servers of runner.host loaded the model with different context lengths: "
                    f"{first} 4096, {second} 8192, {third} -; the same model may answer differently on each "
                    "(recorded)\n")
    assert (f" servers {first} 45b1c9806e74 0.12.6 context 4096 {second} 45b1c9806e74 0.12.6 context 8192 {third} "
            "45b1c9806e74 0.12.6 metrics ") in shown

