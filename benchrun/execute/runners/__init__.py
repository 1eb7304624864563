"""Runners: one module per way of reaching a model, behind the interface in `base`; `registry` makes the one a
config names. Nothing is imported here, so `python -m benchrun.execute.runners.llama_build` runs before benchrun's
dependencies are installed."""
