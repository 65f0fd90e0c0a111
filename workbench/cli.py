"""`python -m workbench sweep ...`: the headless sweep behind `make demo`; `answers` for answer quality;
`labels check|resolve` for labels."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import textwrap
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from workbench.chunkers import STRATEGIES
from workbench.dataset import Dataset, DatasetError, DatasetWarning
from workbench.engine import ENGINES, get_engine
from workbench.errors import describe
from workbench.evaluation import metrics
from workbench.evaluation.metrics import BUDGET_ENCODINGS, DEFAULT_BUDGETS, DEFAULT_KS
from workbench.evaluation.settings import MODES, Settings
from workbench.gate import DEFAULT_MAX_DROP
from workbench.ingest import load_dataset
from workbench.io import CACHE_DIR
from workbench.labels.generate import MAX_TOKENS, SEED
from workbench.models.base import DEVICES, resolve_device
from workbench.models.choose import embedders_of
from workbench.models.embed import AUTO, BACKENDS, DEFAULT_BACKEND
from workbench.models.llm import LLM_SPEC
from workbench.params import Param
from workbench.retrieval.ann import Ann
from workbench.retrievers import DENSE, STAGES
from workbench.variant import CONTEXT_PARAMS, MODIFIERS, Variant, parse_variant

if TYPE_CHECKING:
    from workbench.answers import Answers
    from workbench.sweep import SweepResult
    from workbench.verdict import Verdict

DEMO_GRID = (
    "fixed:size=128",
    "fixed:size=256",
    "fixed:size=256,overlap=64",
    "fixed:size=512",
    "fixed:size=256+bm25",
    "fixed:size=256+hybrid",
    "recursive:size=256",
    "langchain_recursive:chunk_size=256",
    "sentence:size=256",
    "semantic:breakpoint_percentile=80,max_size=256",
    "semantic:breakpoint_percentile=95,max_size=256",
)

DEMO_OUT = Path("results/demo")
CHECK_OUT = Path("results/check")
TOP = 5  # variants in the table a run ends with (--top)
WIDTH = 100  # columns the verdict's sentences are wrapped to
CONFIRM_SETS = ("variant", "grid", "out", "preview")  # what a preview's confirm command sets itself

EPILOG = """\
variants are written strategy:name=value,name=value with optional modifiers +header
(contextual chunk header), +late (late chunking), +context (contextual retrieval: the bundled
LLM writes each chunk's context, +context:max_tokens=32,model=my.gguf to change it) and one
retriever, +bm25 or +hybrid (reciprocal rank fusion of dense and BM25, +hybrid:rrf_k=30 to
change its k=60); without one, retrieval is dense. e.g.
  fixed:size=256,overlap=32        recursive:size=512,separators=markdown
  semantic:breakpoint_percentile=90,buffer_size=1+header      fixed:size=256+context+hybrid
  fixed:size=256+bm25              fixed:size=256+hybrid:rrf_k=30
  'recursive:size=256,custom_separators=["\\n\\n", ". "]'   (values are JSON when they parse)
a grid file is a JSON list of such strings or of objects {"strategy": ..., <params>,
"contextual_header": bool, "late": bool, "contextual": bool or {"model": spec, "doc_tokens": int,
"max_tokens": int}, "retriever": "dense"|"bm25"|"hybrid", "rrf_k": int}.
Run `python -m workbench strategies` to list every strategy, modifier and retrieval stage with
its parameters, defaults and ranges.
"""


def _load_grid(path: Path) -> list[Variant]:
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise SystemExit(f"error: --grid {path}: {e}") from e
    if not isinstance(items, list):
        raise SystemExit(f"error: --grid {path}: expected a JSON list of variants")
    out = []
    for i, item in enumerate(items):
        try:
            if isinstance(item, str):
                out.append(parse_variant(item))
            else:
                spec = dict(item)
                out.append(Variant.make(spec.pop("strategy"), **spec))
        except (ValueError, KeyError, TypeError) as e:
            raise SystemExit(f"error: --grid {path}, item {i}: {e}") from e
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m workbench", description="Chunking workbench for RAG retrieval.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser(
        "sweep",
        help="chunk, embed, index and score a grid of variants",
        description="Chunk the corpus with every variant, embed and index it (cached), retrieve for every "
        "question and write tidy results, plots and a self-contained report.html. Before a cold grid it "
        "prints an estimate (texts to embed, time at a measured rate); it ends with the verdict and the top "
        "variants.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _sweep_arguments(s)
    g = sub.add_parser(
        "check",
        help="a CI gate: compare each variant with a baseline run, paired, and exit 1 on a real drop",
        description="Sweep the variants (from the caches when they were measured) with the same options as "
        "`sweep`, or read a saved run with --current, and compare each variant with the same variant of the "
        "--baseline run on the questions both answered. A variant fails when the confidence interval of its "
        "difference lies below zero and the drop exceeds --max-drop; a baseline variant not measured fails "
        "too. Exit status: 0 pass, 1 fail, 2 error.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g.add_argument("--baseline", type=Path, required=True, help="a saved run (`sweep --out`) to compare against")
    g.add_argument("--current", type=Path, help="a saved run to check instead of sweeping")
    g.add_argument("--metric", choices=metrics.METRICS, default="recall", help="metric compared (default: %(default)s)")
    g.add_argument("--k", type=int, default=metrics.DEFAULT_K, help="its cut-off (default: %(default)s)")
    g.add_argument("--max-drop", type=float, default=DEFAULT_MAX_DROP,
                   help="largest real drop of the metric that passes, absolute (default: %(default)s)")
    _sweep_arguments(g, out=CHECK_OUT)
    _answers_parser(sub)
    sub.add_parser("strategies", help="list chunking strategies, +modifiers and retrieval stages with their parameters")
    _labels_parser(sub)
    _import_parser(sub)
    return p


def _answers_parser(sub: argparse._SubParsersAction) -> None:
    from workbench.answers import DEFAULT_CONTEXT_TOKENS, DEFAULT_MAX_TOKENS, DEFAULT_TOP

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
    _sweep_arguments(a, out=Path("results/answers"), top=DEFAULT_TOP,
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


def _sweep_arguments(s: argparse.ArgumentParser, out: Path = DEMO_OUT, top: int = TOP,
                     top_help: str = "variants in the table the run ends with, best first (default: %(default)s)",
                     ) -> None:
    """The options of a sweep (`sweep`, `answers`, and `check` when it sweeps)."""
    s.add_argument("--data", type=Path, default=Path("data/chroma_small"),
                   help="dataset folder: corpus.jsonl + questions.jsonl, or .md/.txt files + questions.jsonl "
                   "(default: %(default)s)")
    s.add_argument("--questions", type=Path, help="questions file, if not <data>/questions.jsonl")
    s.add_argument("--strict", action="store_true",
                   help="stop with an error when any file of --data is skipped (unknown type, binary, unreadable, "
                   "empty) instead of warning")
    s.add_argument("--out", type=Path, default=out, help="output folder (default: %(default)s)")
    s.add_argument("--variant", "-v", action="append", default=[], metavar="SPEC",
                   help="a variant to sweep (repeatable); see below. Default: the demo grid")
    s.add_argument("--grid", type=Path, help="JSON file with a list of variants (added to --variant)")
    s.add_argument("--ks", type=int, nargs="+", default=list(DEFAULT_KS),
                   help=f"cut-offs k (default: {' '.join(map(str, DEFAULT_KS))})")
    s.add_argument("--budgets", type=int, nargs="*", default=list(DEFAULT_BUDGETS),
                   help="context budgets in tokens, none for no budget rows "
                   f"(default: {' '.join(map(str, DEFAULT_BUDGETS))})")
    s.add_argument("--budget-encoding", choices=BUDGET_ENCODINGS, default="cl100k_base",
                   help="tokenizer the budgets count in (default: %(default)s)")
    s.add_argument("--mode", choices=MODES, default="corpus",
                   help="search the whole corpus, or only each question's own document (default: corpus)")
    s.add_argument("--model", action="append",
                   help="an embedding model (repeatable: every variant is swept with each, one result with a "
                   "model column): a local sentence-transformers folder, 'wordllama' (static embeddings), "
                   "'openai:<model>@<base_url>' (an OpenAI-compatible embeddings endpoint; key from OPENAI_API_KEY), "
                   "or "
                   "'default' for the bundled all-MiniLM-L6-v2 (the default)")
    s.add_argument("--cache", type=Path, default=CACHE_DIR,
                   help="embedding and index cache folder, shared by runs (default: %(default)s)")
    s.add_argument("--max-questions", type=int, help="score a reproducible random sample of this many questions")
    s.add_argument("--distractors", type=int, metavar="N",
                   help="keep only the documents holding the questions' evidence and a reproducible random sample "
                   "of N others (Dataset.with_distractors), after --max-questions")
    s.add_argument("--ann", metavar="SPEC",
                   help="approximate search (FAISS) for indexes of more chunks than `above`: ivf or hnsw, with "
                   "optional name=value,... of above (default 100000), nlist, nprobe, seed (ivf), m, "
                   "ef_construction, ef_search (hnsw), e.g. hnsw:m=16,ef_search=128; the variants table gains "
                   "index and ann_recall (against exact search). Default: exact search")
    s.add_argument("--mmap", action="store_true",
                   help="read indexes memory-mapped: vectors stay on disk, in the page cache, not in the heap")
    s.add_argument("--threads", type=int,
                   help="torch and onnxruntime threads (1 is faster when another process is busy)")
    s.add_argument("--backend", choices=(AUTO, *BACKENDS), default=DEFAULT_BACKEND,
                   help="how the model runs: onnx and onnx-int8 are faster on a CPU, from a copy exported once "
                   "per machine into the model store ($WORKBENCH_MODELS, else ~/.cache/workbench/models); "
                   "their vectors (and so their cache entries) differ from torch's. auto: torch when --cache "
                   "already holds the model's torch vectors or on a GPU, else onnx (default: %(default)s)")
    s.add_argument("--device", choices=DEVICES, default="cpu",
                   help="where the model runs; auto takes a CUDA GPU when there is one (default: %(default)s)")
    s.add_argument("--engine", choices=ENGINES, default="local",
                   help="where uncached texts are embedded: in this process, or on Ray (a local instance, or the "
                   "cluster at --address; needs the ray extra); the results are the same (default: %(default)s)")
    s.add_argument("--address", help='the Ray cluster of --engine ray: "auto", HOST:PORT or ray://HOST:PORT '
                   "(default: start a local Ray instance)")
    s.add_argument("--preview", action="store_true",
                   help="rank the grid in about the time of one variant: chunk vectors pooled from one cached "
                   "model pass over the corpus (workbench.retrieval.preview), every row marked preview; then "
                   "confirm the best with the command it prints (the same options, --out <out>-confirm)")
    if out != CHECK_OUT:  # a check writes tables only
        s.add_argument("--no-report", action="store_true", help="write tables only (no plots, no report.html)")
    s.add_argument("--top", type=int, default=top, metavar="N", help=top_help)
    s.add_argument("--quiet", action="store_true",
                   help="print only the verdict and the top-N table (errors still go to stderr)")


def _labels_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("labels", help="check how every label's evidence locates, or write its offsets",
                       description="Answers may be offsets (doc_id, start, end), offsets with the quote they hold, "
                       "or quotes alone (with doc_id, or searched in the whole corpus) located exactly, normalised "
                       "or fuzzily. `check` prints each label's status; `resolve` writes the questions with offsets.")
    actions = p.add_subparsers(dest="action", required=True)
    for name, helped in (("check", "print every label's status: exact, normalised, fuzzy (score), ambiguous, "
                          "missing (the best candidate), drift (offsets that no longer hold their quote); exit "
                          "status 1 when any would stop load_dataset"),
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
              "to review in wb.Labeler")
    g = actions.add_parser("generate", help=helped, description=helped)
    g.add_argument("data", type=Path, help="dataset folder (corpus.jsonl, or documents); questions not needed")
    g.add_argument("--n", type=int, required=True, help="questions to ask for (passages read)")
    g.add_argument("--out", type=Path, required=True, help="the questions file to write, atomically")
    g.add_argument("--no-llm", action="store_true", help="draft from headings and definitions instead")
    g.add_argument("--model", help="a local GGUF file or Hugging Face folder (default: the bundled SmolLM2-135M)")
    g.add_argument("--max-tokens", type=int, default=MAX_TOKENS, help="per generation (default: %(default)s)")
    g.add_argument("--seed", type=int, default=SEED, help="picks the passages (default: %(default)s)")
    g.add_argument("--cache", type=Path, default=CACHE_DIR, help="generation cache folder (default: %(default)s)")


def _labels(args: argparse.Namespace) -> None:
    from workbench.labels.check import BROKEN, check_labels, resolve_labels, summary

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
    _print_warnings(caught)
    if args.action == "check":
        print("\n".join(s.describe() for s in statuses))
    moved = sum(s.status == "drift" for s in statuses)
    print(summary(statuses) + (f"; wrote {args.out} ({moved} drifted label(s) moved)" if args.action == "resolve"
                               else ""))
    if args.action == "check" and any(s.status in BROKEN for s in statuses):
        raise SystemExit(1)


def _generate(args: argparse.Namespace) -> None:
    """`labels generate`: the estimate, then the questions and what was dropped."""
    from workbench.estimate import estimate_generation
    from workbench.labels.generate import documents, generate, passages, prompt, prompt_items
    from workbench.models.llm import LLM, LLMError

    try:
        with warnings.catch_warnings(record=True, action="always", category=DatasetWarning) as caught:
            docs = documents(args.data)
        _print_warnings(caught)
        llm = False if args.no_llm else LLM(args.model, cache_dir=args.cache)
        if llm:
            items = prompt_items(docs, passages(docs, args.n, seed=args.seed))
            print(estimate_generation(llm, prompt(), items, args.max_tokens).line(), flush=True)
        made = generate(docs, args.n, llm, out=args.out, seed=args.seed, max_tokens=args.max_tokens)
    except (ValueError, LLMError) as e:  # DatasetError too: the file, line and field; LLMError: one line
        raise SystemExit(f"error: {e}") from e
    print(f"{made.summary()}; wrote {args.out}")


def _print_warnings(caught: list[warnings.WarningMessage]) -> None:
    for w in caught:  # one line each, not Python's source-line format
        print(f"warning: {w.message}", file=sys.stderr)


def _import_parser(sub: argparse._SubParsersAction) -> None:
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


def _print_params(params: Mapping[str, Param]) -> None:
    for pname, prm in params.items():
        rng = f" one of {list(prm.choices)}" if prm.choices else (
            f" in [{prm.lo if prm.lo is not None else '-inf'}, {prm.hi if prm.hi is not None else 'inf'}]"
            if prm.lo is not None or prm.hi is not None else "")
        print(f"    {pname} = {prm.default!r}{rng}: {prm.help}")


def _strategies() -> None:
    """Every registered strategy, modifier and retrieval stage, from the registries themselves."""
    for name, s in sorted(STRATEGIES.items()):
        print(f"{name}: {s.help}")
        _print_params(s.params)
    print("\nmodifiers (after the parameters, e.g. fixed:size=256+header):")
    for name, meaning in MODIFIERS.items():
        print(f"+{name}: {meaning}")
        if name == "context":
            _print_params(CONTEXT_PARAMS)
    print(f"\nretrieval stages (last, +name or +name:param=value, e.g. fixed:size=256+hybrid:rrf_k=30; {DENSE} "
          "without one):")
    for name, stage in STAGES.items():
        place = "" if stage.first else " (after a retriever: reorders its candidates)"
        print(f"+{name}: {stage.help}{place}")
        _print_params(stage.params)


def _measure(args: argparse.Namespace, then: Callable[[SweepResult, Dataset], Answers] | None = None,
             ) -> tuple[SweepResult, Answers | None, Verdict | None]:
    """The sweep the options describe, what `then` makes of it (answer quality) and its verdict
    (None when it has none), saved to --out (with plots and the report unless --no-report), with
    its progress and the paths it wrote printed unless --quiet."""
    from workbench.estimate import estimate
    from workbench.retrieval.index import IndexStore
    from workbench.sweep import sweep

    try:
        variants = [parse_variant(v) for v in args.variant]
    except ValueError as e:
        raise SystemExit(f"error: --variant: {e}") from e
    if args.grid:
        variants += _load_grid(args.grid)
    variants = variants or [parse_variant(v) for v in DEMO_GRID]
    if args.max_questions is not None and args.max_questions < 1:
        raise SystemExit(f"error: --max-questions must be >= 1, got {args.max_questions}")
    if args.top < 1:
        raise SystemExit(f"error: --top must be >= 1, got {args.top}")
    try:
        with warnings.catch_warnings(record=True, action="always", category=DatasetWarning) as caught:
            dataset = load_dataset(args.data, args.questions, strict=args.strict)
    except DatasetError as e:
        raise SystemExit(f"error: {e}") from e
    _print_warnings(caught)
    if args.max_questions:
        dataset = dataset.select(max_questions=args.max_questions)
    if args.distractors is not None:
        try:
            dataset = dataset.with_distractors(args.distractors)
        except ValueError as e:
            raise SystemExit(f"error: --distractors: {e}") from e
    t0 = time.perf_counter()
    try:
        device = resolve_device(args.device)
    except ValueError as e:
        raise SystemExit(f"error: --device: {e}") from e
    try:  # before the model loads: a bad setting costs nothing
        settings = Settings(ks=tuple(args.ks), budgets=tuple(args.budgets), budget_encoding=args.budget_encoding,
                            mode=args.mode, preview=args.preview,
                            ann=Ann.parse(args.ann) if args.ann else None)
    except (TypeError, ValueError) as e:
        raise SystemExit(f"error: {e}") from e
    try:
        engine = get_engine(args.engine, args.address)
    except (ImportError, ValueError, ConnectionError) as e:
        raise SystemExit(f"error: {'--address' if args.address else '--engine'}: {e}") from e
    try:
        specs = [None if m == "default" else m for m in args.model or ["default"]]
        embedders = embedders_of(specs, args.cache, threads=args.threads, progress=not args.quiet,
                                 backend=args.backend, device=device, **({"engine": engine} if engine else {}))
    except ValueError as e:  # the model folder, or a backend the device cannot run
        option = "--device" if "device=" in str(e) else "--model"
        raise SystemExit(f"error: {option}: {e}") from e
    if not args.quiet:
        print(f"{dataset.name}: {len(dataset.documents)} documents, {len(dataset.questions)} questions, "
              f"{len(variants)} variants, model{'s' * (len(embedders) > 1)} {', '.join(e.name for e in embedders)}")
    store = IndexStore(args.cache, mmap=args.mmap)
    try:
        if not args.quiet:  # before a cold grid starts: how much it will embed, and for how long
            for e in embedders:
                if e.window_tokens is not None:  # a model with a transformer: what the estimate times
                    line = estimate(dataset, variants, settings, embedder=e, store=store).line()
                    print(textwrap.fill(f"{e.name}: " * (len(embedders) > 1) + line, WIDTH, subsequent_indent="  "))
        result = sweep(dataset, variants, settings, models=embedders, store=store, progress=not args.quiet)
        result.config["command"] = shlex.join(["python", "-m", "workbench", *args.argv])
        answers = then(result, dataset) if then else None
        judged = _verdict(result, args.cache)
        if getattr(args, "no_report", True):
            paths = result.save(args.out) | (answers.save(args.out) if answers else {})
        else:
            from workbench.report import export

            paths = export(result, args.out, dataset=dataset, store=args.cache, answers=answers, judged=judged)
    except Exception as e:  # one line, never a traceback: what failed, where, and why
        raise SystemExit(f"error: {describe(e)}") from e
    if not args.quiet:
        embedded = sum(e.stats.embedded for e in embedders)
        print(f"done in {time.perf_counter() - t0:.1f} s: {_computed(result, len(result.keys), embedded)}")
        print(_wrote(args.out, paths))
        if args.preview:
            print("\n".join(_preview_lines(args, result)))
        print()
    return result, answers, judged


def _verdict(result: SweepResult, cache: Path) -> Verdict | None:
    """The verdict, computed once for the report and the closing lines (its paired comparisons read
    back from `cache` on a re-run); None when the result allows none (`answer` then says why)."""
    from workbench.verdict import verdict

    try:
        return verdict(result, cache=cache)
    except ValueError:
        return None


def _sweep(args: argparse.Namespace) -> None:
    result, _, judged = _measure(args)
    print("\n".join(answer(result, args.top, judged)))


def _answers(args: argparse.Namespace) -> None:
    """`answers`: the sweep, then answer quality of its --top best (options checked before any work)."""
    from workbench.answers import evaluate, text_table
    from workbench.models.llm import llm_of

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

    answers = _measure(args, then)[1]
    c = answers.config
    made = (f"generated {c['generated']} answers ({c['generated_tokens']} tokens, {c['generation_seconds']:.1f} s)"
            if c["generated"] else "generated nothing (every answer came from the cache)")
    print(f"Answer quality at {c['context_tokens']:,} {c['encoding']} tokens of context, {c['llm']}, "
          f"{len(answers.per_question['qid'].unique())} questions; {made}:\n")
    print(text_table(answers))


def _gate(args: argparse.Namespace) -> tuple[pd.DataFrame, SweepResult, SweepResult]:
    from workbench.gate import compare
    from workbench.sweep import SweepResult

    try:
        baseline = SweepResult.load(args.baseline)
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: --baseline: {e}") from e
    if args.current:
        try:
            current = SweepResult.load(args.current)
        except (OSError, ValueError) as e:
            raise SystemExit(f"error: --current: {e}") from e
    else:
        current = _measure(args)[0]
    try:
        return compare(baseline, current, args.metric, args.k, args.max_drop), baseline, current
    except ValueError as e:
        raise SystemExit(f"error: {e}") from e


def _check(args: argparse.Namespace) -> None:
    """Exit 1 when a variant dropped (see workbench.gate), after printing the comparison; 2 on an
    error, so a CI job tells a failed gate from a broken one."""
    try:
        table, baseline, current = _gate(args)
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            raise SystemExit(2) from None
        raise
    for what in ("dataset_fingerprint", "model_fingerprint"):
        if baseline.config.get(what) != current.config.get(what):
            print(f"note: the runs differ in {what.split('_')[0]} ({baseline.config.get(what)} -> "
                  f"{current.config.get(what)}); each variant is compared on the questions both answered")
    shown = table.drop(columns="key").rename(columns={"n": "questions"})
    print(shown.to_string(index=False, float_format=lambda x: f"{x:.3f}", na_rep=""))
    drops, missing = (int((table["status"] == s).sum()) for s in ("drop", "missing"))
    from workbench.gate import failed

    if failed(table):
        print(f"FAIL: {drops} variant(s) dropped {args.metric}@{args.k} by more than {args.max_drop} with the "
              f"interval below 0; {missing} baseline variant(s) not measured")
        raise SystemExit(1)
    print(f"PASS: no variant's {args.metric}@{args.k} dropped by more than {args.max_drop} "
          f"({len(table)} compared or new)")


def _wrote(folder: Path, paths: dict[str, Path]) -> str:
    """Where the run's files are, in one line: the folder, the report first, the figures counted."""
    names = sorted((p.name for p in paths.values()), key=lambda n: n != "report.html")
    figures = [n for n in names if n.endswith(".png")]
    files = ", ".join(n for n in names if n not in figures)
    return f"wrote {folder}/: {files}" + (f" and {len(figures)} figures (.png)" if figures else "")


def answer(result: SweepResult, top: int = TOP, judged: Verdict | None = None) -> list[str]:
    """What a run ends with, as lines: the verdict's sentences (its warnings last), wrapped, then its
    `top` variants on the verdict's metric (the headline marked, and added when it ranks lower); one
    line saying why when the result allows no verdict (e.g. no recall), and the warnings. `judged`:
    the verdict when computed already, else computed here."""
    from workbench.verdict import sweep_warnings, verdict

    try:
        v = judged if judged is not None else verdict(result)
    except ValueError as e:  # the warnings still hold
        return [f"No verdict: {e}. The tables hold every score.", *sweep_warnings(result.variants, result.config)]
    at = f"{v.metric}@{v.k}"
    preview = " (a preview: pooled vectors, confirm before you trust it)" if result.config.get("preview") else ""
    out = [f"Verdict on {at} over {v.questions} questions{preview}:"]
    out += [line for sentence in v.sentences() for line in textwrap.wrap(sentence, WIDTH, initial_indent="  ",
                                                                          subsequent_indent="  ")]
    ranked = v.table.reset_index(drop=True)
    shown = ranked[(ranked.index < top) | (ranked["key"] == v.best)]
    level = f"{result.config.get('confidence', 0.95):.0%}"
    head = ["", "#", "variant", f"{at} [{level} CI]", f"context tokens@{v.k}", "chunks", "truncated"]
    rows = [["*" if r.key == v.best else "", str(i + 1), r.variant, f"{r.mean:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]",
             _count(r.context_tokens), _count(getattr(r, "chunks", None)),
             _truncated(getattr(r, "truncated_chunks", None), getattr(r, "chunks", None))]
            for i, r in zip(shown.index, shown.itertuples(index=False), strict=True)]
    widths = [max(len(row[c]) for row in [head, *rows]) for c in range(len(head))]
    left = {1, 2}  # rank and label read left to right; numbers align right
    out += [""] + ["  ".join(cell.ljust(w) if c in left else cell.rjust(w)
                             for c, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
                   for row in [head, *rows]]
    more = "; --top N for more" if len(shown) < len(ranked) else ""
    out.append(f"* the headline; {len(shown)} of {len(ranked)} variants, by {at}{more}")
    return out


def _count(value: float | None) -> str:
    return "-" if value is None or pd.isna(value) else f"{value:,.0f}"


def _truncated(n: float | None, chunks: float | None) -> str:
    """Chunks longer than the model's window, with their share when there are any."""
    if n is None or pd.isna(n) or not n or not chunks:
        return _count(n)
    return f"{n:,.0f} ({n / chunks:.0%})"


def _computed(result: SweepResult, n_variants: int, embedded: int) -> str:
    """What the run computed, for its closing line: the indexes built, or the preview's token pass,
    and the texts embedded (`embedded`: the estimate's sample too)."""
    c = result.config
    if not c.get("preview"):
        texts = f"{embedded} texts embedded" if embedded else "embedded nothing new (every vector came from the cache)"
        return f"{int(result.variants['built'].sum())} of {n_variants} indexes built, {texts}"
    texts = f"{embedded} texts embedded" if embedded else "no text embedded"
    passed = c["token_pass_documents"]
    tokens = (f"a token pass over {passed} documents (computed now)" if passed
              else f"the cached token pass over {c['documents']} documents (no model pass)")
    return f"a preview of {n_variants} variants from {tokens}, {texts}"


def _preview_lines(args: argparse.Namespace, result: SweepResult) -> list[str]:
    """What a preview can order (its own paired bootstrap over questions, SweepResult.ties), and
    the real sweep of the variants tied with its top: the set that should hold the real best."""
    from workbench.evaluation import stats

    ties = result.ties(k=metrics.default_k(args.ks))
    level = f"{result.config.get('confidence', 0.95):.0%}"
    runs = stats.cannot_order(ties)
    out = [textwrap.fill(f"preview: cannot tell apart ({level} paired interval holds 0): {', '.join(run)}", WIDTH,
                         subsequent_indent="  ") for run in runs]
    if not runs:
        out.append(f"preview: every neighbour in its ranking is apart at {level}")
    tied = [result.variant(key) for key in ties.loc[ties["tied_with_top"], "key"]]
    out.append(f"preview: confirm the {len(tied)} variant{'s' * (len(tied) > 1)} tied with its best with real "
               f"embeddings:\n  {_confirm_command(args, tied)}")
    return out


def _confirm_command(args: argparse.Namespace, best: list[Variant]) -> str:
    """The real sweep of a preview's best, runnable as printed: every option given (but the grid
    and --preview), the variants, and an --out of its own beside the preview's, which it keeps."""
    defaults = vars(_parser().parse_args(["sweep"]))
    words = ["python", "-m", "workbench", "sweep"]
    for name, value in vars(args).items():
        if name in CONFIRM_SETS or name not in defaults or value == defaults[name]:  # not given (or argv)
            continue
        option = f"--{name.replace('_', '-')}"
        if isinstance(value, bool):
            words.append(option)
        elif name == "model":  # repeatable
            words += [w for m in value for w in (option, m)]
        else:
            words += [option, *map(str, value if isinstance(value, list) else [value])]
    out = args.out if args.out.name else args.out.resolve()
    words += ["--out", str(out.with_name(f"{out.name}-confirm"))]
    return shlex.join(words + [w for v in best for w in ("-v", v.text)])


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else argv  # kept in the result, to run it again
    if args.command == "strategies":
        _strategies()
    elif args.command == "check":
        _check(args)
    elif args.command == "labels":
        _labels(args)
    elif args.command == "import":
        _import(args)
    elif args.command == "answers":
        _answers(args)
    else:
        _sweep(args)


if __name__ == "__main__":
    main(sys.argv[1:])
