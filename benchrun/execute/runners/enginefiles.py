"""The files of llama.cpp's code that answer in the engine process, as loaded: run.json named llama_cpp's version
alone, while $LLAMA_CPP_LIB_PATH, $LD_LIBRARY_PATH or $LD_PRELOAD can load another build of the library under it."""

from __future__ import annotations

import hashlib
import os
import re

from benchrun.core.procfs import PROC, proc_text

ENGINE_LIBRARY = re.compile(r"lib(llama|ggml)[\w.+-]*\.so(\.[\d.]+)?")
"""The shared libraries of llama.cpp (`libllama.so.0.5.0`) and of ggml, its tensor library (`libggml-cpu.so`)."""


def engine_files() -> dict[str, str]:
    """The sha256 of each llama.cpp or ggml library this process has mapped, by its path; none where /proc cannot
    say."""
    try:
        maps = proc_text(PROC / "self/maps")
    except OSError:
        return {}
    paths = {fields[5] for line in maps.splitlines() if len(fields := line.split(maxsplit=5)) == 6}
    return {path: _sha256(path) for path in sorted(paths) if ENGINE_LIBRARY.fullmatch(os.path.basename(path))}


def _sha256(path: str) -> str:
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()
