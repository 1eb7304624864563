"""The fortieth hostile pass of issue 19, the asking side.

1. what a scorer's call registered into a table of the standard library, in place (`sqlite3.register_adapter(float,
   str)`: every later call's floats stored as text; an encoding's alias in `encodings.aliases`, and the codec it found,
   which codecs' cache kept; `copy._deepcopy_dispatch`, `urllib.parse.uses_relative`,
   `shutil.register_archive_format`, `email.charset.add_charset`, `locale.locale_alias`), and a name of an installed
   library it replaced (`numpy.pi = 3`, `yaml.FullLoader = None`), reached every later call: each call starts with
   the lists, dicts and sets the standard library's modules and classes hold as the first call found them, and with
   the names the installed libraries' and benchrun's modules hold (`core.stdlibnames`)
2. the attributes of an object a standard module holds, as a call set them (`calendar.setfirstweekday(6)`: every
   later call's `calendar.monthcalendar` began its weeks on Sunday; `json._default_encoder.sort_keys = True`: every
   later call's `json.dumps` sorted keys; `reprlib.aRepr.maxstring = 5`), reached every later call: put back as the
   names of the standard modules are (`core.stdlibnames`)
3. the tracing of memory allocations a call started (`tracemalloc.start(25)`) went on in every later call, each slowed
   several times over (past its time limit: another sample's error): put back as the interpreter's other settings are
   (`compiler.runstate.SETTINGS`), in the run's process too
4. a benchmark's custom_scorer.py that registered a sqlite3 adapter of strings as it was imported (in the run's own
   process, to compile) had the run write the user's response cache through it: every row and its schema version
   'p40:2', so every later run of any benchmark was refused ("has schema version 'p40:2', not 2 (another version of
   benchrun made it)"); one that set `json._default_encoder.indent = 1` had the run write its calls to the scorer
   process over several lines: that process ended in a traceback, every user score lost (`completed_with_errors`);
   one that replaced `httpx.AsyncClient.send` with a function of its own had every request the run sent go through
   it (its URL, prompt and headers: an OpenAI server's API key): the standard library's tables and objects and the
   installed libraries' names are put back after the import (`compiler.runstate.kept`, by `core.stdlibnames`)
5. a server busy at the preflight (503) that asked a wait by Retry-After in an HTTP date's third form, C's asctime
   (`Sun Nov  6 08:49:37 1994`, which names no zone: UTC, RFC 9110 5.6.7, which a recipient must read) was taken to
   ask none: the run failed at once, exit 3, where it was to be asked again after that wait; so was a Date in that
   form (the server's clock): read as UTC (`execute.runners.retryafter`)
6. a class a call registered with an abstract base class (`numbers.Number.register(str)`: every later call's
   `isinstance("x", numbers.Number)` true) stayed registered, which cannot be taken back: the process ends after such
   a call (`execute.scorerleft`)
"""

from __future__ import annotations

from benchrun.core.errors import EXIT
from tests.helpers.p38_asking import found_by
from tests.helpers.p40_asking import REGISTERING, busy_until_asctime, run_after_import_changing


def test_what_a_call_registered_in_the_standard_library_s_tables_or_replaced_in_a_library_reaches_no_later_call(
        tmp_path):
    names = ("adapter", "alias", "codec", "abc", "copy", "join", "archive", "charset", "locale", "yaml", "week",
             "sorted", "repr", "tracing")
    assert found_by(tmp_path, REGISTERING) == [({f"s.{name}": 0 for name in names}, None)] * 3


def test_what_a_benchmark_s_file_changed_in_libraries_as_it_was_imported_reaches_not_the_run_s_cache_or_requests(
        tmp_path):
    assert run_after_import_changing(tmp_path) == (EXIT["ok"], "", "completed", [({"s.ok": 1}, None)] * 2, ["2", 64],
                                                 0)


def test_a_wait_asked_by_an_asctime_date_is_heeded(tmp_path):
    assert busy_until_asctime(tmp_path) == (EXIT["ok"], "", 3)  # the model list is asked again as the run ends
