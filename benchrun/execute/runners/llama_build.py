"""How benchrun's llama.cpp is built, and whether an installed build can run on this machine. Standard library only:
`python -m benchrun.execute.runners.llama_build` prints the CMAKE_ARGS that the README's install and .ci/run build
llama-cpp-python with, before anything else is installed.

A native build (pip's default) compiles llama.cpp for the building CPU, and on an Intel Xeon with AMX that enables
its AMX matrix code, which crashes llama.cpp in its first decode (ggml-org/llama.cpp#20824). benchrun builds it
without the native probe, with each instruction set up to AVX2 that the building CPU has (so a CPU without AVX, or
without AVX2, gets a build it can run), and refuses to load a model with a build that would take the AMX path. A
build made for another CPU stops llama.cpp with SIGILL, which the local runner reports with this rebuild command.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import sys
from importlib import metadata
from pathlib import Path
from typing import Mapping, Sequence

LEAN = ("-DLLAVA_BUILD=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_TOOLS=OFF",
        "-DLLAMA_BUILD_SERVER=OFF")
"""The parts of llama.cpp benchrun never uses, left out of the build."""
X86_LEVELS = {"GGML_SSE42": "sse4_2", "GGML_AVX": "avx", "GGML_F16C": "f16c", "GGML_FMA": "fma", "GGML_AVX2": "avx2",
              "GGML_BMI2": "bmi2"}
"""llama.cpp's x86-64 instruction-set options up to the AVX2 level, each with its /proc/cpuinfo flag; what the
building CPU has beyond them (AVX-512, AMX) is never built in."""
X86 = ("x86_64", "amd64", "AMD64")
AMX_BUILT = re.compile(r"\bAMX_INT8 = 1\b")
"""What llama_print_system_info() says of a build with llama.cpp's AMX code."""
CPU_AMX = "amx_int8"
"""The /proc/cpuinfo flag of a CPU whose AMX such a build uses."""
ISSUE = "ggml-org/llama.cpp#20824"
COMPILERS = (("C", "CC", ("cc", "gcc", "clang")), ("C++", "CXX", ("c++", "g++", "clang++")))
"""The C and C++ compilers CMake takes: the one its environment variable names, else the first of these on PATH."""


def cmake_args(machine: str | None = None, flags: frozenset[str] | None = None) -> str:
    """The CMAKE_ARGS for `machine` with CPU `flags` (this one's by default): lean everywhere; on x86-64 no native
    probe, and each of X86_LEVELS that the CPU has (all of them when its flags are unknown); elsewhere (aarch64, ...)
    llama.cpp's own choice, which builds and runs there."""
    machine = machine or platform.machine()
    if machine not in X86:
        return " ".join(LEAN)
    flags = cpu_flags() if flags is None else flags
    levels = (f"-D{option}={'ON' if flags is None or flag in flags else 'OFF'}" for option, flag in X86_LEVELS.items())
    return " ".join((*LEAN, "-DGGML_NATIVE=OFF", *levels))


def reinstall_command(requirement: str) -> str:
    """The command that replaces the installed llama-cpp-python with a portable build of `requirement`."""
    return (f'CMAKE_ARGS="{cmake_args()}" pip install --force-reinstall --no-deps --no-cache-dir '
            f"'{requirement}'")


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str] | None:
    """This CPU's feature flags (Linux); None where they cannot be read."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = re.search(r"^flags\s*:(.*)$", text, re.M)
    return frozenset(found[1].split()) if found else None


def amx_refusal(system_info: str, flags: frozenset[str] | None, requirement: str) -> str | None:
    """Why llama.cpp must not load a model here: a build with AMX code (its `system_info`) on a CPU with AMX (or
    one whose flags are unknown); None when it is safe."""
    if not AMX_BUILT.search(system_info) or (flags is not None and CPU_AMX not in flags):
        return None
    return (f"the installed llama-cpp-python was built for this CPU with llama.cpp's AMX code (AMX_INT8 = 1), which "
            f"crashes llama.cpp on AMX CPUs ({ISSUE}); nothing was loaded; rebuild it portably: "
            f"{reinstall_command(requirement)}")


def illegal_instruction(requirement: str) -> str:
    """Why llama.cpp died of SIGILL: a build for a CPU with instructions this one does not have, and the fix."""
    return ("llama.cpp stopped on an instruction this CPU does not have (SIGILL): the installed llama-cpp-python was "
            f"built for another CPU; nothing was asked; rebuild it on this machine: {reinstall_command(requirement)}")


NUMPY_V2 = frozenset({"ssse3", "sse4_1", "sse4_2", "popcnt", "cx16"})
"""The /proc/cpuinfo flags of x86-64-v2, which numpy's wheels need from 2.4 on (their baseline): on an older CPU (a
Core 2, an AMD before 2011, some Pentiums and Celerons) numpy's import stops with SIGILL or with its own error."""
NUMPY_FOR_V1 = "numpy<2.4"
"""The numpy releases whose wheels run on any x86-64 CPU (baseline SSE3)."""


def numpy_refusal(version: str | None = None, machine: str | None = None,
                  flags: frozenset[str] | None = None) -> str | None:
    """Why numpy `version` (the installed one by default, which llama-cpp-python imports) cannot run on this CPU,
    and the fix; None when it can, or when that cannot be told."""
    version = version or _installed("numpy")
    machine = machine or platform.machine()
    flags = cpu_flags() if flags is None else flags
    release = tuple(int(part) for part in re.findall(r"\d+", version or "")[:2])
    if machine not in X86 or flags is None or not release or release < (2, 4) or not (lacking := NUMPY_V2 - flags):
        return None
    return (f"numpy {version}, which llama-cpp-python imports, needs an x86-64-v2 CPU, and this one lacks "
            f"{', '.join(sorted(lacking))}; nothing was asked; install a numpy that runs here: "
            f"pip install '{NUMPY_FOR_V1}'")


def numpy_unusable(err: Exception, needed_by: str) -> str:
    """One line for a numpy whose import failed here (`err`), which `needed_by` needs: numpy's own words, and the
    numpy that runs on this CPU when this one cannot (`numpy_refusal`, or numpy's own `X86_V2`), else a reinstall."""
    said = " ".join(str(err).split()) or "no message"
    fix = (f"install a numpy that runs here: pip install '{NUMPY_FOR_V1}'" if numpy_refusal() or "X86_V2" in said
           else "reinstall it: pip install --force-reinstall numpy")
    return f"numpy cannot be imported here ({type(err).__name__}: {said}), and {needed_by} needs it; {fix}"


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def build_refusal(requirement: str) -> str | None:
    """`amx_refusal` for the llama-cpp-python installed here and this CPU (llama_cpp is imported, nothing loaded)."""
    import llama_cpp

    return amx_refusal(llama_cpp.llama_print_system_info().decode(), cpu_flags(), requirement)


def compilers_missing(environ: Mapping[str, str] = os.environ) -> str | None:
    """What the README's install says before pip builds llama.cpp on a machine without a C or C++ compiler (a slim
    container image), whose build would end in pages of CMake's output: one line with the fix; None with both."""
    missing = [f"{language} ({environ.get(variable) or ', '.join(names)})" for language, variable, names in COMPILERS
               if not _found(_named(environ.get(variable, "")) or names, environ.get("PATH"))]
    if not missing:
        return None
    return (f"benchrun: no {' and no '.join(missing)} compiler here, and llama-cpp-python builds llama.cpp from "
            "source: its install will fail; install them first (Debian, Ubuntu: apt-get install build-essential; "
            "Fedora: dnf install gcc-c++)")


def _named(value: str) -> list[str]:
    """What a compiler variable may name: its whole value (a path holding a space, `/opt/my tools/gcc`), or its first
    word (a launcher or flags after it, `ccache gcc`, `gcc -O2`); none when it is empty."""
    return [value.strip(), *value.split()[:1]] if value.strip() else []


def _found(names: Sequence[str], path: str | None) -> bool:
    """Whether any of the programs `names` is on `path` (or is a path to one)."""
    return any(shutil.which(name, path=path) for name in names)


if __name__ == "__main__":
    if warning := compilers_missing():
        print(warning, file=sys.stderr)
    print(cmake_args())
