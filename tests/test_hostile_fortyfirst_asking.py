"""The fortyfirst hostile pass of issue 19, the asking side.

1. what a scorer's call set in an installed library's own tables (`pandas.set_option("display.precision", 2)`, a
   tag's constructor by `yaml.add_constructor`, a word read as null by `yaml.add_implicit_resolver`) reached every
   later call: each call starts with pandas' options and PyYAML's tables as the first call found them
   (`execute.libraryheld`)
2. the flags of the file a standard descriptor is, as a scorer's call set them (`os.set_blocking(2, False)`), reached
   every later call (a write past what the log's pipe held failed, BlockingIOError): put back with the interpreter's
   other settings (`compiler.runstate.SETTINGS`, `core.stdfds.statuses`)
"""

from __future__ import annotations

from tests.helpers.p38_asking import found_by
from tests.helpers.p41_asking import LIBRARY_TABLES, NONBLOCKING


def test_what_a_call_set_in_pandas_options_or_yaml_s_tables_reaches_no_later_call(tmp_path):
    assert found_by(tmp_path, LIBRARY_TABLES) == [({"s.precision": 6, "s.tag": 0, "s.word": 0}, None)] * 3


def test_a_standard_descriptor_made_non_blocking_reaches_no_later_call(tmp_path):
    assert found_by(tmp_path, NONBLOCKING) == [({"s.blocking": 1}, None)] * 3
