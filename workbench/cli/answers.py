"""`answers`: answer quality of the best variants (workbench.results.answers)."""


from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.dataset import Dataset
from workbench.models.llm import LLM_SPEC

if TYPE_CHECKING:
    from workbench.results.answers import Answers
    from workbench.results.result import SweepResult
from workbench.cli.options import EPILOG, sweep_arguments
from workbench.cli.sweep import measure


def add_parser(sub: argparse._SubParsersAction) -> None:
    from workbench.results.answers import DEFAULT_CONTEXT_TOKENS, DEFAULT_MAX_TOKENS, DEFAULT_TOP

    a = sub.add_parser(
        "answers",
        help="answer quality of the best variants: the LLM answers every question from their context, graded",
        description="Sweep the variants (from the caches when they were measured) with the same options as "
        "`sweep`, take the --top best by recall@k, and have the LLM answer every question from each one's "
        "context packed under --context-tokens, and with no context (the floor) and the evidence as context "
        "(the ceiling). Answers are graded against the dataset's reference answers (SQuAD token F1 and exact "
        "match), else against the evidence text; --judge adds the model's own verdict. Every generation is "
        "cached: a re-run generates nothing. Prints the table; writes it and report.html (with an Answer "
        "quality section) to --out.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sweep_arguments(a, out=Path("results/answers"), top=DEFAULT_TOP,
                     top_help="variants taken through answer quality, best by recall@k first (default: %(default)s)")
    a.add_argument("--context-tokens", type=int, default=DEFAULT_CONTEXT_TOKENS, metavar="N",
                   help="the context budget of every answer, in --budget-encoding tokens (default: %(default)s)")
    a.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS, metavar="N",
                   help="the longest answer, in the LLM's tokens (default: %(default)s)")
    a.add_argument("--judge", action="store_true",
                   help="the LLM also judges every answer against the reference (P(yes) from its logits)")
    a.add_argument("--llm", metavar="SPEC", default=LLM_SPEC,
                   help="the LLM that answers: a local GGUF file or Hugging Face folder, or an endpoint "
                        "'openai:<model>@<base_url>' (its key from OPENAI_API_KEY) (default: %(default)r, the bundled "
                        "SmolLM2-135M-Instruct)")


def run(args: argparse.Namespace) -> None:
    """`answers`: the sweep, then answer quality of its --top best (options checked before any work)."""
    from workbench.models.llm import llm_of
    from workbench.results.answers import evaluate, text_table

    for name in ("context_tokens", "max_tokens"):  # --top: as every sweep's
        if getattr(args, name) < 1:
            raise SystemExit(f"error: --{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    try:
        llm = llm_of(args.llm, args.cache, threads=args.threads, progress=not args.quiet)
    except ValueError as e:
        raise SystemExit(f"error: --llm: {e}") from e

    def then(result: SweepResult, dataset: Dataset) -> Answers:
        return evaluate(result, dataset, args.top, llm=llm, context_tokens=args.context_tokens,
                        max_tokens=args.max_tokens, judge=args.judge,
                        on_estimate=lambda line: print(line, flush=True))

    answers = measure(args, then)[1]
    c = answers.config
    made = (f"generated {c['generated']} answers ({c['generated_tokens']} tokens, {c['generation_seconds']:.1f} s)"
            if c["generated"] else "generated nothing (every answer came from the cache)")
    print(f"Answer quality at {c['context_tokens']:,} {c['encoding']} tokens of context, {c['llm']}, "
          f"{len(answers.per_question['qid'].unique())} questions; {made}:\n")
    print(text_table(answers))
