"""For the fortieth pass of what goes in."""

from __future__ import annotations

from benchrun.audit.inputs import Diff, Inputs, PromptDiff, diff, input_lines

NONE = Diff(added={}, removed={}, changed={})


def config_lines(baseline: dict, run: dict) -> list[str]:
    """The lines `compare` prints of two runs whose manifests differ only in their config's keys as given."""
    found = Inputs(same_manifest=False, config=diff(baseline, run), files=NONE, scorers=NONE, formats=NONE,
                   judges=NONE, provenance=NONE, manifest=None,
                   prompts=PromptDiff(changed=(), only_baseline=(), only_run=()))
    return input_lines(found)
