"""Hostile input, fortysecond pass, the archive and audit side (pass 41's rules checked to hold together, then a fresh
pass): the cases it found bad, each with the rule it now obeys.

Pass 41's rules together:

1. `compare` of a shard and a retry of the merge made of it (or of a run and a retry of its retry), either first: the
   answers the retry carried are the shard's records, and compare paired them as two askings (delta 0, p 1) without a
   word, where it names a retry or a merge of the run itself. A run made of the other's answers through the runs its
   run.json names, as their folders still hold them, is said to be, the chain named (`audit.kinship`)

A fresh pass:

2. a run id prefix that begins the ids of many runs (an archive of thousands, `show 5`): refused as ambiguous naming
   the first five, and not saying there were more, as if five were all. The rest are counted, and what to do said
   (`archive.lookup.resolve_run`)
3. `resume` of a run whose writer died on another machine, refused (its config unreadable, its records not the run's,
   its sources changed): its lock's note, the one record of that writer (pid 4242 on host gpu1 since ...), was
   replaced by the refusing resume's own, which it cannot put back (it made the run's files anew to fence that
   writer), and every later `verify` and `list` named the resume as the writer that stopped before the run ended. The
   note of a holder that took a run over from another machine names the writer it took it from, and what says who
   holds or held the lock says that too (`archive.locknote`)
4. a run id given in other case than it is written (`show ABCDEF` for run abcdef123456, copied from a tool that writes
   hex in capitals): `no run directory or run id 'ABCDEF' under outputs`, as if there were no such run. Ids are told
   apart by case (another tool's `abc` and `ABC` are two runs), so it is still refused, naming the run it begins but
   for case (`archive.lookup.resolve_run`)
5. an archive on a NetApp's share, mounted over SMB: its snapshots (`~snapshot/hourly.0/`, where NFS shows the hidden
   `.snapshot`) were walked, their runs listed as live ones, and a run named by its id refused as `the id of 3 run
   directories (copies of one run?)`; so was a Mac's shared folder's recycle bin (`Network Trash Folder`). Passed over
   as pass 41 made a Synology's and a QNAP's are (`archive.lookup.OS_KEPT`)
"""
from __future__ import annotations

import json
import os
import re
import shutil

from tests.helpers.archives import DEAD_WRITER, synthetic_run
from tests.helpers.auditcli import audit
from tests.helpers.p42_archive import retry_chain, vs_lines

# -- pass 41's rules together ------------------------------------------------------------------------------------------

CARRIED = "the answers carried are {} own records, not asked again, so they agree by being one"


def test_compare_says_a_run_is_made_of_the_others_answers_through_another_run(tmp_path):
    first, _, last = retry_chain(tmp_path, ["5" * 12, "6" * 12, "7" * 12])
    assert [vs_lines(tmp_path, *pair) for pair in ((first.name, last.name), (last.name, first.name))] == [
        ["vs m 777777777777 (r.retry1.retry1): a retry (1 answer carried) of a retry (1 answer carried) of the "
         "baseline, run 555555555555: " + CARRIED.format("the baseline's")],
        ["vs m 555555555555 (r): the baseline is a retry (1 answer carried) of a retry (1 answer carried) of it: "
         + CARRIED.format("its")]]


# -- a fresh pass ------------------------------------------------------------------------------------------------------


def test_a_prefix_of_many_runs_ids_counts_those_not_shown(tmp_path):
    for n in range(7):
        synthetic_run(tmp_path / "runs" / f"r{n}", [1], run_id=f"ab{n}")
    done = audit(tmp_path, "show", "ab", "--root", "runs")
    shown = ", ".join(f"ab{n} (runs/r{n})" for n in range(5))
    assert (done.returncode, done.stderr) == (4, f"benchrun: error: run id prefix 'ab' is ambiguous: {shown}, and 2 "
                                                 "more (give more of the id)\n")


def test_a_refused_resume_of_a_run_written_on_another_machine_keeps_its_writer_named(tmp_path):
    synthetic_run(tmp_path / "r", [1, 0], finish=False)
    assert audit(tmp_path, "resume", "r", "--host", "http://127.0.0.1:9").stderr == (
        "benchrun: error: in 'config': task: 'name' is required\n")
    note = json.loads((tmp_path / "r" / "run.lock").read_text())
    writer = {key: DEAD_WRITER[key] for key in ("pid", "host", "since")}
    assert (note["pid"], note["took_over"]) == (os.getpid(), writer)
    said = [line for line in audit(tmp_path, "verify", "r").stdout.splitlines() if line.startswith("FAIL")]
    assert [re.sub(r"since \S+, which", "since T, which", line) for line in said] == [
        f"FAIL  run.json: says 'running', but no live process holds run.lock: its writer (pid {os.getpid()} on host "
        f"{note['host']} since T, which took the run over from pid 4242 on host gpu1 since 2026-12-01T08:00:00+00:00) "
        "stopped before the run ended (killed, or its disk failed); finish it with: benchrun-audit resume r (record "
        "lines checked against records.sha256 only)"]


def test_a_run_id_in_other_case_is_refused_naming_the_run(tmp_path):
    for run_id in ("abcdef123456", "abcdef654321"):
        synthetic_run(tmp_path / "outputs" / run_id, [1], run_id=run_id)
    done = audit(tmp_path, "show", "ABCDEF")
    assert (done.returncode, done.stderr) == (4, (
        "benchrun: error: no run directory or run id 'ABCDEF' under outputs; run abcdef123456 (outputs/abcdef123456) "
        "(and 1 other run) begins so but for case, and run ids are told apart by case: give it as the run's id is "
        "written\n"))


def test_a_netapps_snapshots_and_a_macs_shared_recycle_bin_are_passed_over(tmp_path):
    run_dir = synthetic_run(tmp_path / "runs" / "r", [1, 0])
    for kept in ("~snapshot/hourly.0/r", "~SNAPSHOT/nightly.1/r", "Network Trash Folder/r"):
        shutil.copytree(run_dir, tmp_path / "runs" / kept)
    listed = json.loads(audit(tmp_path, "list", str(tmp_path / "runs"), "--json").stdout)
    assert [entry["path"] for entry in listed] == [str(run_dir)]
    done = audit(tmp_path, "show", "5555", "--root", str(tmp_path / "runs"), "--json")
    assert (done.returncode, json.loads(done.stdout)["path"]) == (0, str(run_dir))
