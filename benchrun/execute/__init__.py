"""Asking: a run's session, concurrency and retries, grading in the scorer process, the response cache, and
one runner per way of reaching a model."""
