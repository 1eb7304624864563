"""Which scorers a rescore grades with: the built-ins, the benchmark's current custom_scorer.py and `--scorers
FILE.py`'s (with `--only`, FILE.py's in place of the benchmark's), planned task by task as the module docstring of
`audit.rescore` says, and what rescore.json records of them (their hashes, the modules they imported)."""

from __future__ import annotations

from pathlib import Path

from benchrun.archive.reader import PathLike, Run
from benchrun.audit.rescored import ModuleUsed, ScorerUsed
from benchrun.compiler.ownsource import LOADED
from benchrun.compiler.scoring import BUILTIN, CUSTOM_FILE, Scorer, scorers_in, source_sha256
from benchrun.compiler.usercode import local_modules
from benchrun.core.errors import BenchrunError, ConfigError
from benchrun.core.filebytes import read_bounded
from benchrun.core.manifest import Manifest, sha256_bytes
from benchrun.core.text import undecoded

Loaded = dict[str, tuple[Scorer, str, str | None]]
"""Scorer name -> (function, origin, origin file sha256)."""



def planned(run: Run, manifest: Manifest, names: list[str] | None, scorers_file: PathLike | None,
            only: bool) -> tuple[Loaded, dict[str, tuple[str, ...]]]:
    """The scorers loaded for a rescore of `run` (`only`: the built-ins and `scorers_file`'s alone), and task -> the
    scorer names it grades with (`scorer_plan`)."""
    if only and scorers_file is None:
        raise BenchrunError("--only goes with --scorers FILE.py: it takes the scorers from FILE.py alone")
    added = load_scorers(Path(scorers_file)) if scorers_file is not None else {}
    loaded = {**_builtins(), **added} if only else {**bench_scorers(run, scorers_file is not None), **added}
    return loaded, scorer_plan(manifest, loaded, names, () if only else tuple(added), _defining(scorers_file, only))


def _defining(scorers_file: PathLike | None, only: bool) -> str:
    """What to do about a scorer the run's tasks name that no loaded file defines, as the command was given."""
    if scorers_file is None:
        return "give them with --scorers FILE.py"
    if only:
        return (f"--only scores with {str(scorers_file)!r} alone, which does not define them: define them there, or "
                "pick its scorers with --scorer NAME")
    return f"define them in {str(scorers_file)!r}"


def bench_scorers(run: Run, with_file: bool = False) -> Loaded:
    """The built-ins and the current custom_scorer.py of the run's benchmark (found through task.path)."""
    try:
        bench = run.bench_dir()
    except ConfigError as err:
        hint = "add --only to score with FILE.py's alone" if with_file else "give them with --scorers FILE.py --only"
        raise BenchrunError(f"cannot find the run's benchmark ({err}); {hint}", file=str(run.path)) from None
    file = bench / CUSTOM_FILE
    return {**_builtins(), **(load_scorers(file) if file.exists() else {})}


def load_scorers(file: Path) -> Loaded:
    """The public functions defined in `file`."""
    if not file.exists():
        raise BenchrunError("no such scorer file", file=str(file))
    origin = str(file.resolve())
    if (shown := undecoded(origin)) is not None:  # a UnicodeEncodeError's traceback, as rescore.json was written
        raise BenchrunError(f"the scorer file's path {shown} is not UTF-8 text, and rescore.json records it as text; "
                            "nothing was written; move the file to a folder whose path is", file=str(file))
    digest = sha256_bytes(read_bounded(file, str(file)))
    return {name: (fn, origin, digest) for name, fn in scorers_in(file, str(file)).items()}


def _builtins() -> Loaded:
    return {name: (fn, "builtin", None) for name, fn in BUILTIN.items()}


def scorer_plan(manifest: Manifest, loaded: Loaded, names: list[str] | None, added: tuple[str, ...] = (),
                defining: str = "give them with --scorers FILE.py") -> dict[str, tuple[str, ...]]:
    """Task -> the scorer names to run on it: the chosen `names`, else each task's own plus the `added` ones no
    task names (see the module docstring); a scorer a task names and none defines is refused with `defining`."""
    own = {t.name: tuple(s.name for s in t.scorers) for t in manifest.tasks}
    used = {n for task in own.values() for n in task}
    if names is None:
        missing = sorted(n for n in used if n not in loaded)
        if missing:
            raise BenchrunError(f"the run's scorers {', '.join(missing)} are not defined now "
                                f"(available: {', '.join(sorted(loaded))}); {defining}")
        return {task: (*scorers, *(n for n in added if n not in used)) for task, scorers in own.items()}
    unknown = [n for n in names if n not in loaded]
    judged = [f"'{n}' is a judge of the run, not a scorer: every rescore grades with the run's judges (--rejudge asks "
              "them again); the scorers" for n in unknown if n in {judge.name for judge in manifest.judges}]
    if unknown:
        said = judged[0] if judged else f"unknown scorer {', '.join(map(repr, unknown))}"
        raise BenchrunError(f"{said} (available: {', '.join(sorted(loaded))})")
    chosen = list(dict.fromkeys(names))
    return {task: tuple(n for n in chosen if n in scorers or n not in used) for task, scorers in own.items()}


def modules_used(run: Run, manifest: Manifest, loaded: Loaded) -> tuple[ModuleUsed, ...]:
    """The modules beside the loaded scorer files that those imported, with the sha256 of the bytes they were made
    of (which the scorer process checked: read again once scoring is over, an edit or a removal meanwhile was named,
    or failed the rescore) and, of the run's benchmark, the one in the run's manifest."""
    try:
        bench: Path | None = run.bench_dir().resolve()
    except BenchrunError:
        bench = None
    recorded = {source.path: source.sha256 for source in manifest.files}
    folders = sorted({Path(origin).parent for _, origin, _ in loaded.values() if origin != "builtin"})
    return tuple(ModuleUsed(path=str(path), sha256=_made_of(path), run_sha256=recorded.get(rel) if folder == bench else None)
                 for folder in folders for rel in local_modules(folder) if (path := folder / rel))


def _made_of(module: Path) -> str:
    """The sha256 of the bytes the module at `module` was made of (one not made of its source: of its file now)."""
    return LOADED.get(module.resolve()) or sha256_bytes(read_bounded(module, str(module)))


def scorers_used(manifest: Manifest, plan: dict[str, tuple[str, ...]], loaded: Loaded) -> tuple[ScorerUsed, ...]:
    """Each planned scorer once, in first-use order, with its hashes now and in the run."""
    before = {s.name: s.sha256 for t in manifest.tasks for s in t.scorers}
    names = list(dict.fromkeys(n for task in plan.values() for n in task))
    return tuple(ScorerUsed(name=n, origin=loaded[n][1], origin_sha256=loaded[n][2], sha256=source_sha256(loaded[n][0]),
                            run_sha256=before.get(n), tasks=tuple(t for t, scorers in plan.items() if n in scorers))
                 for n in names)
