"""What kind of failure a request's error is, for fail-fast: the model's requests (`executor`) and a judge's
(`judging`) are counted alike."""

from __future__ import annotations

import re

from benchrun.core.records import ErrorInfo
from benchrun.core.settings import RunnerConfig

HTTP_STATUS = re.compile(r"^HTTP (\d{3})\b")
OWN = re.compile(r"^(ContextFull|ChatRefused|GrammarRefused): ")
"""The embedded engine's refusal of a chat longer than the model's context (`runners.local_engine.ContextFull`): the
context is runner.options.num_ctx (judge.options.num_ctx), which the manifest pins, so no mending of the setup that a
resume could ask with changes it; and of a chat the model's template will not render (`ChatRefused`): the chat is
the manifest's, the template the model's, which a resume may not change; and of a format whose JSON schema the
engine cannot make a grammar of (`runners.local_grammar.GrammarRefused`): the format is the manifest's."""


def failure_kind(error: ErrorInfo) -> tuple[str, str | None] | None:
    """What kind of failure `error` is: its type and HTTP status, not its text (which names the sample, the
    server's page, ...): failures of one kind sample after sample are a broken setup. None for the sample's own,
    whatever the setup (`OWN`): however many come in a row, they are those samples' errors, or a run of them could
    never be finished."""
    if error.type == "Refused" and OWN.match(error.message):
        return None
    status = HTTP_STATUS.match(error.message)
    return error.type, status[1] if status else None


def longer(error: ErrorInfo, config: RunnerConfig) -> tuple[str, str] | None:
    """For a limit the failures may be the setting's, not the setup's: when it holds, and the `--set` of a resume that
    doubles it: a request that timed out (`runner.timeout_s=240`: a server which is only slow), an answer longer than
    max_response_bytes (`runner.max_response_bytes=16777216`: answers which are only long, a limit a resume can only
    change so); None for any other failure."""
    if error.type == "TimeoutError":
        return "the server is only slow", f"{config.key('timeout_s')}={2 * config.timeout_s:g}"
    if error.type == "TooLarge":
        return "the answers are only long", f"{config.key('max_response_bytes')}={2 * config.max_response_bytes}"
    return None
