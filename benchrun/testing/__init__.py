"""Fake model servers on loopback (Ollama and OpenAI-compatible) for tests and speed benchmarks."""
