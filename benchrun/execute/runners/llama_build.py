"""How benchrun's llama.cpp is built, and whether an installed build can run on this machine. Standard library only:
`python -m benchrun.execute.runners.llama_build` prints the CMAKE_ARGS that the README's install and .ci/run build
llama-cpp-python with, before anything else is installed.

A native build (pip's default) compiles llama.cpp for the building CPU, and on an Intel Xeon with AMX that enables
its AMX matrix code, which crashes llama.cpp in its first decode (ggml-org/llama.cpp#20824). benchrun builds it for
the AVX2 level instead (no native probe), and refuses to load a model with a build that would take the AMX path.
"""

from __future__ import annotations

import platform
import re
from pathlib import Path

LEAN = ("-DLLAVA_BUILD=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_TOOLS=OFF",
        "-DLLAMA_BUILD_SERVER=OFF")
"""The parts of llama.cpp benchrun never uses, left out of the build."""
PORTABLE_X86 = ("-DGGML_NATIVE=OFF", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON",
                "-DGGML_BMI2=ON")
"""x86-64 at the AVX2 level, whatever the building CPU has beyond it (AVX-512, AMX)."""
X86 = ("x86_64", "amd64", "AMD64")
AMX_BUILT = re.compile(r"\bAMX_INT8 = 1\b")
"""What llama_print_system_info() says of a build with llama.cpp's AMX code."""
CPU_AMX = "amx_int8"
"""The /proc/cpuinfo flag of a CPU whose AMX such a build uses."""
ISSUE = "ggml-org/llama.cpp#20824"


def cmake_args(machine: str | None = None) -> str:
    """The CMAKE_ARGS for `machine` (this one's by default): lean everywhere, portable on x86-64; elsewhere (aarch64,
    ...) llama.cpp's own choice, which builds and runs there."""
    machine = machine or platform.machine()
    return " ".join((*LEAN, *(PORTABLE_X86 if machine in X86 else ())))


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


def build_refusal(requirement: str) -> str | None:
    """`amx_refusal` for the llama-cpp-python installed here and this CPU (llama_cpp is imported, nothing loaded)."""
    import llama_cpp

    return amx_refusal(llama_cpp.llama_print_system_info().decode(), cpu_flags(), requirement)


if __name__ == "__main__":
    print(cmake_args())
