"""One run asked of a list of servers (`runner.host=[...]`, `runner.base_url=[...]`): every server identified and
refused unless all serve the model by one digest; each request sent to the live server with the fewest outstanding
(at most `runner.concurrency` each); a server lost mid-run left out, its requests asked of the others."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

import httpx

from benchrun.console import output
from benchrun.core.errors import ConfigError, RunnerError, ServerLost
from benchrun.core.manifest import Message
from benchrun.core.records import Attempt, Completion, ErrorInfo
from benchrun.core.recordvalues import model_digest, said_of_weights, short_digest, weights_said
from benchrun.core.settings import RunnerConfig
from benchrun.core.text import name_listed, one_line
from benchrun.execute.asking import Asker, Outcome
from benchrun.execute.boundary import TooLarge
from benchrun.execute.failurekind import failure_kind
from benchrun.execute.runners.base import Runner, ServerChanged

UNSPECIFIED = {"0.0.0.0": "127.0.0.1", "::": "::1"}
"""The unspecified addresses, each as the loopback address a connection to it reaches (on Linux and macOS)."""


def reached_address(address: str) -> str:
    """The address a connection to `address` reaches: an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`, which the
    system connects to over IPv4) as its IPv4 address, an unspecified one as the loopback it reaches."""
    found = ipaddress.ip_address(address.split("%")[0])
    mapped = found.ipv4_mapped if isinstance(found, ipaddress.IPv6Address) else None
    address = address if mapped is None else str(mapped)
    return UNSPECIFIED.get(address, address)


@dataclass(eq=False)
class Host:
    """One server of the list: its URL, its runner, and the requests it has outstanding."""

    url: str
    runner: Runner
    outstanding: int = 0
    lost: bool = False
    resting_until: float = 0.0
    """Its last request failed there, after its retries: until this time (monotonic) it is asked only by a request
    that every other live server has failed."""


class HostPool:
    """The runner of a list of servers: each server's own runner, one config (the list's)."""

    def __init__(self, config: RunnerConfig, hosts: list[tuple[str, Runner]]):
        self.config = config
        self.hosts = [Host(url, runner) for url, runner in hosts]

    async def identify(self) -> dict[str, Any]:
        """Every server identified; refused when their digests differ. The first server's identity, with every
        server's (`hosts`); server versions that differ are warned of."""
        await self._one_each()
        identities = await asyncio.gather(*(host.runner.identify() for host in self.hosts), return_exceptions=True)
        if failed := next((found for found in identities if isinstance(found, BaseException)), None):
            raise failed  # the first server's refusal, in list order; the others were all heard out
        pairs = [(host.url, identity) for host, identity in zip(self.hosts, identities)]
        _same_model(self.config.key(self.config.server_key), self.config.model, pairs)
        _same_dialect(self.config.key(self.config.server_key), self.config, pairs)
        if (versions := _versions(pairs)) is not None:
            output.warning(versions)
        return {**identities[0], "hosts": [{"host": url, **identity} for url, identity in pairs]}

    async def digests_now(self) -> dict[str, str | None]:
        """What each server not lost serves the model by now; a server that cannot say is left out, one that says it
        changed (ServerChanged) raised."""
        found = await asyncio.gather(*(host.runner.digests_now() for host in self.hosts if not host.lost),
                                     return_exceptions=True)
        if changed := next((each for each in found if isinstance(each, ServerChanged)), None):
            raise changed
        return {url: digest for each in found if not isinstance(each, BaseException) for url, digest in each.items()}

    async def seen_whole(self, answered: Completion) -> Completion:
        """`answered` (the response cache's) as each server not lost takes an answer of its own (`Runner.seen_whole`):
        refused where one refuses it, for which of them gave it cannot be told."""
        for host in self.hosts:
            if not host.lost:
                await host.runner.seen_whole(answered)
        return answered

    async def loaded(self, identity: dict[str, Any]) -> dict[str, Any]:
        """`identity` with what each server said of the model as loaded, in its entry of `hosts` (the first's at the
        top, as `identify` gives it); as it is where its entries are not this list's servers. Context lengths that
        differ are warned of."""
        entries = identity.get("hosts")
        if not isinstance(entries, list) or [e.get("host") for e in entries] != [h.url for h in self.hosts]:
            return identity
        each = await asyncio.gather(*(host.runner.loaded(entry) for host, entry in zip(self.hosts, entries)))
        if (contexts := _contexts(self.config.key(self.config.server_key), each)) is not None:
            output.warning(contexts)
        return {**identity, **{key: value for key, value in each[0].items() if key != "host"}, "hosts": list(each)}

    async def _one_each(self) -> None:
        """Refuse two URLs of the list that reach one server (`localhost` and `127.0.0.1`, a name and its address,
        `0.0.0.0` and `127.0.0.1`): the same port and path (as requests are sent to it: `/.` is `/`) at an address
        both reach. A name that does not resolve is left to each server's preflight to report."""
        seen: list[tuple[str, Reached]] = []
        for host in self.hosts:
            if (reached := await reached_at(host.url)) is None:
                continue
            for url, known in seen:
                if (shared := _shared(reached, known)) is not None:
                    raise ConfigError(f"{self.config.key(self.config.server_key)}: '{host.url}' is '{url}' again (both "
                                      f"reach {shared} port {reached.port}): list each server once", file="config")
            seen.append((host.url, reached))

    def request_settings(self) -> dict[str, Any]:
        return self.hosts[0].runner.request_settings()

    def format_sent(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        return self.hosts[0].runner.format_sent(schema)

    async def aclose(self) -> None:
        for host in self.hosts:
            await host.runner.aclose()

    def public_config(self) -> dict[str, Any]:
        key = self.config.server_key
        return {**self.hosts[0].runner.public_config(), key: [host.url for host in self.hosts]}


@dataclass(frozen=True)
class Reached:
    """Where the requests to a URL go: the addresses its host resolves to (an unspecified one as the loopback it
    reaches), its port, and its path as requests are sent to it (`/.` is `/`)."""

    addresses: frozenset[str]
    port: int
    path: str


async def reached_at(url: str) -> Reached | None:
    """Where the requests to `url` go; None when its host name does not resolve (each server's preflight says so)."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        found = await asyncio.get_running_loop().getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return None
    return Reached(frozenset(reached_address(address[4][0]) for address in found), port,
                   httpx.URL(url).path.rstrip("/"))


def _shared(one: Reached, other: Reached, paths: bool = True) -> str | None:
    """An address at which `one` and `other` are one server (the same port, and path unless not `paths`), else
    None."""
    same = one.port == other.port and (one.path == other.path or not paths)
    shared = one.addresses & other.addresses if same else set()
    return min(shared) if shared else None


async def one_server_among(urls: list[str], others: list[str], paths: bool = True) -> bool:
    """Whether a server of `urls` is a server of `others`, under any of its names (`localhost`, `127.0.0.1`); not
    `paths`: whatever the path (one server's two APIs, Ollama's own and its OpenAI-compatible /v1)."""
    if set(urls) & set(others):
        return True
    ones = await asyncio.gather(*map(reached_at, urls))
    theirs = await asyncio.gather(*map(reached_at, others))
    return any(_shared(one, other, paths) is not None for one in ones if one for other in theirs if other)


def _same_model(key: str, model: str, identities: list[tuple[str, dict[str, Any]]]) -> None:
    """Refuse servers that serve `model` by different digests (or, without digests, under different ids, saying of
    its weights different things, `weights_said`, or whose answers to the preflight's probe named different models,
    `answers_as`: two gateways that serve one name from two models)."""
    digests = [model_digest(identity) or json.dumps([identity.get("name"), weights_said(identity),
                                                     identity.get("answers_as")], sort_keys=True)
               for _, identity in identities]
    if len(set(digests)) > 1:
        each = ", ".join(f"{url} {_digest(identity)}" for url, identity in identities)
        raise RunnerError(f"the servers of {key} serve different models as '{model}': {each}; serve the same "
                          "model on each, or leave the odd one out of the list")


def _same_dialect(key: str, config: RunnerConfig, identities: list[tuple[str, dict[str, Any]]]) -> None:
    """Refuse servers that were found to take the schema in different structured-output dialects (runner.structured
    =auto, each server probed): one run asks in one dialect, as run.json and the response cache's keys say."""
    dialects = {url: identity.get("structured_dialect") for url, identity in identities}
    if len(set(dialects.values())) > 1:
        each = ", ".join(f"{url} {dialect}" for url, dialect in dialects.items())
        raise RunnerError(f"the servers of {key} take the response schema in different structured-output dialects: "
                          f"{each}; set {config.key('structured')} to one that every server takes, or leave the odd "
                          "one out of the list")


def _digest(identity: dict[str, Any]) -> str:
    digest = model_digest(identity)
    if digest:
        return f"digest {short_digest(digest)}"
    answers = f", answering as '{one_line(str(identity['answers_as']), 80)}'" if identity.get("answers_as") else ""
    return f"as '{identity.get('name')}' ({said_of_weights(identity)}{answers})"


def _versions(identities: list[tuple[str, dict[str, Any]]]) -> str | None:
    """What to warn of servers whose versions differ (None when they agree)."""
    if len({identity.get("server_version") for _, identity in identities}) < 2:
        return None
    each = ", ".join(f"{url} {_said(identity.get('server_version'))}" for url, identity in identities)
    return f"the servers run different versions: {each}; the same model may answer differently on each (recorded)"


def _contexts(key: str, entries: list[dict[str, Any]]) -> str | None:
    """What to warn of servers that said they loaded the model with different context lengths (None when those that
    said agree): a prompt one holds whole another cuts, or refuses."""
    if len({length for entry in entries if (length := _context_of(entry)) is not None}) < 2:
        return None
    each = ", ".join(f"{entry['host']} {_said(_context_of(entry))}" for entry in entries)
    return (f"the servers of {key} loaded the model with different context lengths: {each}; the same model may "
            "answer differently on each (recorded)")


def _context_of(entry: dict[str, Any]) -> int | None:
    """The context length a server of the list said it serves the model with: Ollama's (`/api/ps`, `context_length`),
    or an OpenAI-compatible server's model entry's `max_model_len` (vLLM's, SGLang's), a JSON integer."""
    details = entry.get("details")
    said = entry.get("context_length", details.get("max_model_len") if isinstance(details, dict) else None)
    return said if type(said) is int else None


def _said(value: Any) -> str:
    """What a server said of itself (its version, its context length), as a warning names it: `-` where it said
    nothing, not Python's `None`; a text as a list says a name (`'0.12.6 '`, told from `0.12.6`)."""
    return "-" if value is None else name_listed(value) if isinstance(value, str) else str(value)


REST_S = 10.0
"""How long a server of a list whose request failed there is left out of the others' requests."""

Lost = Callable[[str, str, int], None]
"""Told of a server lost mid-run: its URL, why, and how many servers of the list are left."""


def warned(host: str, why: str, left: int) -> None:
    """A server of the list lost mid-run, on the console, while others are left (the last one's loss stops the run,
    which says so)."""
    if left:
        output.warning(f"{why}; its requests go to the others")


class Dispatch:
    """Where the requests of the model (or of the judge: `server` and `doing` name it) go. One server: straight to its
    asker. A list: to the live server with the fewest requests outstanding (at most `concurrency` each); a request
    that failed at one server (after its retries there: a 5xx, a 4xx such as a model removed from that server alone)
    is asked of a live server it has not tried, its failed attempts kept (not one failed for its answer, which another
    server of the model gives alike: too long, `_answers_own`); a server whose request found it
    unreachable after its retries is lost (`on_lost` is told), and the request is asked of another; when none is
    left, ServerLost."""

    def __init__(self, runner: Runner, on_lost: Lost = warned, server: str = "the model server",
                 doing: str = "answering"):
        self.hosts = list(runner.hosts) if isinstance(runner, HostPool) else []
        self.named = bool(self.hosts)
        """Whether responses name the server that answered (a list of servers)."""
        self._single = None if self.named else Asker(runner, server, doing)
        each = "the server" if server == "the model server" else server
        self._askers = {host: Asker(host.runner, f"{each} {host.url}", doing) for host in self.hosts}
        self._limit = at_once(runner)
        self._on_lost = on_lost
        self._free = asyncio.Condition()
        self._last_loss = ""

    @property
    def width(self) -> int:
        """How many requests may be in flight: `concurrency` per server."""
        return self._limit * max(1, len(self.hosts))

    async def ask(self, messages: list[Message], schema: dict[str, Any], seed: int | None,
                  what: str) -> tuple[Outcome, str | None]:
        """The outcome of asking, and the server that answered (None for a single server)."""
        if self._single is not None:
            return await self._single.ask(messages, schema, seed, what), None
        failed: list[Attempt] = []
        tried: set[Host] = set()
        while True:
            host = await self._acquire(tried)
            started = time.perf_counter()
            try:
                outcome = await self._askers[host].ask(messages, schema, seed, what)
            except ServerLost as err:
                failed += [_at(host, attempt) for attempt in err.attempts]
                await self._lose(host, err)
                continue
            finally:
                await self._release(host)
            tried.add(host)
            answered = outcome.completion is not None or _answers_own(outcome.error)
            host.resting_until = 0.0 if answered else time.monotonic() + REST_S
            if not answered and any(not h.lost and h not in tried for h in self.hosts):
                failed += [_at(host, attempt) for attempt in outcome.failures]
                continue
            if failed:
                outcome.host_seconds = time.perf_counter() - started
            outcome.failures = _numbered([*failed, *outcome.failures])
            return outcome, host.url

    async def _acquire(self, tried: set[Host]) -> Host:
        """The live server with the fewest outstanding, of those the request has not tried if any is live, and of
        those of them not resting if any is."""
        async with self._free:
            while True:
                live = [host for host in self.hosts if not host.lost]
                if not live:
                    raise ServerLost(f"lost every server of the list, the last: {self._last_loss}")
                live = [host for host in live if host not in tried] or live
                now = time.monotonic()
                live = [host for host in live if host.resting_until <= now] or live
                free = [host for host in live if host.outstanding < self._limit]
                if free:
                    host = min(free, key=lambda h: h.outstanding)
                    host.outstanding += 1
                    return host
                await self._free.wait()

    async def _release(self, host: Host) -> None:
        async with self._free:
            host.outstanding -= 1
            self._free.notify()

    async def _lose(self, host: Host, err: ServerLost) -> None:
        async with self._free:
            if not host.lost:
                host.lost, self._last_loss = True, str(err)
                left = sum(not h.lost for h in self.hosts)
                self._on_lost(host.url, f"{err}; {left} of {len(self.hosts)} servers left", left)
            self._free.notify_all()


def _answers_own(error: ErrorInfo | None) -> bool:
    """Whether a request failed for its answer, which the server gave: longer than max_response_bytes (TooLarge), or
    the sample's own whatever the server (`failure_kind` None); another server of one model gives the same."""
    return error is not None and (error.type == TooLarge.__name__ or failure_kind(error) is None)


def at_once(runner: Runner) -> int:
    """How many requests are asked of one server at once: runner.concurrency, or fewer for a runner that answers
    fewer (its `parallel`: runner=local makes one generation at a time, and a request waiting for another's was
    timed by runner.timeout_s from before its own began, so a run of runner.concurrency=8 failed requests the engine
    never started, `no answer within ... s`, and stopped as a broken setup)."""
    parallel = getattr(runner, "parallel", None)
    return runner.config.concurrency if parallel is None else min(parallel, runner.config.concurrency)


def _at(host: Host, attempt: Attempt) -> Attempt:
    """A failed attempt at a server since lost, its error naming the server."""
    error = ErrorInfo(type=attempt.error.type, message=f"at {host.url}: {attempt.error.message}")
    return attempt.model_copy(update={"error": error})


def _numbered(attempts: list[Attempt]) -> list[Attempt]:
    return [a if a.number == i else a.model_copy(update={"number": i}) for i, a in enumerate(attempts, 1)]
