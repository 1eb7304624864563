"""The record shapes of a run directory: responses, scores, summary and run.json."""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from benchrun.core.frozen import Frozen
from benchrun.core.judgeagreement import JudgeAgreement
from benchrun.core.layout import DigestedFile, Status
from benchrun.core.lineage import Lineage, Merge
from benchrun.core.metrictypes import MetricValue, Statistic, Tally
from benchrun.core.metricvalue import shares
from benchrun.core.recordvalues import (
    Count,
    Environment,
    History,
    Identity,
    JudgeInfo,
    Message,
    Moment,
    RunId,
    Seconds,
    Version,
)
from benchrun.core.shards import Shard

RECORD_VERSION = 1
Number = int | float


def _absent(value: Any) -> bool:
    """Left out of the JSON: what only runs with repeats have (a run without is written as before repeats), and
    what a record read from an older run lacks (it is written back as it was)."""
    return value is None


class Answer(Frozen):
    """What the server says about an answer besides its text: declared once, for the runner's `Completion` and the
    archive's `ResponseRecord` alike."""

    done_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    durations_ns: dict[str, int] = Field(default_factory=dict)
    """The server's own timings (total, load, prompt_eval, eval), when it reports them."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Runner-specific response metadata (e.g. the served model id, system_fingerprint)."""


class Completion(Answer):
    """A model's answer to one prompt, with what the server says about it (what a runner returns and what the
    response cache keeps)."""

    text: str


ENDED_IN_ERROR = "error"
"""The finish reason of an answer that ended in an error (OpenRouter's): a server's failure, not the model's answer."""


class ErrorInfo(Frozen):
    """An error kept as data: the exception's type and message."""

    type: Message
    message: Message

    def __str__(self) -> str:
        return f"{self.type}: {self.message}"

    @classmethod
    def of(cls, err: BaseException) -> ErrorInfo:
        return cls(type=type(err).__name__, message=str(err) or type(err).__name__)


class Attempt(Frozen):
    """One try at a request that failed (a retried error, or the last one)."""

    number: int
    error: ErrorInfo
    seconds: Seconds
    """Wall time of this try."""


class ResponseRecord(Answer):
    """One line of responses.jsonl: what the model answered for one sample, or why it did not."""

    id: str
    task: str
    repeat: int = Field(0, ge=0)
    """Which of the sample's `repeats` answers this is (0..k-1); a response is identified by (id, repeat)."""
    text: str | None
    """The raw response text exactly as received; None when every attempt failed."""
    prompt_tokens: Count | None = None
    completion_tokens: Count | None = None
    durations_ns: dict[str, Count] = Field(default_factory=dict)
    """The server's own timings (total, load, prompt_eval, eval), when it reports them."""
    seconds: Seconds
    """Wall time for the sample, retries included."""
    attempts: int
    """How many requests were sent for this sample."""
    failed_attempts: tuple[Attempt, ...] = ()
    error: ErrorInfo | None = None
    """Set when no response was obtained."""
    carried_from: RunId | None = None
    """The run id that asked this answer, when a retry carried it over (through any retries between), else None."""
    cached_from: RunId | None = None
    """The run id that asked this answer, when it was taken from the response cache instead of the model."""
    host: str | None = Field(None, exclude_if=_absent)
    """The server that answered, for a run asking a list of hosts (runner.host or runner.base_url)."""
    host_seconds: Seconds | None = Field(None, exclude_if=_absent)
    """Wall time at the server that answered, when the sample was asked of another server of the list first."""
    shard: str | None = Field(None, exclude_if=_absent)
    """In a run merged from shards (`benchrun-audit merge`): the shard (i/n) whose run made this line."""


def answer_name(sample: str, repeat: int) -> str:
    """How an answer is named to a reader: the sample id, and its repeat from the second on."""
    return f"{sample} repeat {repeat}" if repeat else sample


def answered(completion: Completion, **record: Any) -> ResponseRecord:
    """The response record of an answer already validated (as a Completion), built without validating it again:
    `record` gives id, task, repeat, seconds, attempts, failed_attempts and, for a cached answer, cached_from."""
    return ResponseRecord.model_construct(**vars(completion), **record)  # its fields, without pydantic's __iter__


class JudgementRecord(Frozen):
    """One line of judgements.jsonl: one judge's call on one answer (one judge repeat), as sent and as answered."""

    id: str
    task: str
    repeat: int = Field(0, ge=0)
    """The repeat of the answer judged (see ResponseRecord.repeat)."""
    judge: str
    judge_repeat: int = Field(0, ge=0)
    """Which of the judge's `judge.repeats` calls on this answer this is (each with its own seed)."""
    messages: tuple[dict[str, str], ...]
    """The exact chat sent to the judge model: the rubric, rendered for this answer."""
    reply: str | None
    """The judge model's raw reply exactly as received; None when every attempt failed."""
    grade: str | int | float | bool | None = None
    """The reply's grade field as the judge gave it; None when the reply did not parse in the judge's format."""
    value: int | float | None = None
    """The grade's number (an Enum or string through the judge's scores); None when there is none."""
    error: ErrorInfo | None = None
    """Why this call gives no number: the request failed, or the reply did not parse, or its grade has none."""
    prompt_tokens: Count | None = None
    completion_tokens: Count | None = None
    seconds: Seconds = 0.0
    attempts: int = 0
    """Requests sent for this call (0: from the response cache, or read again from the archive)."""
    cached_from: RunId | None = None
    """The run id that asked this reply, when it came from the response cache."""
    extra: dict[str, Any] = Field(default_factory=dict, exclude_if=lambda extra: not extra)
    """What the judge's server said of its reply besides its text, as a model's answer keeps it (Answer.extra): for
    runner=openai the served model id, the system_fingerprint and a refusal."""
    carried_from: RunId | None = Field(None, exclude_if=_absent)
    """The run this call was carried over from by a retry, with the answer it judged (see ResponseRecord)."""
    host: str | None = Field(None, exclude_if=_absent)
    """The server that answered (or last failed) this call, for a judge asking a list of servers."""
    shard: str | None = Field(None, exclude_if=_absent)
    """In a run merged from shards (`benchrun-audit merge`): the shard (i/n) whose run made this line."""


class ScoreRecord(Frozen):
    """One line of scores.jsonl: one scorer's result for one sample."""

    id: str
    task: str
    repeat: int = Field(0, ge=0)
    """The repeat of the response scored (see ResponseRecord.repeat)."""
    scorer: str
    """A scorer of the task, or `format_valid` (the response checked against its response class)."""
    metrics: dict[str, MetricValue] | None
    """Metric name -> value; None when the scorer failed."""
    error: ErrorInfo | None = None
    detail: str | None = None
    """Why a value is what it is; for format_valid, the validation error."""
    shard: str | None = Field(None, exclude_if=_absent)
    """In a run merged from shards (`benchrun-audit merge`): the shard (i/n) whose run made this line."""


class MetricSummary(Frozen):
    """One task x metric line of summary.json."""

    task: str
    metric: str
    n: Tally
    """Answers with a value (samples x repeats, less the errors)."""
    mean: Statistic | None
    """The mean over all answers."""
    stderr: Statistic | None
    """Standard error of the mean; with repeats, cluster-robust with each sample's answers one cluster (for one
    answer per sample: sample standard deviation / sqrt(n)); None with fewer than two samples."""
    errors: Tally
    """Answers with no value: the request or the scorer failed."""
    binary: bool | None = Field(None, exclude_if=_absent)
    """Whether every value is 0 or 1 (true when there is none), found by the tally that wrote the line; None in a
    summary.json written before benchrun recorded it (readers then scan the score records: benchrun.audit.lines)."""
    samples: Tally | None = Field(None, exclude_if=_absent)
    """With repeats: the samples with a valued answer, each one cluster of the standard error; absent otherwise."""
    pass_at_k: Statistic | None = Field(None, exclude_if=_absent)
    """0/1 metrics with repeats: the mean over samples of Chen et al.'s (2021) unbiased pass@k estimator, k the
    repeats (samples with fewer valued answers than k left out); absent otherwise."""
    majority_at_k: Statistic | None = Field(None, exclude_if=_absent)
    """0/1 metrics with repeats: the share of samples for which more than half of the answers score 1."""
    at_k_samples: Tally | None = Field(None, exclude_if=_absent)
    """Where pass@k and majority@k leave samples out (fewer than k valued answers): the samples they are over."""

    @property
    def proportion(self) -> bool:
        """Whether the mean is a share of independent 0/1 answers (a 0/1 metric, one answer per sample): what
        Wilson's interval and McNemar's test assume."""
        return bool(self.binary) and self.samples is None


class Latency(Frozen):
    """Wall time per answered request, in seconds (percentiles by the nearest-rank rule)."""

    p50: float
    p95: float
    max: float


class Speed(Frozen):
    """How fast the run went, from the responses asked in it (see benchrun.archive.speed): answers from the response cache
    (`cached_from`) or carried over by a retry (`carried_from`) are left out."""

    n: Tally
    """Answered responses the latency and token figures are from."""
    failed: Tally
    """Requests that got no answer: left out of latency and tokens, counted in samples_per_s."""
    latency_s: Latency | None
    tokens_per_s: float | None
    """Generation speed: completion tokens over the server's eval time, or over wall time (tokens_per_s_from)."""
    tokens_per_s_from: Literal["server", "wall"] | None
    prompt_tokens_per_s: float | None
    """Prompt tokens over the server's prompt_eval time; None when the server reports none."""
    load_s: float | None
    """The longest model load the server reported (the cold start); None when it reports none."""
    wall_s: float | None
    """From the first request to the last answer, summed over the run's sessions (a resume adds its own); None
    when a session's time is unknown (it was killed before it could write it)."""
    samples_per_s: float | None
    """(n + failed) / wall_s."""
    hosts: dict[str, Speed] | None = Field(None, exclude_if=_absent)
    """For a run over a list of servers: each server's figures, from the answers it gave (its wall time runs to its
    last answer; None after a resume); left out for one server."""


def one_line_each(lines: tuple[MetricSummary, ...]) -> tuple[MetricSummary, ...]:
    """summary.json's metric lines, one of each task's metric: a second line of one, which show printed beside the
    first and list's headline took, is refused."""
    seen: set[tuple[str, str]] = set()
    for line in lines:
        if (line.task, line.metric) in seen:
            raise ValueError(f"{line.task}/{line.metric} is given twice, where a summary gives each task's metric once")
        seen.add((line.task, line.metric))
    return lines


class Summary(Frozen):
    """summary.json: per task x metric statistics of scores.jsonl, and the run's speed."""

    schema_version: Version = RECORD_VERSION
    manifest_id: str
    model: str
    metrics: Annotated[tuple[Annotated[MetricSummary, AfterValidator(shares)], ...], AfterValidator(one_line_each)]
    repeats: int | None = Field(None, exclude_if=_absent)
    """k, the answers asked per sample, when more than one."""
    consistency: dict[str, float] | None = Field(None, exclude_if=_absent)
    """With repeats, per task: the share of samples whose k raw answers are identical (samples with a failed
    request left out)."""
    consistency_samples: dict[str, tuple[int, int]] | None = Field(None, exclude_if=_absent)
    """The tasks whose consistency leaves samples out -> (the samples it is over, the samples answered)."""
    speed: Speed | None = None
    """None in runs made before speed was recorded."""
    judges: dict[str, JudgeAgreement] | None = Field(None, exclude_if=_absent)
    """For a run with judges: each judge's agreement with itself and with the scorers."""


class FileDigest(Frozen):
    """A record file as it was when the run finished."""

    sha256: str
    size: int
    lines: int

    @classmethod
    def of(cls, data: bytes) -> FileDigest:
        return cls(sha256=hashlib.sha256(data).hexdigest(), size=len(data), lines=data.count(b"\n"))


class Counts(Frozen):
    """run.json's (and rescore.json's) counts of answers, each 0 or more (as summary.json's)."""

    samples: Tally
    """The answers the run asks for: the manifest's samples times its repeats."""
    responses: Tally = 0
    """Answers with a response record (answered or failed)."""
    request_errors: Tally = 0
    scorer_errors: Tally = 0
    format_invalid: Tally = 0
    cached: Tally = 0
    """Responses taken from the response cache in this run (`cached_from` set; not those a retry carried over)."""

    def text(self, unit: str = "samples") -> str:
        """`18/18 samples, 0 request errors, 0 scorer errors, 0 invalid formats[, 18 from the cache]` (`answers` for a
        run with repeats)."""
        cached = f", {self.cached} from the cache" if self.cached else ""
        return (f"{self.responses}/{self.samples} {unit}, {self.request_errors} request errors, "
                f"{self.scorer_errors} scorer errors, {self.format_invalid} invalid formats{cached}")


class Seal(Frozen):
    """seal.json, written last when a run ends: the digest of the final run.json, whose `files` digest the rest."""

    schema_version: Version = RECORD_VERSION
    run_id: RunId
    sealed_at: Moment
    run_json: FileDigest


class RunInfo(Frozen):
    """run.json: who, when, where and how the run went. Rewritten atomically as the run goes."""

    schema_version: Version = RECORD_VERSION
    run_id: RunId
    status: Status
    reason: str | None = None
    """Why a run failed or was interrupted."""
    started_at: Moment
    ended_at: Moment | None = None
    benchmark: str
    model: str
    manifest_id: str | None
    """None when the run failed before it compiled."""
    overrides: tuple[str, ...] = ()
    cwd: str | None = None
    """The working directory the run was started in; a relative task.path resolves against it."""
    runner: dict[str, Any]
    """The runner config as used (host, concurrency, timeouts, ...), secrets excluded."""
    identity: Identity = Field(default_factory=dict)
    """The model as the server describes it: digest, details, parameters, server version."""
    judge: JudgeInfo = Field(default_factory=dict, exclude_if=lambda judge: not judge)
    """For a run with judges: the judge model's identity (as `identity` is the model's), its runner config as used,
    and `allow_self` when it was let judge itself."""
    environment: Environment
    counts: Counts
    files: dict[DigestedFile, FileDigest] = Field(default_factory=dict)
    """sha256, size and lines of config.yaml, the record files, records.sha256 and summary.json when the run
    finished (the manifest is covered by its id, run.json by the seal)."""
    config_digest: FileDigest | None = Field(None, exclude_if=_absent)
    """config.yaml's digest as written at the start: what a run without `files` yet (killed) is checked against."""
    sweep: str | None = None
    """The sweep directory this run belongs to, if any."""
    label: str | None = None
    """A sweep job's name: the values of the overrides that differ between the sweep's jobs (`gemma3 temperature=0.7`)."""
    varied: dict[str, Any] = Field(default_factory=dict)
    """A sweep job's settings that differ between the sweep's jobs, dotted key -> value; empty for a single run."""
    history: History = ()
    """Earlier sessions of this run (resumes), oldest first."""
    parent: Lineage | None = None
    """For a retry: the run whose failed samples this run asked again."""
    shard: Shard | None = Field(None, exclude_if=_absent)
    """For a run of one part of the manifest (`shard=i/n`): which part; left out for a whole run."""
    merged: Merge | None = Field(None, exclude_if=_absent)
    """For a run merged from shard runs: the shards, as `parent` names a retry's run."""
