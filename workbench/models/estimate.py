"""What an LLM will generate before it starts: the items missing from its generation cache, the
tokens they will generate, and the time at a rate measured here and now.

Why: whatever asks an LLM over many items (+context, LLM chunkers, answer quality, generated
labels) can take minutes to hours on a CPU; said up front, a user can shrink the work first.

How: a sample of the missing items is generated (and kept in the cache): one generation to warm
the model up, then a batch, timed. The tokens to come are the sample's mean per item times the
items left (at most max_tokens each). A fully cached run costs a cache look-up: nothing loads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.models.llm import LLM, Prompt


@dataclass(frozen=True)
class GenerationEstimate:
    """What an LLM will generate for a prompt over many items, before it starts."""

    prompt: str  # "name v1"
    items: int  # generations asked for
    to_generate: int  # not in the generation cache, the sample left out
    max_tokens: int  # per generation
    tokens: int  # expected tokens to generate: the sample's mean per generation times `to_generate`
    rate: float | None  # generated tokens per second, measured now (None: nothing to generate)
    sampled: int  # generations made to measure the rate, now in the cache
    later: tuple[int, int] = (0, 0)  # more generations whose prompts wait on the answers: at least, at most
    per_item: float | None = None  # the sample's mean tokens per generation (None: nothing was sampled)

    @property
    def cached(self) -> bool:
        """Nothing was generated to estimate it, nor will be: every generation was in the cache."""
        return self.to_generate == 0 and not self.sampled and self.later[1] == 0

    @property
    def seconds(self) -> float:
        return self.tokens / self.rate if self.rate else 0.0

    def line(self) -> str:
        if self.cached:
            return f"estimate ({self.prompt}): all {self.items:,} generations cached, nothing to generate"
        if self.to_generate == 0 and not self.sampled:
            made = f"all {self.items:,} generations known now are cached"
        else:
            made = (f"{self.to_generate:,} of {self.items:,} generations to make, about {self.tokens:,} tokens (at "
                    f"most {self.to_generate * self.max_tokens:,}): about {duration(self.seconds)} at "
                    f"{self.rate or 0:,.1f} tokens/s, measured on {self.sampled - 1} of them after one to warm up "
                    "(generated now, kept in the cache)")
        lo, hi = self.later
        if not hi:
            return f"estimate ({self.prompt}): {made}"
        if self.per_item is None or not self.rate:
            return (f"estimate ({self.prompt}): {made}; then {lo:,} to {hi:,} more whose prompts wait on the answers "
                    "(not timed: nothing was generated to measure)")
        tokens = [round(self.per_item * n) for n in (lo, hi)]
        return (f"estimate ({self.prompt}): {made}; then {lo:,} to {hi:,} more whose prompts wait on the answers: "
                f"{tokens[0]:,} to {tokens[1]:,} tokens, {duration(tokens[0] / self.rate)} to "
                f"{duration(tokens[1] / self.rate)}")


def estimate_generation(llm: LLM, prompt: Prompt, items: Sequence[dict[str, Any]], max_tokens: int, *,
                        later: tuple[int, int] = (0, 0), stop: Callable[[], bool] | None = None,
                        ) -> GenerationEstimate:
    """What `llm.generate(prompt, items, max_tokens=max_tokens)` will generate and how long it will
    take (see the module docstring), and `later`: bounds on the generations that follow from the
    answers. A fully cached run costs a cache look-up: nothing loads. `stop`: asked between the
    sample's batches (LLM.generate), so a Stop stops the estimate too."""
    todo = [i for i, hit in zip(items, llm.cached(prompt, items, max_tokens), strict=True) if not hit]
    todo = list({k: i for k, i in zip(llm.keys(prompt, todo, max_tokens), todo, strict=True)}.values())  # distinct
    name = f"{prompt.name} v{prompt.version}"
    if not todo:
        return GenerationEstimate(name, len(items), 0, max_tokens, 0, None, 0, later)
    n = min(llm.batch_size + 1, max(2, len(todo) // 2), len(todo))
    sample = [todo[i] for i in sorted(np.random.default_rng(0).choice(len(todo), n, replace=False))]
    # not timed: the first sets the model up
    llm.generate(prompt, sample[:1], max_tokens=max_tokens, desc="warming up", stop=stop)
    timed = llm.generate(prompt, sample[1:], max_tokens=max_tokens, desc="measuring the rate", stop=stop)
    made = [g for g in timed if not g.cached]
    tokens = sum(g.generated_tokens for g in made)
    seconds = sum(g.seconds for g in made)
    left = len(todo) - n
    per_item = tokens / len(made) if made else float(max_tokens)
    rate = tokens / seconds if tokens and seconds else None
    return GenerationEstimate(name, len(items), left, max_tokens, round(per_item * left), rate, n, later, per_item)


def generation_parts(generations: Sequence[GenerationEstimate], unestimated: int) -> list[str]:
    """What is left to generate, one part per estimate, for an estimate's line."""
    parts = [g.line().removeprefix("estimate ") for g in generations if not g.cached]
    if unestimated:
        parts.append(f"({unestimated} indexes not estimated): their generations cannot be counted before generating "
                     "(+context over an LLM chunker, or a chunker that says nothing of its generations)")
    return parts


def generation_line(generations: Sequence[GenerationEstimate], unestimated: int) -> str:
    """The generation estimates alone, as a line ("" when nothing is to be generated): what the widgets show."""
    parts = generation_parts(generations, unestimated)
    return "estimate " + "; ".join(parts) if parts else ""


def duration(seconds: float) -> str:
    """12 s, 6 min 10 s, 1 h 5 min."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"
