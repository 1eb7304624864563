"""Secrets never reach a file, the console or a child process: refused where a user might give one, masked where a
server echoes one.

A config key that names a credential (api_key, token, secret, password, authorization, bearer, ...) at any depth,
a value that is one (`Bearer ...`, the value of a variable named like one, $OPENAI_API_KEY), or a URL with user info or a credential in its query string is refused before
anything is written. A credential benchrun itself sends (the API key read from the variable `api_key_env` names) is
registered here, and every file benchrun writes, every line it prints and every record it logs passes through
`SECRETS.scrub` (logs through `MaskingFilter`), so a server that echoes the key cannot put it in the archive; child
processes that do not send it get an environment without it (`SECRETS.child_env`). The registry is process-wide
because what must never be printed is a fact about the process.
"""

from __future__ import annotations

import json
import logging
import os
import re
from typing import Any, Iterator, Sequence
from urllib.parse import parse_qsl, quote, urljoin

from benchrun.core.errors import ConfigError

SECRET_WORDS = frozenset({"key", "apikey", "token", "secret", "password", "passwd", "passphrase", "authorization",
                          "auth", "bearer", "credential", "credentials", "cookie"})
"""Words of a key name that make it a credential's name (api_key, x-api-key, access_token, headers.Authorization)."""
QUERY_WORDS = frozenset({"sig", "signature", "code", "session", "sessionid", "sid", "jwt", "hmac"})
"""Words of a URL query parameter's name that make it a credential beside SECRET_WORDS: a signed URL's signature
(Azure's SAS `sig=`, S3's `X-Amz-Signature=`), Azure Functions' key (`code=`), a session."""
GLUED_WORDS = ("password", "passwd", "passphrase", "secret", "token")
"""Words that make a credential's name glued to the word before them too, as no other word ends in them
(`PGPASSWORD`, PostgreSQL's password variable; `HFTOKEN`, `CLIENTSECRET`)."""
CREDENTIAL_NAMES = frozenset({"MYSQL_PWD", "SNOWSQL_PWD", "ORACLE_PWD", "SSHPASS", "RABBITMQ_DEFAULT_PASS",
                              "GITHUB_PAT", "AZURE_DEVOPS_EXT_PAT", "BW_SESSION"})
"""Variables that tools read a credential from, named by a word too short to tell from others (`pwd` is `$PWD`'s, and
`OLDPWD`'s; `pass`, `ASKPASS`'s program; `pat`, a pattern's), so known by their whole names, in any case: MySQL's,
SnowSQL's and Oracle's images' passwords, sshpass's, RabbitMQ's image's, R's GitHub token, Azure DevOps CLI's personal
access token, Bitwarden's session key."""
NOT_SECRET = frozenset({"api_key_env"})
"""Keys whose value is the name of a credential, not the credential."""
URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>,{}]*")
"""A URL anywhere in a value (quoted, or an item of a list, as Hydra's override grammar allows)."""
USER_INFO = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#@]*@")
"""A URL whose authority holds a user name (and maybe a password)."""
ENV_READ = re.compile(r"\$\{\s*(?:oc\.env|env)\s*:\s*['\"]?([^\s,'\"}]+)")
"""OmegaConf's resolver of an environment variable, `${oc.env:NAME}` (`env` in older versions), and the name."""
MADE_AT_RUN_TIME = re.compile(r"\$\{\s*(?:oc\.env|env|oc\.decode)\s*:\s*['\"]?\$\{")
"""An environment variable read by a name another interpolation makes (`${oc.env:${oc.env:P}}`), or text another
makes resolved in turn (`${oc.decode:${oc.env:Q}}`): what it reads is known only as Hydra resolves it."""
BEARER = re.compile(r"(?i)^(bearer|basic|token)\s+\S")
MASK = "***"
KEY_CHARS = "A-Za-z0-9_-"
"""What API keys are made of: a key is masked where it stands as a whole token, not inside a longer run of these."""
MIN_KEY_CHARS = 20
"""The shortest key benchrun sends. A key is masked wherever it stands as a token in what benchrun writes, so a short
one ('x', 'EMPTY', 'ollama', 'lm-studio', 'sk-1234', the placeholders local servers take) would be masked in every
answer that says it, and the records destroyed; 20 characters are beyond the words of an answer, while every hosted
provider's keys are 32 characters or more (and 20 random key characters hold some 119 bits)."""


def secret_key(name: str, words_of_secrets: frozenset[str] = SECRET_WORDS) -> bool:
    """Whether a config key (or a URL's query parameter, with QUERY_WORDS too) names a credential."""
    if name in NOT_SECRET:
        return False
    if name.upper() in CREDENTIAL_NAMES:
        return True
    words = [w.lower() for w in re.split(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])", name) if w]
    return (bool(words_of_secrets.intersection(words)) or "apikey" in "".join(words)
            or any(word.endswith(GLUED_WORDS) for word in words))


def secret_value(value: Any) -> str | None:
    """Why a config value is a credential (a URL with user info or a credential in its query string, an
    Authorization value), or None."""
    if not isinstance(value, str):
        return None
    for url in URL.findall(value):
        if (why := _secret_url(url)) is not None:
            return why
    if BEARER.match(value) or SENT_BEARER.search(value):
        return "an Authorization header value"
    return environment_read(value) or environment_key(value) or assigned(value) or known_key(value)


RANDOM = "(?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Z])(?=[A-Za-z0-9_-]*[a-z])"
"""A run of key characters that holds a digit, a capital and a small letter, as random ones do (not `sk-learn-...`)."""
KNOWN_KEY = re.compile(f"(?<![{KEY_CHARS}])(sk-|hf_|gh[pousr]_|github_pat_|glpat-|xox[abprs]-|AIza){RANDOM}"
                       f"[{KEY_CHARS}]{{{MIN_KEY_CHARS},}}(?![{KEY_CHARS}])|(?<![A-Za-z0-9])(AKIA|ASIA)[0-9A-Z]{{16}}"
                       "(?![A-Za-z0-9])")
"""A key told by its provider's prefix, wherever no variable holds it (pasted from a dashboard): OpenAI's and
Anthropic's `sk-`, Hugging Face's `hf_`, GitHub's `ghp_` and `github_pat_`, GitLab's `glpat-`, Slack's `xoxb-`,
Google's `AIza`, and an AWS access key id's `AKIA`."""


def word_holding_key(words: Sequence[str]) -> str | None:
    """Why a command-line word holds a key outside an override's value (a key pasted as a word of its own, as an
    override's key or as a flag's value), which an error naming that word would show; or None."""
    for word in words:
        named = word if word.startswith("-") or "=" not in word else word.partition("=")[0]
        if (why := known_key(named) or environment_key(named)) is not None:
            return f"{why}, as a word of its own, an override's key or a flag's value"
    return None


def refuse_key_words(words: Sequence[str]) -> None:
    """Refuse, without the word, a benchrun-audit command line holding a key as a word (`word_holding_key`), which
    its error would print (`no run directory or run id 'hf_...'`), as benchrun's own command line is refused."""
    if (why := word_holding_key(words)) is not None:
        raise ConfigError(f"secrets are never taken from the command line, where an error naming the word would print "
                          f"it ({why}); put an API key in an environment variable", key="the command line")


def key_as_name(key: str, value: Any) -> str | None:
    """Why the value of a key that names a credential's variable (`api_key_env`) is the credential itself: a name that
    reads as a key (of a key's length, its characters random, RANDOM) that no variable has, so none would be sent and
    the key kept in config.yaml; or None."""
    if key not in NOT_SECRET or not isinstance(value, str) or value in os.environ or len(value) < MIN_KEY_CHARS:
        return None
    return ("a key given where the name of the variable holding it belongs: no variable of that name is set"
            if re.fullmatch(f"{RANDOM}[{KEY_CHARS}]+", value) else None)


def known_key(value: str) -> str | None:
    """Why `value` holds a key told by its prefix (KNOWN_KEY), or None."""
    if (found := KNOWN_KEY.search(value)) is not None:
        return f"a key by its prefix, {found[1] or found[2]}..."
    return None


ASSIGNED = re.compile(f"(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)=(['\"]?)([+/=.{KEY_CHARS}]{{{MIN_KEY_CHARS},}})\\2"
                      f"(?![+/=.{KEY_CHARS}])")
"""`NAME=value`, a value long enough to be a key (`export HF_TOKEN=hf_...` in a Slurm sweep's hydra.launcher.setup, an
`additional_parameters.export` of `ALL,HF_TOKEN=hf_...`), quoted or not, base64's `+/=` and a JWT's dots in it (an AWS
secret access key's `wJalrXUtnFEMI/K7MDENG/...`); not a `$NAME` read."""
OPTION = re.compile(f"(?<![A-Za-z0-9_-])--([A-Za-z][A-Za-z0-9_-]*)\\s+(['\"]?)([+/=.{KEY_CHARS}]{{{MIN_KEY_CHARS},}})\\2"
                    f"(?![+/=.{KEY_CHARS}])")
"""`--name value`, a command's option given a value long enough to be a key (`huggingface-cli login --token hf_...`
in a Slurm sweep's setup), as ASSIGNED's `--name=value` is."""
HEADER = re.compile(f"(?<![A-Za-z0-9_-])(?:-H|--header)(?:=|\\s+)\\\\?(['\"]?)([A-Za-z][A-Za-z0-9_-]*)\\s*:\\s*"
                    f"(?i:bearer\\s+|basic\\s+|token\\s+)?([+/=.{KEY_CHARS}]{{{MIN_KEY_CHARS},}})(?![+/=.{KEY_CHARS}])")
"""A command's header option (`curl -H`, `wget --header=`) giving a value long enough to be a key (`x-api-key: sk-ant-...`,
Anthropic's header; `api-key: ...`, Azure OpenAI's; `Authorization: sk-...` without a scheme), as ASSIGNED's
`NAME=value` is, its quote escaped or not (an override's `-H \\'x-api-key: ...\\'`); never `Name: value` in other text
(a system prompt's `Answer key: ...`)."""
SENT_BEARER = re.compile(f"(?i)authorization\\s*:\\s*(bearer|basic|token)\\s+['\"]?[+/=.{KEY_CHARS}]{{{MIN_KEY_CHARS},}}")
"""An Authorization header with its value inside a longer text (`curl -H 'Authorization: Bearer sk-...' ...` in a
setup); not the words alone (`explain basic internationalization`)."""
PATH_LIKE = re.compile(r"~[a-z0-9_-]*(/.*)?|\.{1,2}(/.*)?|/[A-Z]?[a-z0-9_.-]*(/.*)?|.*/.*\.[a-z][a-z0-9]{0,4}"
                       r"|[a-z0-9_./-]*/[a-z0-9_./-]*")
"""A value that is a file's path, not a key: from a home (`~/...`, `~user/...`) or here (`./...`, `../...`); from the
root through a folder named in lower case (`/home/...`, `/scratch/...`, `/Users/...`: one key in 64 of base64's
characters begins with `/`, an AWS secret access key's `/K7MDENG/bPxRfi...`, and its parts are of mixed case); ending
in a file's extension (`keys/sa.json`); or of lower-case names (`config/aws/credentials`). Not a value that only
begins with `~` or `.` (`~Pa55word`, `.Xk3sPq9`), nor one whose `.` ends in mixed case (`Xk3s/Pq9.Abc`)."""
PATH_NAMED = re.compile(r"(?i)(?:^|[_-])(?:path|file|dir|home|root|location|folder)$")
"""A name that says it holds a path (`HF_TOKEN_PATH`, `AWS_SHARED_CREDENTIALS_FILE`, `--key-file`): given one from the
root, home or here, under any folders (`/SNS/...`)."""

NAMES_A_SECRET = re.compile(r"(?i)(?:^|[_-])(?:id|name|ref|arn)$|^-*secret$")
"""A name that says its value names a secret kept elsewhere, not the secret (`--secret-id`, AWS's; `--secret`,
gcloud's; `SECRET_NAME`), given one that reads as a name (SECRET_NAME)."""
SECRET_NAME = re.compile(r"(?:[A-Za-z]{1,16}[0-9]*|[0-9]{1,4})(?:[-_./](?:[A-Za-z]{1,16}[0-9]*|[0-9]{1,4}))+")
"""A secret manager's name: words joined by `-`, `_`, `.` or `/` (`openai-api-key-production`, `prod/AppBeta/MySQL`),
each letters and then digits, if any (`v2`), where a key's characters are random (`hf_AbC3dE...`, `AKIA...`)."""


def assigned(value: str) -> str | None:
    """Why `value` gives a variable, a command's option or a header named like a credential its value (`export
    HF_TOKEN=hf_...`, `huggingface-cli login --token hf_...`, `curl -H 'x-api-key: sk-ant-...'`): a setup line, kept in multirun.yaml, each job's Hydra copies and the
    job's script, as `hydra.job.env_set.HF_TOKEN=...` would be, which is refused by its name; or None."""
    given = [(name, key) for name, _, key in ASSIGNED.findall(value)] + \
        [(f"--{name}", key) for name, _, key in OPTION.findall(value)] + \
        [(name, key) for _, name, key in HEADER.findall(value)]
    for name, key in given:
        if secret_key(name) and not _named(name, key):
            return f"a value given to {name}, a credential's name"
    return None


def _named(name: str, value: str) -> bool:
    """Whether `value`, given to `name` in a command, is where a credential is kept, not the credential: a file's
    path, or a secret manager's name for it (`gcloud secrets versions access latest --secret=openai-api-key-prod`)."""
    return a_path(name, value) or bool(NAMES_A_SECRET.search(name) and SECRET_NAME.fullmatch(value))


def a_path(name: str, value: str) -> bool:
    """Whether `value`, given to `name`, is a file's path, not a credential (GOOGLE_APPLICATION_CREDENTIALS given
    `/home/u/sa.json`, in a setup line's `export` or as `hydra.job.env_set`)."""
    return bool(PATH_LIKE.fullmatch(value) or (PATH_NAMED.search(name) and value[:1] in ("/", "~", ".")))


def environment_read(value: str) -> str | None:
    """Why `value` reads a credential through OmegaConf's `${oc.env:NAME}` (a variable named like one, or holding one:
    `x${oc.env:V}` too), which Hydra resolves into the run directory's name and `--cfg job --resolve` prints."""
    if MADE_AT_RUN_TIME.search(value):
        return ("an environment variable read by a name, or text resolved, that another interpolation makes "
                "(${oc.env:${...}}, ${oc.decode:${...}}), which no check sees before Hydra resolves it")
    for name in ENV_READ.findall(value):
        if secret_key(name) or environment_key(os.environ.get(name, "")) or known_key(os.environ.get(name, "")):
            return f"${{oc.env:{name}}}, which reads the credential in ${name}"
    return None


def environment_key(value: str) -> str | None:
    """Why `value` holds, as a whole token, the value of an environment variable named like a credential
    ($OPENAI_API_KEY, $HF_TOKEN, ...) and long enough to be one (a key pasted where a name or a model was meant)."""
    for name, secret in environment_credentials():
        if secret in value and re.search(f"(?<![{KEY_CHARS}]){re.escape(secret)}(?![{KEY_CHARS}])", value):
            return f"the value of ${name}"
    return None


def environment_credentials() -> list[tuple[str, str]]:
    """The environment's variables named like a credential, or named by an `api_key_env` (`SECRETS.declare`), whose
    value is long enough to be one."""
    return [(name, value) for name, value in os.environ.items()
            if len(value) >= MIN_KEY_CHARS and (secret_key(name) or name in SECRETS.variables)]


def said_url(url: str, base: str = "http://host/") -> str:
    """`url` as a line may quote it: as given, or as `scheme://...` where it holds a credential (`secret_value`: user
    info, or one in its query string), as a URL the user gives is refused for; a relative one (a server's redirect to
    `//user:pass@host/`) read against `base`."""
    try:
        whole = urljoin(base, url)
    except ValueError:  # an authority urllib cannot split (`http://[::1`): read as it is
        whole = url
    return url if secret_value(whole) is None else f"{whole.split('://')[0]}://..."


def said_urls(text: str) -> str:
    """`text` (a server's message quoted in an error) with each URL in it said as `said_url` says it."""
    return URL.sub(lambda url: said_url(url[0]), text) if "://" in text else text


def _secret_url(url: str) -> str | None:
    if USER_INFO.match(url):
        return "a URL with a user name or password in it"
    named = [name for text in re.split("[?#]", url)[1:] for name, given in parse_qsl(text)
             if secret_key(name, SECRET_WORDS | QUERY_WORDS)]
    return f"a URL with a credential in its query string: {named[0]}=" if named else None


def found(data: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(key path, why) for every credential in a config tree: a credential's key name, a credential value, or a key
    itself as a key's name (its path then the mapping's, which an error shows)."""
    if isinstance(data, dict):
        for key, value in data.items():
            where = f"{path}.{key}" if path else str(key)
            if (held := known_key(str(key)) or environment_key(str(key))) is not None:  # said without the key
                yield path or "(the top level)", f"{held}, as a key's name"
            elif secret_key(str(key)) and value not in (None, "", {}, []) and not (
                    isinstance(value, str) and a_path(str(key), value)):
                yield where, "a credential's name"
            elif (why := key_as_name(str(key), value)) is not None:
                yield where, why
            else:
                yield from found(value, where)
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from found(value, f"{path}[{index}]")
    elif (why := secret_value(data)) is not None:
        yield path, why


def echoed_forms(key: str) -> set[str]:
    """The key as a server may echo it: as sent, percent-encoded (`~` too or not, hex digits in either case),
    JSON-escaped (a key holding `"` or `\\`); and each as a JSON string holds it, since answers are masked as JSON
    (`runners.base`)."""
    percent = {quote(key, safe=""), quote(key, safe="").replace("~", "%7E")}  # `~` left as it is, or not (RFC 2396)
    once = {key, *percent, *(re.sub("%[0-9A-F]{2}", lambda digits: digits[0].lower(), form) for form in percent)}
    once |= _json_written(key)
    once |= {_escaped(form) for form in once}
    return once | {_escaped(form) for form in once}


def _json_written(key: str) -> set[str]:
    """The key as a JSON encoder may write it, a server quoting it in a body benchrun quotes as it came: `/` as `\\/`
    (PHP's json_encode), or every character but letters, digits, `-` and `_` as `\\u002B` (.NET's default encoder;
    Go's for `<`, `>`, `&`), its hex digits in either case."""
    coded = re.sub(f"[^{KEY_CHARS}]", lambda char: f"\\u{ord(char[0]):04X}", key)
    return {key.replace("/", "\\/"), coded, re.sub(r"\\u00([0-9A-F]{2})", lambda u: u[0].lower(), coded)}


def _escaped(text: str) -> str:
    return json.dumps(text)[1:-1]


class Secrets:
    """The credentials this process sends; `scrub` masks each of them, as a whole token, in text or bytes."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._encoded: tuple[bytes, ...] = ()
        self._text: re.Pattern[str] | None = None
        self._bytes: re.Pattern[bytes] | None = None
        self.variables: set[str] = set()

    def declare(self, *variables: Any) -> None:
        """Take each variable an `api_key_env` names for a credential's, whatever its name (`environment_key`)."""
        self.variables |= {name.strip() for name in variables if isinstance(name, str) and name.strip()}

    def register_key(self, variable: str, setting: str | None = "runner.api_key_env") -> str | None:
        """The API key in $`variable` (None when unset or empty), registered to be masked; one too short to mask
        safely is refused (a ConfigError naming the `setting` that names the variable, if one does)."""
        key = os.environ.get(variable) or None
        if key is not None:
            _refuse_unsendable(key, variable, setting)
            _refuse_path(key, variable, setting)
            _refuse_short(key, variable, setting)
            self._values |= echoed_forms(key)
            self._compile()
        return key

    def _compile(self) -> None:
        """One pattern for every key (the longest first), each matched as a whole token, for text and for bytes."""
        whole = "|".join(re.escape(value) for value in sorted(self._values, key=len, reverse=True))
        self._text = re.compile(f"(?<![{KEY_CHARS}])(?:{whole})(?![{KEY_CHARS}])")
        self._bytes = re.compile(self._text.pattern.encode())
        self._encoded = tuple(value.encode() for value in self._values)

    def clear(self) -> None:
        """Forget them all: one process running several benchrun commands (benchrun.testing.inprocess) starts each
        with none, as a new process would."""
        self._values.clear()
        self.variables.clear()
        self._encoded, self._text, self._bytes = (), None, None

    def scrub(self, text: str) -> str:
        if self._text is None or not any(value in text for value in self._values):
            return text
        return self._text.sub(MASK, text)

    def scrub_bytes(self, data: bytes) -> bytes:
        if self._bytes is None or not any(value in data for value in self._encoded):
            return data
        return self._bytes.sub(MASK.encode(), data)

    def child_env(self) -> dict[str, str]:
        """The environment a child process gets (the scorer process, the embedded engine): this one's, without any
        variable holding a registered key."""
        return {name: value for name, value in os.environ.items() if self.scrub(value) == value}

    def __bool__(self) -> bool:
        return bool(self._values)


SECRETS = Secrets()


SENT_CHARS = re.compile("[!-~]+")
"""What a key sent in an HTTP header is made of: visible ASCII, no space, no line break."""
CHAR_NAMES = {"\n": "a line break (\\n)", "\r": "a carriage return (\\r)", "\t": "a tab", " ": "a space"}


def _refuse_unsendable(key: str, variable: str, setting: str | None) -> None:
    """Refuse a key holding what no key holds (a line break read from a key file with it, a space, a character beyond
    ASCII): sent, it was quoted whole (escaped) in the transport's error, which masking the key does not match, or
    raised a traceback; one line naming the character, never the key."""
    if SENT_CHARS.fullmatch(key):
        return
    at = next(i for i, char in enumerate(key) if not SENT_CHARS.fullmatch(char))
    char = key[at]
    named = CHAR_NAMES.get(char) or f"the character U+{ord(char):04X}"
    raise ConfigError(f"${variable} holds a key with {named} at character {at + 1} of {len(key)}, which no API key "
                      f"holds (a key is sent in an HTTP header: visible ASCII characters only); set {variable} to the "
                      "key alone (a key read from a file often ends in a line break)", key=setting)


def _refuse_path(key: str, variable: str, setting: str | None) -> None:
    """Refuse a path given for the key (`$OPENAI_API_KEY` set to `~/keys/openai.txt`, the file meant; `$PWD`, a folder,
    named for the variable): it was sent as the key and masked wherever the path stood; never the value said."""
    if key[:1] in ("/", "~", ".") and PATH_LIKE.fullmatch(key) or os.path.isfile(os.path.expanduser(key)):
        folder = os.path.isdir(os.path.expanduser(key))
        fix = "name the variable that holds the key" if folder else \
            f"set {variable} to the key itself, the file's contents: export {variable}=\"$(cat PATH)\""
        raise ConfigError(f"${variable} holds a {'folder' if folder else 'file'}'s path, not a key (a key is sent as "
                          f"it is, in an HTTP header); {fix}", key=setting)


def _refuse_short(key: str, variable: str, setting: str | None) -> None:
    if len(key) < MIN_KEY_CHARS:
        raise ConfigError(f"${variable} holds a {len(key)}-character key, too short to mask safely (benchrun masks the "
                          f"key wherever it stands in what it writes, and one under {MIN_KEY_CHARS} characters can be "
                          f"an answer's own text); unset {variable} for a server that needs no key, or use a real key",
                          key=setting)


class MaskingFilter(logging.Filter):
    """Masks every registered credential in a log record (its message, traceback and stack), for the handlers of
    Hydra's job logging (conf/config.yaml, `hydra.job_logging.filters`, made by dictConfig's `()` factory)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if SECRETS:
            record.msg, record.args = SECRETS.scrub(record.getMessage()), None
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = record.exc_text and SECRETS.scrub(record.exc_text)
            record.stack_info = record.stack_info and SECRETS.scrub(record.stack_info)
        return True
