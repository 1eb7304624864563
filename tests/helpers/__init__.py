"""What more than one test module uses, each in one place: model answers for the fake servers (`answers`), small
benchmarks written into a test's directory (`benchfiles`), running benchrun and reading what it said (`commands`),
and reading or writing run directories (`archives`). Fixtures live in tests/conftest.py; no test module imports
from another (tests/test_test_modules.py)."""
