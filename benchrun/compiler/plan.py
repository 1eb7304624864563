"""Config + benchmark sources -> `Plan` (the frozen `Manifest` plus the scorers it names). No network."""

from __future__ import annotations

import contextlib
import difflib
import inspect
import json
import unicodedata
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from pydantic import BaseModel

from benchrun.compiler import formats, grid, scoring
from benchrun.compiler.answerable import refuse_unanswerable
from benchrun.compiler.collector import collector_paused
from benchrun.compiler.files import REFERENCE, Bounds
from benchrun.compiler.judges import compile_judges
from benchrun.compiler.patterns import patterns_in, read_apart, regex_read
from benchrun.compiler.schemaonce import refuse_made_otherwise
from benchrun.compiler.schemas import SHOWN
from benchrun.compiler.shots import refuse_shown_answers
from benchrun.compiler.sources import TaskSpec, benchmark_files, read_tasks
from benchrun.compiler.tasknames import select
from benchrun.compiler.unfilled import refuse_unfilled
from benchrun.compiler.usercode import contained, forget_local_modules, held_otherwise, local_modules
from benchrun.core import secrets
from benchrun.core.errors import ConfigError, TaskError
from benchrun.core.filebytes import digests_read, read_bounded
from benchrun.core.keys import leaves
from benchrun.core.layout import RESERVED_SCORERS
from benchrun.core.manifest import (
    FormatSpec,
    JudgeModel,
    Manifest,
    Repeats,
    RunnerSpec,
    ScorerSpec,
    SourceFile,
    TaskEntry,
    Turn,
    outside_reference,
    sha256_bytes,
)
from benchrun.core.resources import DEMO_SCHEME, bench_dir
from benchrun.core.settings import judge_runner_keys
from benchrun.core.text import name_said, names_listed, one_line

ASKING_LIMITS = ("concurrency", "timeout_s", "retries", "backoff_s", "max_consecutive_failures", "max_response_bytes")
"""Runner keys that say how hard and how long to try, not what is asked: a resume or retry may change them (`--set`)."""
EXECUTION_KEYS = ("host", "base_url", "api_key_env", "model_path", *ASKING_LIMITS)
"""Runner keys that say where and how fast to ask, not what: kept out of the manifest."""
LIMITS = ("max_samples", "max_prompt_chars", "max_total_chars", "max_file_bytes")
"""Task keys that bound what a benchmark may ask, not what it asks: kept out of the manifest."""


@dataclass(frozen=True)
class Plan:
    """A compiled run: the manifest and the scorer functions it names."""

    manifest: Manifest
    scorers: dict[str, scoring.Scorer]
    bench_dir: Path
    scorer_timeout_s: float
    """Each scorer call's time limit."""


def compiled(cfg: Mapping[str, Any], cwd: Path | None = None) -> Plan:
    """Compile a checked config (benchrun.compose.config.plain_config's, one model) into a `Plan`; relative paths
    resolve against `cwd`."""
    with collector_paused():
        return _compiled(cfg, cwd)


def _compiled(cfg: Mapping[str, Any], cwd: Path | None) -> Plan:
    if isinstance(cfg["runner"]["model"], list):
        raise ConfigError("compile one model at a time; this config lists several", key="runner.model")
    bench = bench_dir(cfg["task"]["path"], cwd)
    limits = grid.Limits(cfg["task"]["max_samples"], cfg["task"]["max_prompt_chars"], cfg["task"]["max_total_chars"])
    with digests_read() as read:  # each file named by the bytes first read of it: the tasks', the code's as imported
        every_spec = read_tasks(bench, Bounds(limits.max_prompt_chars, limits.max_samples,
                                              cfg["task"]["max_file_bytes"]))
        named = [name for spec in every_spec for name in spec.files]
        as_read = {path: _source_file(bench, path, read) for path in benchmark_files(bench, named)  # before its code
                   if path.suffix != ".py"}  # runs; its Python files: as imported, below
        specs = select(every_spec, cfg["task"].get("only"))
        check_sample_count(specs, limits)
        forget_local_modules()
        known_formats = {**formats.BUILTIN, **formats.custom_formats(bench)}
        known_scorers = scoring.available(bench)
    imported = {path: _source_file(bench, path, read) for path in benchmark_files(bench, local_modules(bench))
                if path.suffix == ".py"}
    tasks, samples, rendered, shas = [], [], grid.Rendered(), {}  # shas: each scorer's source hashed once
    for spec in specs:
        refuse_unfilled(spec, cfg["task"].get("system"))
        system, turns = cfg["task"].get("system") or spec.system, grid.turns(spec, limits)
        preamble = len(system or "") + sum(len(turn.user) + len(turn.assistant) for turn in turns)
        task_samples = grid.samples(spec, limits, rendered, preamble)
        tasks.append(_task_entry(spec, len(task_samples), known_formats, (known_scorers, shas), system, turns, bench))
        refuse_unanswerable(spec, tasks[-1], task_samples)
        refuse_shown_answers(spec, turns, task_samples)
        samples.extend(task_samples)
    judges = compile_judges(bench, specs, [t.scorers for t in tasks],
                            lambda name, where: format_spec(name, known_formats, where), limits.max_prompt_chars)
    manifest = Manifest(
        benchmark=cfg["task"]["name"], config=manifest_config(cfg),
        files=source_files(bench, [*named, *local_modules(bench)], {**as_read, **imported}),
        runner=runner_spec(cfg["runner"]), tasks=tuple(tasks), samples=tuple(samples), repeats=repeats(cfg),
        judges=judges, judge=judge_model(cfg, specs) if judges else None)
    refuse_keys(manifest)
    used = {s.name for t in tasks for s in t.scorers}
    return Plan(manifest, {name: known_scorers[name] for name in used}, bench, cfg["scorer_timeout_s"])


def refuse_keys(manifest: Manifest) -> None:
    """Refuse a benchmark whose text holds a credential (the value of $OPENAI_API_KEY, $HF_TOKEN, ... as a whole
    token): the manifest keeps every prompt as written, and it is never masked (its id is its hash)."""
    why = secrets.environment_credentials() and secrets.environment_key(manifest.canonical_json().decode())
    if why:
        raise TaskError(f"{_holder(manifest)} holds {why}, which the manifest would keep as written; take the key "
                        "out of the benchmark")


def _holder(manifest: Manifest) -> str:
    """Which task, sample, judge or data file's name holds the key, by position (its name or id may hold the key
    itself)."""
    tasks = {task.name: i for i, task in enumerate(manifest.tasks, 1)}
    for name, i in tasks.items():
        if secrets.environment_key(manifest.task(name).model_dump_json()):
            return f"task {i}"
    seen: dict[str, int] = {}
    for sample in manifest.samples:
        seen[sample.task] = seen.get(sample.task, 0) + 1
        if secrets.environment_key(sample.model_dump_json()):
            return f"sample {seen[sample.task]} of task {tasks[sample.task]}"
    parts = [(f"judge {i}", judge.model_dump_json()) for i, judge in enumerate(manifest.judges, 1)]
    parts += [(f"the name of file {i} of the benchmark (as the manifest lists them)", file.path)
              for i, file in enumerate(manifest.files, 1)]
    return next((where for where, text in parts if secrets.environment_key(text)), "the benchmark's config")


def check_sample_count(specs: list[TaskSpec], limits: grid.Limits) -> None:
    """Refuse a benchmark that expands to more than task.max_samples samples, before expanding anything."""
    total = 0
    for spec in specs:
        total += grid.sample_count(spec)
        if total > limits.max_samples:
            counts = ", ".join(f"{s.name}: {grid.sample_count(s):,}" for s in specs)
            raise ConfigError(f"the benchmark expands to {sum(map(grid.sample_count, specs)):,} samples ({counts}), "
                              f"more than task.max_samples ({limits.max_samples:,}); raise it, or pick tasks with "
                              "task.only", key="task.max_samples")


def _task_entry(spec: TaskSpec, n: int, known_formats: dict[str, type[BaseModel]],
                known_scorers: tuple[dict[str, scoring.Scorer], dict[str, str]], system: str | None,
                turns: tuple[Turn, ...], bench: Path) -> TaskEntry:
    """The manifest's entry of task `spec`; `known_scorers` the scorers by name, and the sha256 of each one's source
    found so far (5,000 tasks of one scorer read its source once)."""
    return TaskEntry(system=system, fewshot=turns,
        name=spec.name, description=spec.description, source=spec.source, template=spec.template,
        reference="calculated" if spec.reference == "calculated" else "list",
        value_combinations=spec.value_combinations, n_samples=n,
        format=format_spec(spec.format, known_formats, spec.where("format"), bench),
        scorers=tuple(_scorer(spec, s, known_scorers, bench) for s in spec.scorers), judges=spec.judges)


def format_spec(name: str, known: dict[str, type[BaseModel]], where: dict[str, str | None],
                bench: Path | None = None) -> FormatSpec:
    """Response class `name` with its JSON schema; refused (at `where`) when it is not one of `known` (saying what
    the custom_response.py of the benchmark at `bench` holds as `name`, if it holds it)."""
    cls = known.get(name)
    if cls is None and bench is not None and (other := held_otherwise(
            bench / formats.CUSTOM_FILE, name, _a_model, "a pydantic model (a subclass of BaseModel)")) is not None:
        raise TaskError(f"format {name_said(name)}: {formats.CUSTOM_FILE} holds it as {other}; a format is a class the "
                        f"file defines: class {name}(BaseModel)", **where)
    if cls is None:
        raise TaskError(f"unknown format {name_said(name)} ({_choices(formats.BUILTIN, known, formats.CUSTOM_FILE)})"
                        f"{_as_python_reads(name, known, formats.CUSTOM_FILE)}", **where)
    made = _MADE.setdefault(cls, {})
    if name not in made:
        made[name] = _made_spec(cls, name, where)
    return made[name].model_copy(deep=True)


_MADE: weakref.WeakKeyDictionary[type, dict[str, FormatSpec]] = weakref.WeakKeyDictionary()
"""Each response class's spec by the name it is known by, made once: its schema is made contained (60 ms: a benchmark
of 200 tasks of one custom format took a minute to compile, making it for each task)."""


def _made_spec(cls: type[BaseModel], name: str, where: dict[str, str | None]) -> FormatSpec:
    """Format `name`'s spec, of class `cls`: its JSON schema, made by user code contained for a custom class, and
    checked."""
    origin = "builtin" if formats.BUILTIN.get(name) is cls else formats.CUSTOM_FILE
    custom = origin == formats.CUSTOM_FILE
    with contained(formats.CUSTOM_FILE, f"format '{name}' has no JSON schema") if custom else contextlib.nullcontext():
        schema = cls.model_json_schema()
        size = len(json.dumps(schema, ensure_ascii=False, allow_nan=False).encode("utf-8"))  # as the manifest holds it
    if size > formats.MAX_SCHEMA_BYTES:
        raise TaskError(f"format '{name}': its JSON schema is {size:,} bytes as JSON, more than a format's "
                        f"({formats.MAX_SCHEMA_BYTES:,}: it is sent with every request, the server making a grammar of "
                        "it each time); hold the answer to fewer values, and check it against a long list in a scorer",
                        file=formats.CUSTOM_FILE, task=where.get("task"))
    _refs_inside(name, schema)
    if custom:
        refuse_made_otherwise(cls, name, schema, formats.CUSTOM_FILE, where.get("task"))
        _read_alike(name, schema, where.get("task"))
        _a_json_schema(name, schema)
    return FormatSpec(name=name, origin=origin, json_schema=schema)


def _a_json_schema(name: str, schema: Any) -> None:
    """Refuse a custom class's schema that is not a JSON Schema (`model_json_schema` returning
    `{"properties": "x"}`): the format check could not be made of it, a traceback once the run had begun; and one that
    is no object (`true`, `false`: JSON Schema's own, a traceback as the manifest was made), or that refers to a part
    it lacks (`_refs_held`)."""
    from jsonschema import Draft202012Validator, FormatChecker, SchemaError  # only for a custom format: 50 ms of import

    if not isinstance(schema, dict):
        raise TaskError(f"format '{name}': its JSON schema is {json.dumps(schema)[:SHOWN]}, not an object: a format "
                        "is the schema of an answer's fields; let pydantic make it from the class's fields",
                        file=formats.CUSTOM_FILE)

    checker = FormatChecker()
    checker.checks("regex")(regex_read)  # as the format check reads it, not as Python's `re` would
    try:
        Draft202012Validator.check_schema(schema, format_checker=checker)
    except SchemaError as err:
        where = "/".join(map(str, err.absolute_path)) or "its top"
        raise TaskError(f"format '{name}': its JSON schema is not a JSON Schema ({err.message}, at {where}); let "
                        "pydantic make it from the class's fields", file=formats.CUSTOM_FILE) from None
    _refs_held(name, schema)


FORMAT_URI = "urn:benchrun:format"
"""The address a format's schema is read at, to resolve its own `$ref`s against."""


def _a_model(obj: object) -> bool:
    return inspect.isclass(obj) and issubclass(obj, BaseModel)


def _refs_held(name: str, schema: dict[str, Any]) -> None:
    """Refuse a schema whose `$ref` names a part of it that it lacks (`#/$defs/Nope`): the run's format check could
    not be made of it, and the run failed at once, blaming its manifest. Each `$ref` is looked up where the schema it
    stands in reads it, against the nearest `$id` around it (a subschema's own `$defs`)."""
    from referencing import Registry
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    root = DRAFT202012.create_resource(schema)
    stack = [(Registry().with_resource(FORMAT_URI, root).crawl().resolver(FORMAT_URI), root)]
    while stack:  # walked without recursion, as deep as a schema is nested
        resolver, resource = stack.pop()
        resolver = resolver.in_subresource(resource)
        ref = resource.contents.get("$ref") if isinstance(resource.contents, dict) else None
        try:
            if isinstance(ref, str):
                resolver.lookup(ref)
        except Unresolvable:
            raise TaskError(f"format '{name}': its JSON schema refers to {ref!r} ($ref), which it does not hold, and "
                            "the format check cannot be made without it; define it (in $defs), or let pydantic make "
                            "the schema from the class's fields", file=formats.CUSTOM_FILE) from None
        stack.extend((resolver, sub) for sub in resource.subresources())
    _built(name, schema)


BUILT_APART = frozenset({"$id", "$schema", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary"})
"""Keywords pydantic never writes whose faults the format check alone finds, as it is built."""


def _built(name: str, schema: dict[str, Any]) -> None:
    """Refuse a schema the run's format check (jsonschema-rs) cannot be built of for any other reason (an `$id` that
    is no URI, a `$dynamicRef` to no anchor): the run failed at once, blaming its manifest. Built only for a schema
    holding a keyword of BUILT_APART: jsonschema-rs is a run's module, which start-up and dry runs load not."""
    if not any(BUILT_APART.intersection(path) for path, _ in leaves(schema)):
        return
    import jsonschema_rs  # a run's module, as compiler.bounds imports it

    try:
        jsonschema_rs.Draft202012Validator(schema)
    except jsonschema_rs.ValidationError as err:
        raise TaskError(f"format '{name}': its JSON schema cannot be read by the format check "
                        f"({one_line(str(err).splitlines()[0], 200)}); let pydantic make the schema from the "
                        "class's fields", file=formats.CUSTOM_FILE) from None


def _read_alike(name: str, schema: dict[str, Any], task: str | None) -> None:
    """Refuse a regex of the format that pydantic and the format check read apart (`compiler.patterns`)."""
    for field, pattern in patterns_in(schema):
        if (apart := read_apart(pattern)) is not None:
            raise TaskError(f"format '{name}': field '{field}': its pattern {pattern!r} holds {apart}",
                            file=formats.CUSTOM_FILE, task=task)


def _refs_inside(name: str, schema: Any) -> None:
    """Refuse a schema with a `$ref` (or `$dynamicRef`) to what is outside it, a URL or a file, which the format
    check's validator would fetch or read as the run began (it was a traceback, the run `failed`)."""
    if (found := outside_reference(schema)) is not None:
        key, value = found
        raise TaskError(f"format '{name}': its JSON schema refers to {value!r} ({key}), outside the schema, and "
                        "benchrun fetches nothing for a format (no URL, no file); define what it refers to in "
                        "custom_response.py", file=formats.CUSTOM_FILE)


def _scorer(spec: TaskSpec, name: str, scorers: tuple[dict[str, scoring.Scorer], dict[str, str]],
            bench: Path) -> ScorerSpec:
    known, shas = scorers
    if name in RESERVED_SCORERS:
        raise TaskError(f"'{name}' is benchrun's own score (each answer checked against its format, always "
                        "recorded): name the scorer otherwise", **spec.where("scorer"))
    fn = known.get(name)
    if fn is None and (other := held_otherwise(bench / scoring.CUSTOM_FILE, name, inspect.isfunction,
                                                "a function defined with def")) is not None:
        raise TaskError(f"scorer {name_said(name)}: {scoring.CUSTOM_FILE} holds it as {other}; a scorer is a function "
                        f"the file defines: def {name}(response, reference)", **spec.where("scorer"))
    if fn is None:
        raise TaskError(f"unknown scorer {name_said(name)} ({_choices(scoring.BUILTIN, known, scoring.CUSTOM_FILE)})"
                        f"{_as_python_reads(name, known, scoring.CUSTOM_FILE)}", **spec.where("scorer"))
    builtin = scoring.BUILTIN.get(name) is fn
    if not builtin and name not in shas:  # checked as it is first hashed
        scoring.check_signature(name, fn, scoring.CUSTOM_FILE)
    if builtin and spec.reference == "calculated":
        raise TaskError(f"scorer '{name}' compares with a reference, but the task has none "
                        f"(reference: calculated{_reference_misnamed(spec)}); give references or a custom scorer",
                        **spec.where("scorer"))
    return ScorerSpec(name=name, origin="builtin" if builtin else scoring.CUSTOM_FILE,
                      sha256=shas.get(name) or shas.setdefault(name, scoring.source_sha256(fn)))


def _reference_misnamed(spec: TaskSpec) -> str:
    """Of a task with no references, the value named nearly as the references' column (`Reference`, `references`),
    which is read as a value: said beside the refusal, which named neither."""
    near = next((value for value in spec.values if difflib.get_close_matches(value.casefold(), [REFERENCE], cutoff=0.8)),
                None)
    return "" if near is None else f"; its {name_said(near)} is a value: the references' column is named '{REFERENCE}'"


def _as_python_reads(name: str, known: Mapping[str, Any], custom_file: str) -> str:
    """Of a name not known, the one of `known` Python makes of it (NFKC: `cafe` + U+0301 is `café`, `ｓ` is `s`), which
    the file's `def` of that very text defines; empty where there is none."""
    read = unicodedata.normalize("NFKC", name)
    return f": Python reads {custom_file}'s names composed (NFKC), so it defines {read!r}: write it so" if \
        read != name and read in known else ""


def _choices(builtin: Mapping[str, Any], known: Mapping[str, Any], custom_file: str) -> str:
    custom = sorted(name for name, obj in known.items() if builtin.get(name) is not obj)
    text = f"built-in: {', '.join(sorted(builtin))}"
    return text + (f"; in {custom_file}: {names_listed(custom)}" if custom else f"; {custom_file}: none")


def source_files(bench: Path, data: Iterable[str] = (),
                 as_read: Mapping[Path, SourceFile] | None = None) -> tuple[SourceFile, ...]:
    """Path, sha256 and size of every task source file of the benchmark, and of the `data` files its tasks name;
    those of `as_read` as they were read before the benchmark's code ran (a custom_scorer.py that writes its data
    file at import: the manifest named the bytes written, not those the samples were made of, and verify said the
    sources unchanged)."""
    return tuple((as_read or {}).get(path) or _source_file(bench, path) for path in benchmark_files(bench, data))


def _source_file(bench: Path, path: Path, read: Mapping[Path, tuple[str, int]] | None = None) -> SourceFile:
    """The file `path` of the benchmark as its bytes were `read` (sha256 and size), or as read now."""
    rel = path.relative_to(bench).as_posix()
    if (found := (read or {}).get(path.resolve())) is not None:
        return SourceFile(path=rel, sha256=found[0], size=found[1])
    data = read_bounded(path, rel)
    return SourceFile(path=rel, sha256=sha256_bytes(data), size=len(data))


def manifest_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """The resolved config without what varies by machine or speed (paths, host, concurrency)."""
    task = {k: v for k, v in cfg["task"].items()
            if k not in LIMITS and (k != "path" or v.startswith(DEMO_SCHEME)) and (k != "system" or v is not None)}
    runner = {k: v for k, v in cfg["runner"].items() if k not in EXECUTION_KEYS}
    return {"task": task, "runner": runner}


def judge_model(cfg: Mapping[str, Any], tasks: Iterable[TaskSpec | TaskEntry]) -> JudgeModel:
    """The judge model of a benchmark with judges, as the manifest pins it (a run's, or a rejudge's of a run's
    tasks); refused without judge.model."""
    if cfg["judge"]["model"] is None:
        judged = next(task for task in tasks if task.judges)
        raise ConfigError(f"task '{judged.name}' is graded by judge '{judged.judges[0]}': name the judge model with "
                          "judge.model=...", file="config", key="judge.model")
    return JudgeModel(runner=runner_spec(judge_runner_keys(cfg["judge"])), repeats=cfg["judge"]["repeats"])


def repeats(cfg: dict[str, Any]) -> Repeats | None:
    """The manifest's repeats: None when each sample is asked once."""
    k = cfg.get("repeats", 1)
    return None if k == 1 else Repeats(k=k, seeds=cfg.get("repeat_seeds", "vary"))


def runner_spec(runner: dict[str, Any]) -> RunnerSpec:
    settings = {k: v for k, v in runner.items() if k not in (*EXECUTION_KEYS, "type", "model", "options")}
    return RunnerSpec(type=runner["type"], model=runner["model"], options=runner.get("options") or {},
                      settings=settings)
