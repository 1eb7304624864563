"""What differs between two runs' inputs: their manifests (config, benchmark files, prompts and references, scorers,
formats, judges) and provenance, and the lines `compare` (and `merge`'s refusal) print of it."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any, Iterable

from benchrun.archive.reader import Run
from benchrun.audit.provenance import flatten, provenance, settings
from benchrun.core.frozen import Frozen
from benchrun.core.manifest import Manifest, canonical_json, sha256_bytes
from benchrun.core.text import counted

SHOWN = 10
"""Sample ids printed per list on a terminal (--json lists them all)."""
SHA256 = re.compile(r"[0-9a-f]{64}")


class Diff(Frozen):
    """Keys only in the compared run (added), only in the baseline (removed), and in both with other values."""

    added: dict[str, Any]
    removed: dict[str, Any]
    changed: dict[str, tuple[Any, Any]]
    """Key -> (baseline value, compared run's value)."""

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


class PromptDiff(Frozen):
    changed: tuple[str, ...]
    """Sample ids in both runs whose prompt differs."""
    only_baseline: tuple[str, ...]
    only_run: tuple[str, ...]
    references: tuple[str, ...] = ()
    """Sample ids in both runs whose reference differs: scored against another answer, asked the same or not."""

    def __bool__(self) -> bool:
        """Whether the samples asked differ (references aside)."""
        return bool(self.changed or self.only_baseline or self.only_run)


class Inputs(Frozen):
    """What differs between two manifests; all empty when the manifest ids are equal."""

    same_manifest: bool
    config: Diff
    """Flattened dotted keys of the manifests' settings: their config and repeats (`provenance.settings`)."""
    files: Diff
    """Benchmark source files by path -> sha256."""
    prompts: PromptDiff
    scorers: Diff
    """`task/scorer` -> the sha256 of the scorer's source."""
    formats: Diff
    """task -> response class name and the sha256 of its JSON schema."""
    judges: Diff
    """The judge model as the manifest pins it (`model.runner.model`, options, repeats), and each judge by name ->
    the sha256 of its rubric, format and grading."""
    provenance: Diff
    """What run.json says of the model, the judge model and the software (digest, server version, package
    versions)."""
    manifest: Diff | None
    """The rest of what the manifests ask by: their benchmark's name, runner, each task's own fields (`task t.system`)
    and the samples' values (one digest): what the config and files of a run compiled otherwise may not say; looked
    at only when the manifests differ and nothing above but provenance does (else None)."""


def inputs(baseline: Run, run: Run) -> Inputs:
    """What differs between the baseline's manifest and provenance and the compared run's."""
    a, b = baseline.manifest, run.manifest
    found = {"config": diff(settings(a), settings(b)), "prompts": prompt_diff(a, b),
             "files": diff({f.path: f.sha256 for f in a.files}, {f.path: f.sha256 for f in b.files}),
             "scorers": diff(_scorers(a), _scorers(b)), "formats": diff(_formats(a), _formats(b)),
             "judges": diff(_judges(a), _judges(b))}
    said = a.id == b.id or any(found.values()) or found["prompts"].references
    return Inputs(same_manifest=a.id == b.id, **found, provenance=diff(provenance(baseline), provenance(run)),
                  manifest=None if said else diff(_asked(a), _asked(b)))


def diff(a: dict[str, Any], b: dict[str, Any]) -> Diff:
    return Diff(added={k: v for k, v in b.items() if k not in a}, removed={k: v for k, v in a.items() if k not in b},
                changed={k: (v, b[k]) for k, v in a.items() if k in b and b[k] != v})


def prompt_diff(a: Manifest, b: Manifest) -> PromptDiff:
    prompts_a, prompts_b = {s.id: s.prompt for s in a.samples}, {s.id: s.prompt for s in b.samples}
    references = {s.id: s.reference for s in a.samples}
    return PromptDiff(changed=tuple(i for i, p in prompts_a.items() if i in prompts_b and prompts_b[i] != p),
                      only_baseline=tuple(i for i in prompts_a if i not in prompts_b),
                      only_run=tuple(i for i in prompts_b if i not in prompts_a),
                      references=tuple(s.id for s in b.samples if s.id in references and
                                       _as_json(references[s.id]) != _as_json(s.reference)))


def _as_json(reference: Any) -> str:
    """A reference as JSON: `true` and `1`, `1` and `1.0` are other references (a scorer may tell them apart)."""
    return json.dumps(reference, sort_keys=True)


def _scorers(manifest: Manifest) -> dict[str, str]:
    return {f"{t.name}/{s.name}": s.sha256 for t in manifest.tasks for s in t.scorers}


def _formats(manifest: Manifest) -> dict[str, dict[str, str]]:
    return {t.name: {"name": t.format.name, "schema_sha256": sha256_bytes(canonical_json(t.format.json_schema))}
            for t in manifest.tasks}


def _asked(manifest: Manifest) -> dict[str, Any]:
    """`Inputs.manifest`, as dotted keys; a few-shot's turns and the values by their sha256."""
    tasks = {}
    for task in manifest.tasks:
        own = task.model_dump(mode="json", exclude={"name", "scorers", "format"})
        tasks |= flatten(own | {"fewshot": sha256_bytes(canonical_json(own.get("fewshot", [])))}, f"task {task.name}.")
    values = sha256_bytes(canonical_json({sample.id: sample.values for sample in manifest.samples}))
    return {"benchmark": manifest.benchmark, **flatten(manifest.runner.model_dump(mode="json"), "runner."), **tasks,
            "samples.values": values}


def _judges(manifest: Manifest) -> dict[str, Any]:
    model = flatten(manifest.judge.model_dump(mode="json"), "model.") if manifest.judge else {}
    return {**model, **{j.name: sha256_bytes(canonical_json(j.model_dump(mode="json"))) for j in manifest.judges}}


def input_lines(inputs: Inputs, sides: tuple[str, str] = ("the baseline", "the compared run")) -> list[str]:
    """Whether the manifests are the same, then what differs, one line per item (the two runs called `sides`); the
    rest of the manifests (`Inputs.manifest`) where no other input of theirs differs (the config and files of a run
    compiled otherwise say it), else that nothing compare reads does."""
    lines = (["inputs: same manifest (the same questions asked the same way)"] if inputs.same_manifest
             else ["inputs that differ:"])
    for kind, found in (("config", inputs.config), ("file", inputs.files), ("scorer", inputs.scorers),
                        ("format", inputs.formats), ("judge", inputs.judges), ("provenance", inputs.provenance)):
        lines += _diff_lines(kind, found, sides)
    prompts = inputs.prompts
    if prompts:
        lines.append(f"  prompts: {counted(len(prompts.changed), 'sample')} asked differently{ids(prompts.changed)}; "
                     f"{len(prompts.only_baseline)} only in {sides[0]}{ids(prompts.only_baseline)}; "
                     f"{len(prompts.only_run)} only in {sides[1]}{ids(prompts.only_run)}")
    if prompts.references:
        lines.append(f"  references: {counted(len(prompts.references), 'sample')} scored against another reference"
                     f"{ids(prompts.references)}")
    if inputs.manifest is not None:
        lines += _diff_lines("manifest", inputs.manifest, sides) or [
            "  nothing compare reads: the manifests are written otherwise (another benchrun's?)"]
    return lines


def _diff_lines(kind: str, found: Diff, sides: tuple[str, str]) -> list[str]:
    return [*(f"  {kind} {_named(key)}: {_changed(a, b)}" for key, (a, b) in found.changed.items()),
            *(f"  {kind} {_named(key)}: only in {sides[1]} ({_show(v)})" for key, v in found.added.items()),
            *(f"  {kind} {_named(key)}: only in {sides[0]} ({_show(v)})" for key, v in found.removed.items())]


def _named(name: str) -> str:
    """A file's path or a sample's id, escaped where it is not in Unicode's composed form (NFC): `cafe\\u0301.jsonl`
    only in one run and `café.jsonl` only in the other printed as one name."""
    return name if unicodedata.is_normalized("NFC", name) else ascii(name)[1:-1]


def _changed(a: Any, b: Any) -> str:
    """`a -> b`; escaped where the two print alike, one text in two Unicode forms (`é` as one character, NFC, and as
    `e` and a combining accent, NFD, as macOS names a folder), so that a difference said is one seen."""
    shown = _show(a), _show(b)
    if unicodedata.normalize("NFC", shown[0]) != unicodedata.normalize("NFC", shown[1]):
        return " -> ".join(shown)
    return f"{_show(a, escaped=True)} -> {_show(b, escaped=True)} (one text in two Unicode forms, which print alike)"


def _show(value: Any, escaped: bool = False) -> str:
    """JSON, with sha256 digests cut to 12 characters."""
    return json.dumps(_short(value), ensure_ascii=escaped)


def _short(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _short(v) for k, v in value.items()}
    return value[:12] if isinstance(value, str) and SHA256.fullmatch(value) else value


def ids(ids: Iterable[str]) -> str:
    ids = list(ids)
    if not ids:
        return ""
    more = f", ... {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
    return f" ({', '.join(map(_named, ids[:SHOWN]))}{more})"
