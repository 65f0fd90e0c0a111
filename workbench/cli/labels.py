"""`labels check|resolve|generate` and `import`: labels located, written, generated or converted."""


from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.cli.options import print_warnings
from workbench.core.io import CACHE_DIR
from workbench.dataset import Dataset, DatasetWarning, Document
from workbench.labels.generate import MAX_TOKENS, SEED
from workbench.variant import Variant, parse_variant

if TYPE_CHECKING:
    from workbench.labels.generate import Probe


def _add_labels(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("labels", help="check how every label's evidence locates, or write its offsets",
                       description="Answers may be offsets (doc_id, start, end), offsets with the quote they hold, "
                       "or quotes alone (with doc_id, or searched in the whole corpus) located exactly, normalised "
                       "or fuzzily; a line may give them flat (source, evidence) and as alternatives. `check` prints "
                       "each label's status; `resolve` writes the questions with offsets.")
    actions = p.add_subparsers(dest="action", required=True)
    for name, helped in (("check", "print every label's status: exact, normalised, fuzzy (score), ambiguous, "
                          "missing (the best candidate), drift (offsets that no longer hold their quote), and what "
                          "--skip-missing would leave out; exit status 1 when any would stop load_dataset"),
                         ("resolve", "write the questions with every answer as offsets (quotes kept, drifted "
                          "labels moved to where their quote is now), atomically")):
        a = actions.add_parser(name, help=helped, description=helped)
        a.add_argument("data", type=Path, help="dataset folder (corpus.jsonl, or documents) with questions.jsonl")
        a.add_argument("--questions", type=Path, help="questions file, if not <data>/questions.jsonl")
        if name == "resolve":
            a.add_argument("--out", type=Path, required=True, help="the questions file to write")
    helped = ("write questions for documents that have none: a language model reads passages and writes a "
              "question and the excerpt that answers it (excerpts located as quotes; unlocated, unparsable and "
              "near-duplicate ones dropped and counted), or, with --no-llm, drafts from headings and definitions "
              "to review in wb.Labeler; with --probe-cuts, questions whose evidence straddles the chunk boundaries "
              "of the variants compared")
    g = actions.add_parser("generate", help=helped, description=helped)
    g.add_argument("data", type=Path, help="dataset folder (corpus.jsonl, or documents); questions not needed")
    g.add_argument("--n", type=int, required=True, help="questions to ask for (passages read)")
    g.add_argument("--out", type=Path, required=True, help="the questions file to write, atomically")
    g.add_argument("--no-llm", action="store_true", help="draft from headings and definitions instead")
    g.add_argument("--model", help="a local GGUF file or Hugging Face folder (default: the bundled SmolLM2-135M)")
    g.add_argument("--max-tokens", type=int, default=MAX_TOKENS, help="per generation (default: %(default)s)")
    g.add_argument("--seed", type=int, default=SEED, help="picks the passages (default: %(default)s)")
    g.add_argument("--cache", type=Path, default=CACHE_DIR, help="generation cache folder (default: %(default)s)")
    g.add_argument("--probe-cuts", action="store_true",
                   help="ask about evidence that straddles the cuts of the variants compared (--variant; default: "
                   "the default grid): the sentence a cut falls in, or the sentences on either side of it, those some "
                   "variants cut and others keep whole first; each line marked 'probe' with the variants it straddles")
    g.add_argument("--variant", "-v", action="append", default=[], metavar="SPEC",
                   help="with --probe-cuts: a variant whose cuts to probe (repeatable)")


def add_parser(sub: argparse._SubParsersAction) -> None:
    _add_labels(sub)
    _add_import(sub)


def run(args: argparse.Namespace) -> None:
    if args.command == "import":
        return _import(args)
    from workbench.labels.check import BROKEN, check_labels, resolve_labels, skip_summary, summary

    if args.action == "generate":
        return _generate(args)
    try:
        with warnings.catch_warnings(record=True, action="always", category=DatasetWarning) as caught:
            if args.action == "resolve":
                statuses = resolve_labels(args.data, args.out, args.questions)
            else:
                statuses = check_labels(args.data, args.questions)
    except ValueError as e:  # DatasetError too: the file, line and field
        raise SystemExit(f"error: {e}") from e
    print_warnings(caught)
    if args.action == "check":
        print("\n".join(s.describe() for s in statuses))
        print("".join(f"a valid line: {e}\n" for e in dict.fromkeys(s.example for s in statuses if s.example)), end="")
    moved = sum(s.status == "drift" for s in statuses)
    print(summary(statuses) + (f"; wrote {args.out} ({moved} drifted label(s) moved)" if args.action == "resolve"
                               else ""))
    if args.action == "check" and skip_summary(statuses):
        print(skip_summary(statuses))
    if args.action == "check" and any(s.status in BROKEN for s in statuses):
        raise SystemExit(1)


def _generate(args: argparse.Namespace) -> None:
    """`labels generate`: the estimate, then the questions and what was dropped."""
    from workbench.labels.generate import documents, generate, passages, prompt, prompt_items
    from workbench.models.estimate import estimate_generation
    from workbench.models.llm import LLM, LLMError

    if args.variant and not args.probe_cuts:
        raise SystemExit("error: --variant names the variants whose cuts --probe-cuts probes: add --probe-cuts")
    try:
        given = [parse_variant(v) for v in args.variant]
    except ValueError as e:
        raise SystemExit(f"error: --variant: {e}") from e
    try:
        with warnings.catch_warnings(record=True, action="always", category=DatasetWarning) as caught:
            docs = documents(args.data)
        print_warnings(caught)
        found = _probes(docs, given, args) if args.probe_cuts else None
        llm = False if args.no_llm else LLM(args.model, cache_dir=args.cache)
        if llm:
            items = (prompt_items(docs, [p.evidence for p in found[:args.n]]) if found is not None
                     else prompt_items(docs, passages(docs, args.n, seed=args.seed)))
            print(estimate_generation(llm, prompt(found is not None), items, args.max_tokens).line(), flush=True)
        made = generate(docs, args.n, llm, out=args.out, seed=args.seed, max_tokens=args.max_tokens, probes=found)
    except (ValueError, LLMError) as e:  # DatasetError too: the file, line and field; LLMError: one line
        raise SystemExit(f"error: {e}") from e
    print(f"{made.summary()}; wrote {args.out}")


def _probes(docs: list[Document], given: list[Variant], args: argparse.Namespace) -> list[Probe]:
    """The probes of --probe-cuts: the variants' chunks (each chunking once, no index built), then
    evidence around their cuts; how many variants and cut positions it read, printed."""
    from workbench.labels.probe import probes
    from workbench.run.session import Session

    session = Session(Dataset(args.data.name, tuple(docs), ()), cache=args.cache, progress=False)
    variants = given or session.default_grid()
    print(f"chunking {len(docs):,} documents with {len(variants)} variants to find their cuts...", flush=True)
    chunkings = {}
    for v in variants:
        chunkings.setdefault(v.chunking.key, (v.chunking.label, session.chunked(v)))
    found = probes(docs, dict(chunkings.values()), args.n, args.seed)
    print(f"probing the cuts of {len(chunkings)} chunkings: {len(found)} pieces of evidence straddle them, "
          f"{sum(len(p.straddles) < len(chunkings) for p in found)} cut by some and kept whole by others", flush=True)
    return found


def _add_import(sub: argparse._SubParsersAction) -> None:
    from workbench.labels.importers import READERS

    i = sub.add_parser("import", help="convert another tool's evaluation set into corpus.jsonl + questions.jsonl",
                       description="Convert SQuAD, Chroma, BEIR, LlamaIndex, RAGAS or mtcb data into a dataset "
                       "folder (corpus.jsonl, questions.jsonl, README.md), written whole or not at all; the "
                       "questions dropped are counted by reason.")
    i.add_argument("format", choices=sorted(READERS))
    i.add_argument("src", type=Path, help="the file or folder in that format")
    i.add_argument("--out", type=Path, required=True, help="the dataset folder to write (must not exist yet)")
    i.add_argument("--docs", type=Path, help="llamaindex, ragas: the documents (corpus.jsonl or a folder) the "
                   "passages are located in")
    i.add_argument("--documents", choices=("article", "paragraph"), help="squad: one document per article "
                   "(default) or per paragraph")
    i.add_argument("--split", help="beir: the qrels split (default: test)")
    i.add_argument("--key", help="mtcb: the field naming a question's document (default: title, repo or id)")


def _import(args: argparse.Namespace) -> None:
    from workbench.labels.importers import import_dataset

    options = {k: getattr(args, k) for k in ("docs", "documents", "split", "key") if getattr(args, k) is not None}
    try:
        imported = import_dataset(args.format, args.src, args.out, **options)
    except (FileExistsError, ValueError) as e:  # DatasetError is a ValueError
        raise SystemExit(f"error: {e}") from e
    print(imported.summary())
    print(f"wrote {args.out}/: corpus.jsonl, questions.jsonl, README.md")
