"""What describing cost: :class:`SummarizerReport`, counted per call and over a summariser's life."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

from drag_knee_retriever.llm.backend import Usage

_MAX_FAILURE_SAMPLES = 10


@dataclass
class SummarizerReport:
    """What describing cost: counted per ``describe`` call and accumulated over a summariser's life.

    - ``requests``: nodes asked for; ``described``: nodes the model answered validly in this run;
      ``cache_hits``: nodes served from the cache; ``deduplicated``: identical nodes of one call
      served by a single answer; ``extractive``: leaves left to the LLM-free summariser on purpose
      (``describe_leaves=False``).
    - ``calls``: model calls including retries; ``retries``: calls after a node's first;
      ``failures``: failed calls, split into ``invalid_outputs``, ``errors`` (exceptions) and
      ``timeouts``; ``fallbacks``: nodes that got the LLM-free description after every attempt failed.
    - tokens: summed over the ``calls_with_usage`` calls whose model reported usage (0 otherwise).
    """

    requests: int = 0
    described: int = 0
    cache_hits: int = 0
    deduplicated: int = 0
    extractive: int = 0
    calls: int = 0
    retries: int = 0
    failures: int = 0
    invalid_outputs: int = 0
    errors: int = 0
    timeouts: int = 0
    fallbacks: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    calls_with_usage: int = 0
    max_in_flight: int = 0
    seconds: float = 0.0
    failure_samples: List[str] = field(default_factory=list)

    def add_usage(self, usage: Optional[Usage]) -> None:
        """Count one call's reported tokens."""
        if usage is None:
            return
        self.calls_with_usage += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.total_tokens += usage.total_tokens or (usage.input_tokens + usage.output_tokens)

    def note_failure(self, message: str) -> None:
        """Keep the first few failure messages for the report (and the logs)."""
        if len(self.failure_samples) < _MAX_FAILURE_SAMPLES:
            self.failure_samples.append(message)

    def merge(self, other: "SummarizerReport") -> None:
        """Add another report's counts to this one."""
        for name, value in asdict(other).items():
            if name == "failure_samples":
                for sample in other.failure_samples:
                    self.note_failure(sample)
            elif name == "max_in_flight":
                self.max_in_flight = max(self.max_in_flight, other.max_in_flight)
            else:
                setattr(self, name, getattr(self, name) + value)

    def copy(self) -> "SummarizerReport":
        """An independent copy."""
        clone = SummarizerReport()
        clone.merge(self)
        return clone

    def as_dict(self) -> Dict[str, Any]:
        """Plain data (for logs, JSON and the ingest report)."""
        return asdict(self)

    def __str__(self) -> str:
        tokens = (
            f"{self.total_tokens} tokens ({self.input_tokens} in, {self.output_tokens} out)"
            if self.calls_with_usage
            else "tokens not reported"
        )
        return (
            f"{self.requests} nodes: {self.described} described, {self.cache_hits} from cache, "
            f"{self.fallbacks} fallbacks, {self.extractive} extractive; {self.calls} calls "
            f"({self.retries} retries, {self.failures} failures: {self.invalid_outputs} invalid, "
            f"{self.errors} errors, {self.timeouts} timeouts); {tokens}; {self.seconds:.2f} s"
        )
