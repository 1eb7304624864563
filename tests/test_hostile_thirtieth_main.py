"""The thirtieth hostile pass, the lead's part.

- A list of servers (or models) holding an item that is no text (`runner.host=[URL,null]`, `judge.host=[URL,5]`,
  `runner.model=[llama3.2,null]`) was said of the whole key, `["http://...", null] is not valid here (...)`, naming
  neither the item nor what belongs there, and the key's description quoted began `The Ollama server (conf/ takes
  it from $OLLAMA_HOST ...)`, a path cut short. The item at fault is named (`compose.config._list_item`), and the
  descriptions name the preset (conf/runner/ollama.yaml, conf/runner/openai.yaml).
"""

from __future__ import annotations

import pytest

from benchrun.core.errors import EXIT
from tests.helpers.commands import call_benchrun

LIST_ITEMS = [
    (["runner.host=[http://127.0.0.1:9,null]"], "runner.host[1]: Input should be a valid string, not null"),
    (["runner.model=[llama3.2,null]"], "runner.model[1]: Input should be a valid string, not null"),
    (["runner.model=[a,[b]]"], "runner.model[1]: Input should be a valid string, not [\"b\"]"),
    (["runner=openai", "runner.model=m", "runner.base_url=[http://127.0.0.1:9/v1,7]"],
     "runner.base_url[1]: Input should be a valid string, not 7"),
    (["judge.model=m", "judge.host=[5,http://127.0.0.1:9]"], "judge.host[0]: Input should be a valid string, not 5"),
]


@pytest.mark.parametrize(("args", "message"), LIST_ITEMS, ids=[" ".join(row[0]) for row in LIST_ITEMS])
def test_a_list_of_servers_or_models_names_the_item_that_is_no_text(tmp_path, args, message):
    result = call_benchrun("dry_run=true", *args, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: in 'config': {message}\n")


def test_a_value_no_branch_takes_quotes_the_keys_description_with_its_preset(tmp_path):
    result = call_benchrun("dry_run=true", "runner.host={a:1}", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (EXIT["usage"], (
        "benchrun: error: in 'config': runner.host: {\"a\": 1} is not valid here (The Ollama server "
        "(conf/runner/ollama.yaml takes it from $OLLAMA_HOST when set); empty means the default, as for Ollama. A "
        "list of servers spreads the run over them: each must serve the model by the same digest, `concurrency` "
        "requests go to each, every request to the one with the fewest outstanding, and a server lost mid-run leaves "
        "its work to the rest.)\n"))
