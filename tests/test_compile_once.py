"""What a compile does once however many tasks ask for it: a custom response class's JSON schema is made once (its
user code run contained, which costs tens of milliseconds), not once for each task that names the format."""

from __future__ import annotations

import os

from benchrun import compile_plan
from tests.helpers.benchfiles import config, task, tasks_yml, write_bench

COUNTING = """from pydantic import BaseModel


class Ans(BaseModel):
    answer: str

    @classmethod
    def model_json_schema(cls, *args, **kwargs):
        with open(__file__ + ".made", "a") as made:
            made.write(f"{__import__('os').getpid()}\\n")
        return super().model_json_schema(*args, **kwargs)
"""


def test_a_custom_formats_schema_is_made_once_for_every_task_that_names_it(tmp_path):
    tasks = [task(f"t{i}", format="Ans") for i in range(3)]
    bench = write_bench(tmp_path, {"tasks.yml": tasks_yml(*tasks), "custom_response.py": COUNTING})
    plan = compile_plan(config(bench), tmp_path)
    made = (bench / "custom_response.py.made").read_text().split()
    assert made.count(str(os.getpid())) == 1  # made in this process once (and once by the probe, in its own)
    schemas = [t.format.json_schema for t in plan.manifest.tasks]
    assert schemas == [schemas[0]] * 3 and schemas[0]["properties"] == {"answer": {"title": "Answer", "type": "string"}}
    assert schemas[0] is not schemas[1]  # each task's own copy
