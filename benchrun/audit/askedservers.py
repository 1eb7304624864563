"""The servers a run's sessions asked, as its files say them: config.yaml's (its first session's), run.json's runner
(its last's) and each resume's or retry's in its history; a record naming the server that answered it (`host`) names
one of a list of them, as only a session asking a list writes one."""

from __future__ import annotations

from typing import Any

from benchrun.archive.reader import Run
from benchrun.core.errors import ArchiveError
from benchrun.core.layout import CONFIG, RESPONSES, RUN
from benchrun.core.records import ResponseRecord
from benchrun.core.serverurls import http_url

SERVER_KEYS = ("host", "base_url")
"""The keys a runner section names its server by (an Ollama's, an OpenAI-compatible server's)."""
SAID = f"{CONFIG}'s runner.host, {RUN}'s runner, each resume's or retry's --host"
"""Where a run's servers are said."""


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


def listed(servers: list[Any] | None) -> list[str] | None:
    """Each server of the lists in `servers` (as given, and as benchrun asks it: `http_url`); None when they cannot be
    told (None)."""
    if servers is None:
        return None
    urls = [url for given in servers if isinstance(given, list) for url in given if isinstance(url, str)]
    return [*urls, *map(http_url, urls)]


class ResponseHosts:
    """Verify's check of a run's responses' `host`: a response the run asked names a server of a list its sessions
    asked, or none."""

    def __init__(self, run: Run):
        self.servers = listed(asked(run, "runner", "host"))
        self.line = 0

    def misread(self, response: ResponseRecord) -> tuple[str, str] | None:
        """Why the run's next response line names a server no session of the run asked it of, as (file, why)."""
        self.line += 1
        if (self.servers is None or response.host is None or response.host in self.servers
                or any(given is not None for given in (response.carried_from, response.cached_from, response.shard))):
            return None
        return RESPONSES, f"line {self.line} gives host {response.host!r}, " + (
            f"none of the servers the run's sessions asked ({SAID})" if self.servers else
            f"where the run asked one server in every session ({SAID}): only a run asking a list of servers names the "
            "one that answered")
