"""The command line both fake servers share: options, model names, and serving until a signal."""

from __future__ import annotations

import argparse
import signal
import threading

from benchrun.testing.http_fake import FakeServer

DEMO_MODELS = "llama3.2,gemma3,qwen2.5,mistral"
"""The models the fakes serve from the command line: every model the README's examples name."""


def cli_parser(description: str) -> argparse.ArgumentParser:
    """The command-line options both fakes share."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every chat request")
    parser.add_argument("--max-parallel", type=int, default=None, help="chat requests processed at once")
    parser.add_argument("--models", default=DEMO_MODELS, help=f"comma-separated model names (default {DEMO_MODELS})")
    parser.add_argument("--by-seed", action="store_true",
                        help="answer wrongly whenever the request's seed is one more than a multiple of 3")
    parser.add_argument("--wrong", action="store_true",
                        help="answer every question of the shipped benchmarks wrongly (default: rightly, but mistral "
                             "gets every product or sum above 10 wrong)")
    return parser


def model_names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def serve_until_signal(server: FakeServer) -> None:
    """Start `server`, print its URL on one line and serve until SIGTERM or SIGINT."""
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    with server:
        print(server.url, flush=True)
        stopping.wait()
