"""How llama.cpp is built for benchrun, and the guard against a build that would crash on this CPU, chosen by the
library's own system-info string (so it is tested without owning such a CPU)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.execute.runners.llama_build import amx_refusal, cmake_args, cpu_flags, reinstall_command

AMX_MACHINE = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX_VNNI = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
               "AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | AMX_INT8 = 1 | LLAMAFILE = 1 | "
               "OPENMP = 1 | REPACK = 1 | ")
"""llama_print_system_info() of a native build on an Intel Xeon with AMX (measured)."""
PORTABLE = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | LLAMAFILE = 1 | "
            "OPENMP = 1 | REPACK = 1 | ")
"""The same machine's portable build (the README's install)."""
AMX_FLAGS = frozenset("fpu sse2 avx2 avx512f avx512_vnni amx_bf16 amx_tile amx_int8".split())
REQUIREMENT = "llama-cpp-python<0.4,>=0.3.7"
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


@pytest.mark.parametrize(("machine", "expected"), [
    ("x86_64", f"{LEAN} -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"),
    ("aarch64", LEAN),
    ("riscv64", LEAN),
])
def test_x86_builds_for_the_avx2_level_and_other_machines_as_llama_cpp_chooses(machine, expected):
    assert cmake_args(machine) == expected


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
