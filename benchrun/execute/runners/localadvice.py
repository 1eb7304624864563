"""What the embedded (local) runner's refusals tell the user to do, as the command at hand takes it: a new run sets
its keys (runner.model_path, runner.options.num_ctx); resume and retry ask with the run's model file and options,
which they take no key for (RunnerConfig.asked_again), so their advice names only what they can do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the engine's process reads the advice without the settings' models
    from benchrun.core.settings import LocalConfig


@dataclass(frozen=True)
class LocalAdvice:
    """The keys a local runner's advice names (`judge.model_path` for a judge's), and whether the run is asked again."""

    model_key: str
    context_key: str
    again: bool

    @classmethod
    def of(cls, config: LocalConfig) -> LocalAdvice:
        return cls(config.key("model_path"), config.key("options.num_ctx"), config.asked_again)

    def other_file(self, kind: str = "a GGUF file") -> str:
        """What to do about a model file that cannot be loaded: set model_path to `kind`; asked again, put the run's
        file back."""
        if self.again:
            return f"put the run's model file back there (resume and retry load the run's {self.model_key})"
        return f"set {self.model_key} to {kind}"

    def less_memory(self, kind: str) -> str:
        """What to do when a model cannot be had in the memory there is: another file (`kind`); asked again, memory
        freed for the run's."""
        if self.again:
            return f"free memory for it (resume and retry load the run's {self.model_key})"
        return self.other_file(kind)

    def smaller_context(self) -> str:
        """What to do when the context's memory cannot be had: a smaller one; asked again, memory freed for it."""
        if self.again:
            return f"free memory for it (resume and retry ask with the run's {self.context_key})"
        return f"lower {self.context_key}"

    def larger_context(self) -> str:
        """What to do when a chat leaves no room in the context: a larger one, or a shorter chat; asked again (the
        run's chat and context), a new run's."""
        if self.again:
            return f"a new run can raise {self.context_key} (resume and retry ask with the run's)"
        return f"raise {self.context_key}, or shorten the chat"
