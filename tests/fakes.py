"""Where tests/test_local_runner.py and tests/test_real_engines.py, being rewritten concurrently, still import these
helpers from; they live in tests/helpers. To be removed once those two import from there."""

from tests.helpers.answers import listbench_answer
from tests.helpers.archives import read_jsonl
from tests.helpers.commands import run_dir_of

__all__ = ["listbench_answer", "read_jsonl", "run_dir_of"]
