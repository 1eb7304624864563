"""The loop a user would write instead of benchrun: C workers around the official `ollama.AsyncClient().chat`.

    python benchmarks/bare_loop.py URL N C ANSWERS.jsonl

Asks run_bench's N prompts ("find the product of {a} and 7", IntAnswer's JSON schema, temperature 0, seed 0)
and keeps each answer as one JSON line; no scoring, no archive. It imports only what such a script needs
(not benchrun), so run_bench can time it as a whole process against `python -m benchrun`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Iterator
from typing import IO

import ollama

MODEL = "llama3.2"
OPTIONS = {"temperature": 0, "seed": 0}
TEMPLATE = "find the product of {a} and {b}"
B = 7
SCHEMA = {"properties": {"answer": {"title": "Answer", "type": "integer"}}, "required": ["answer"],
          "title": "IntAnswer", "type": "object"}
"""`benchrun.compiler.formats.IntAnswer.model_json_schema()`, written out (run_bench checks that they agree)."""


def prompts(n: int) -> list[str]:
    return [TEMPLATE.format(a=a, b=B) for a in range(n)]


async def worker(client: ollama.AsyncClient, queue: Iterator[tuple[int, str]], answers: IO[str]) -> None:
    """Ask the shared queue's prompts one at a time; write each answer as it comes."""
    for number, prompt in queue:
        response = await client.chat(MODEL, messages=[{"role": "user", "content": prompt}], format=SCHEMA,
                                     options=OPTIONS)
        answers.write(json.dumps({"id": number, "prompt": prompt, "answer": response.message.content}) + "\n")


async def ask_all(url: str, n: int, concurrency: int, path: str) -> None:
    """Every prompt through `concurrency` workers sharing one client; answers to `path`."""
    client, queue = ollama.AsyncClient(host=url), enumerate(prompts(n))
    with open(path, "w", encoding="utf-8") as answers:
        await asyncio.gather(*(worker(client, queue, answers) for _ in range(concurrency)))
    await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("n", type=int)
    parser.add_argument("concurrency", type=int)
    parser.add_argument("answers")
    args = parser.parse_args()
    asyncio.run(ask_all(args.url, args.n, args.concurrency, args.answers))


if __name__ == "__main__":
    main()
