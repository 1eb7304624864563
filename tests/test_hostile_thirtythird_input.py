"""The thirty-third hostile pass of issue 19, the side of what goes in: the items the thirty-second pass left, then a
fresh pass. /work/notes/p33/result-input.md has the whole list, what held and what was left.

Fixed:
1. A sweep listing one value in two spellings the config reads as one (`repeats=1,01`, `shard=1/2,01/2`,
   `task.only=[t,u],[u,t]`, `runner.host=h:9,http://H:09/`) refused: each value is read by RunConfig's own
   validation (a server as its requests reach it, task.only as a set) before they are compared
   (compose.sweptonce, out of callbacks).
"""

from __future__ import annotations

import pytest

from tests.helpers.p30_input import ended, refusal
from tests.helpers.p33_input import dry_run_of


@pytest.mark.parametrize(("swept", "first", "second", "read"), [
    ("repeats=1,01", "1", "01", "1"),
    ("shard=1/2,01/2", "1/2", "01/2", '"1/2"'),
    ("task.only=[t,u],[u,t]", "[t,u]", "[u,t]", '["t", "u"]'),
    ("runner.host=http://h:9,http://H:09/", "http://h:9", "http://H:09/", '"http://h:9"')])
def test_a_sweep_of_one_value_in_two_spellings_the_config_reads_as_one_is_refused(tmp_path, swept, first, second,
                                                                                 read):
    """Before: taken, two jobs of one config (one manifest, one label but for the spelling)."""
    key = swept.partition("=")[0]
    assert ended(dry_run_of(tmp_path, "-m", swept)) == refusal(
        f"in 'config': {key}: the sweep lists {first!r} and {second!r}, which the config reads as one value ({read}), "
        "so two of its jobs would run one config; list each value once")


def test_a_sweep_of_values_the_config_reads_apart_is_taken(tmp_path):
    done = dry_run_of(tmp_path, "-m", "task.only=[t],[t,u]", "runner.host=http://127.0.0.1:9")
    assert (done.returncode, done.stderr, done.stdout.count("manifest id:")) == (0, "", 2)
