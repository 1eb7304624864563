"""A run's session of asking: every query asked, graded and recorded, and the run finished with its status; and
what ends a run early, recorded before it is reported. `python -m benchrun`, `resume` and `retry` all ask this way."""

from __future__ import annotations

import asyncio
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

from benchrun.archive.writer import RunWriter
from benchrun.compiler.plan import Plan
from benchrun.console import output
from benchrun.core.errors import BenchrunError, FailFast, RunInterrupted, ServerLost
from benchrun.core.interrupts import INTERRUPTS
from benchrun.core.layout import LOG, Status
from benchrun.core.manifest import Query
from benchrun.core.records import ErrorInfo, ResponseRecord, ScoreRecord
from benchrun.execute.cache import RunCache
from benchrun.execute.executor import Executor
from benchrun.execute.grading import Grader
from benchrun.execute.runners.base import Runner


@contextmanager
def recording(writer: RunWriter) -> Iterator[None]:
    """Whatever ends a run is in its run.json before it is reported: an error as failed, a lost server or a signal
    as interrupted (with the command that finishes it). The directory's lock is let go last."""
    try:
        yield
    except ServerLost as err:
        writer.finish("interrupted", str(err))
        raise type(err)(f"{err}; {resume_hint(writer, err.when)}") from None
    except FailFast as err:
        writer.finish("failed", str(err))
        raise FailFast(f"{err}; {resume_hint(writer, 'once the setup is mended')}") from None
    except BenchrunError as err:
        writer.fail(str(err))
        raise
    except (KeyboardInterrupt, asyncio.CancelledError) as err:  # a signal (inside the event loop, a cancellation)
        signal_name = INTERRUPTS.signal_name() or str(err) or "a signal"
        if not writer.finished:
            writer.finish("interrupted", f"interrupted by {signal_name}")
        raise RunInterrupted(f"interrupted by {signal_name}: {resume_hint(writer)}") from None
    except Exception as err:
        writer.fail(f"benchrun failed: {ErrorInfo.of(err)}")
        raise
    finally:
        writer.release()


def resume_hint(writer: RunWriter, when: str = "") -> str:
    """What the run directory now says of the run, and the command that finishes it."""
    info, where = writer.info, writer.dir.absolute()
    if info.manifest_id is None:
        return f"nothing was asked; run {info.run_id} is recorded as '{info.status}' in {where}; start it again"
    counts, ungraded = info.counts, writer.ungraded
    graded = f" ({ungraded} not graded yet)" if ungraded else ""
    return (f"run {info.run_id} is recorded as '{info.status}' with {counts.responses} of {counts.samples} samples"
            f"{graded} in {where}; finish it{' ' + when if when else ''} with: benchrun-audit resume {where}")


async def execute(plan: Plan, runner: Runner, writer: RunWriter, queries: Sequence[Query],
                  cache: RunCache | None = None) -> Status:
    """Ask `queries` (samples' repeats) with an identified runner (answers from `cache` where it has them), record
    each, and finish the run with its status."""
    with output.progress(len(queries)) as advance:
        async with grader_for(plan, writer) as grader:
            writer.asking()
            await Executor(plan.manifest, runner, grader, _Recorder(writer, advance), cache).run(queries)
    counts = writer.counts
    return writer.finish("completed_with_errors" if counts.request_errors or counts.scorer_errors
                         else "completed").status


def grader_for(plan: Plan, writer: RunWriter) -> Grader:
    """The run's grader: its scorers in a process of their own, printing into the run's log file."""
    return Grader(plan.manifest, plan.scorers, writer.dir / LOG, plan.scorer_timeout_s)


class _Recorder:
    """The executor's recorder: commits to the run directory and moves the progress bar."""

    def __init__(self, writer: RunWriter, advance: Callable[[bool], None]):
        self.writer, self.advance = writer, advance

    def response(self, record: ResponseRecord) -> None:
        self.writer.record_response(record)
        self.advance(record.error is not None)

    def scores(self, response: ResponseRecord, scores: list[ScoreRecord]) -> None:
        self.writer.record_scores(scores)
