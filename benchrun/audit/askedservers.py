"""The servers a run's sessions asked, as its files say them: config.yaml's (its first session's), run.json's runner
(its last's) and each resume's or retry's in its history; a record naming the server that answered it (`host`) names
one of a list of them, as only a session asking a list writes one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchrun.archive.reader import Run
from benchrun.core.errors import ArchiveError
from benchrun.core.layout import CONFIG, RESPONSES, RUN
from benchrun.core.records import JudgementRecord, ResponseRecord
from benchrun.core.serverurls import http_url

SERVER_KEYS = ("host", "base_url")
"""The keys a runner section names its server by (an Ollama's, an OpenAI-compatible server's)."""


@dataclass(frozen=True)
class Servers:
    """The servers a record asked by some session may name as the one that answered it (`host`): each of the lists
    its sessions asked (none: one server in every session; None: it cannot be told)."""

    urls: frozenset[str] | None
    who: str
    """Who asked them: `the run`, `the run's judge`."""
    said: str
    """Where they are said: `config.yaml's runner.host, ...`."""
    asker: str
    """Whom a list of servers is given to: `a run`, `a judge`."""
    sessions: str = " in every session"

    def unasked(self, record: ResponseRecord | JudgementRecord) -> str | None:
        """Why `record`, asked by one of its file's sessions (not carried over, from the cache or a shard's), names a
        server none of them asked; None when it does not (or it cannot be told)."""
        if (self.urls is None or record.host is None or record.host in self.urls
                or any(given is not None for given in (record.carried_from, record.cached_from, record.shard))):
            return None
        if self.urls:
            return f"gives host {record.host!r}, none of the servers {self.who} asked ({self.said})"
        return (f"gives host {record.host!r}, where {self.who} asked one server{self.sessions} ({self.said}): only "
                f"{self.asker} asking a list of servers names the one that answered")


def model_servers(run: Run) -> Servers:
    """The servers the run's sessions asked its model."""
    return Servers(listed(asked(run, "runner", "host")), "the run",
                   f"{CONFIG}'s runner.host, {RUN}'s runner, each resume's or retry's --host", "a run")


def judge_servers(run: Run) -> Servers:
    """The servers the run's sessions asked its judge: its own, or the model's (a judge naming none asks those)."""
    return Servers(_joined(listed(asked(run, "judge", "judge_host")), model_servers(run).urls), "the run's judge",
                   f"{CONFIG}'s judge.host, {RUN}'s judge, each resume's or retry's --judge-host", "a judge")


def rejudge_servers(run: Run, judge: dict[str, Any], rescore: str) -> Servers:
    """The servers a rescore's `judge` (its rescore.json's, the rescore in folder `rescore`) asked, or the run's
    model's (a judge naming none asks those)."""
    return Servers(_joined(listed(_servers(judge.get("runner"))), model_servers(run).urls), "the rescore's judge",
                   f"{rescore}'s judge.runner", "a judge", "")


def asked(run: Run, section: str, flag: str) -> list[Any] | None:
    """The servers each session of the run gave `section` (`runner`, `judge`): config.yaml's, run.json's (its
    `runner`, or its judge's), then each of its history's `flag` (--host, --judge-host); None when config.yaml
    cannot say."""
    try:
        given = run.config.get(section)
    except ArchiveError:
        return None
    used = run.info.runner if section == "runner" else run.info.judge.get("runner")
    return [*_servers(given), *_servers(used), *(session.get(flag) for session in run.info.history)]


def _servers(section: Any) -> list[Any]:
    return [section.get(key) for key in SERVER_KEYS] if isinstance(section, dict) else []


def listed(servers: list[Any] | None) -> frozenset[str] | None:
    """Each server of the lists in `servers` (as given, and as benchrun asks it: `http_url`); None when they cannot be
    told (None). A set: each record is looked up in it, however many servers a run.json lists."""
    if servers is None:
        return None
    urls = [url for given in servers if isinstance(given, list) for url in given if isinstance(url, str)]
    return frozenset((*urls, *map(http_url, urls)))


def _joined(first: frozenset[str] | None, second: frozenset[str] | None) -> frozenset[str] | None:
    return None if first is None or second is None else first | second


class ResponseHosts:
    """Verify's check of a run's responses' `host`, line by line (`Servers.unasked`)."""

    def __init__(self, run: Run):
        self.servers = model_servers(run)
        self.line = 0

    def misread(self, response: ResponseRecord) -> tuple[str, str] | None:
        """Why the run's next response line names a server no session of the run asked it of, as (file, why)."""
        self.line += 1
        why = self.servers.unasked(response)
        return None if why is None else (RESPONSES, f"line {self.line} {why}")
