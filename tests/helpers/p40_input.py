"""For the fortieth pass of what goes in."""

from __future__ import annotations

from benchrun.audit.inputs import Diff, Inputs, PromptDiff, input_lines

NONE = Diff(added={}, removed={}, changed={})
NO_PROMPTS = PromptDiff(changed=(), only_baseline=(), only_run=())


def compare_lines(config: Diff = NONE, files: Diff = NONE, prompts: PromptDiff = NO_PROMPTS) -> list[str]:
    """The lines `compare` prints of what differs between two runs' inputs, of which only these differ."""
    found = Inputs(same_manifest=False, config=config, files=files, scorers=NONE, formats=NONE, judges=NONE,
                   provenance=NONE, manifest=None, prompts=prompts)
    return input_lines(found)
