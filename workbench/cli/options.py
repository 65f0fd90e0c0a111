"""What the commands share: the options of a sweep and the session and grid they describe, grid
files, warnings as lines."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

from workbench.core.io import CACHE_DIR
from workbench.dataset import Dataset, DatasetError, DatasetWarning
from workbench.evaluation.metrics import BUDGET_ENCODINGS, DEFAULT_BUDGETS, DEFAULT_KS
from workbench.evaluation.settings import MODES, Settings
from workbench.ingest import load_dataset
from workbench.ingest.folder import load_documents
from workbench.models.base import DEVICES, resolve_device
from workbench.models.choose import embedders_of
from workbench.models.embed import AUTO, BACKENDS, DEFAULT_BACKEND
from workbench.retrieval.ann import Ann
from workbench.retrieval.pgvector import check_url
from workbench.run.engine import ENGINES, get_engine
from workbench.run.session import Session
from workbench.variant import Variant, parse_variant

DEMO_OUT = Path("results/demo")
CHECK_OUT = Path("results/check")
TOP = 5  # variants in the table a run ends with (--top)
WIDTH = 100  # columns the verdict's sentences are wrapped to

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


def load_grid(path: Path) -> list[Variant]:
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


def sweep_arguments(s: argparse.ArgumentParser, out: Path = DEMO_OUT, top: int = TOP,
                     top_help: str = "variants in the table the run ends with, best first (default: %(default)s)",
                     ) -> None:
    """The options of a sweep (`sweep`, `answers`, and `check` when it sweeps)."""
    s.add_argument("--data", type=Path, default=Path("data/chroma_small"),
                   help="dataset folder: corpus.jsonl + questions.jsonl, or a folder of documents (Markdown, "
                   "reStructuredText, text, HTML, PDF, Word, source code in 20 languages) + questions.jsonl "
                   "(default: %(default)s)")
    s.add_argument("--questions", type=Path, help="questions file, if not <data>/questions.jsonl")
    s.add_argument("--strict", action="store_true",
                   help="stop with an error when any file of --data is skipped (unknown type, binary, unreadable, "
                   "empty) instead of warning")
    s.add_argument("--skip-missing", action="store_true",
                   help="leave out each label whose evidence is not located (a quote not found or found in several "
                   "places, offsets that no longer hold their quote) and a question left with no answer, named in "
                   "one warning that the report repeats, instead of stopping (`labels check` lists them)")
    s.add_argument("--out", type=Path, default=out, help="output folder (default: %(default)s)")
    s.add_argument("--variant", "-v", action="append", default=[], metavar="SPEC",
                   help="a variant to sweep (repeatable); see below. Default: the default grid of the data and the "
                   "model (every dense variant sized in the model's tokens to fit its window; code, markdown and a "
                   "route of both when the folder holds source code and Markdown or reStructuredText)")
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
    s.add_argument("--pg", metavar="URL",
                   help="the PostgreSQL with pgvector that variants with the +pgvector retrieval stage search, as "
                   "postgresql://user:password@host:port/database (default: the bundled server, started in --cache "
                   "on first use and stopped at the end)")
    s.add_argument("--mmap", action="store_true",
                   help="read indexes memory-mapped: vectors stay on disk, in the page cache, not in the heap")
    s.add_argument("--threads", type=int,
                   help="torch, onnxruntime and OpenVINO threads (1 is faster when another process is busy)")
    s.add_argument("--backend", choices=(AUTO, *BACKENDS), default=DEFAULT_BACKEND,
                   help="how the model runs: onnx and onnx-int8 are faster on a CPU, from a copy exported once "
                   "per machine into the model store ($WORKBENCH_MODELS, else ~/.cache/workbench/models); "
                   "openvino-bf16 runs that copy in bfloat16 on a CPU with AMX or AVX512_BF16, several times "
                   "faster there; their vectors (and so their cache entries) differ from torch's. auto: torch "
                   "when --cache already holds the model's torch vectors or on a GPU, else onnx (default: %(default)s)")
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
        s.add_argument("--label-free", action="store_true",
                       help="add the quality measures that need no questions (cut_contrast, cohesion) to the report's "
                       "chunk health, beside the scores (`audit --label-free` without questions)")
    s.add_argument("--top", type=int, default=top, metavar="N", help=top_help)
    s.add_argument("--quiet", action="store_true",
                   help="print only the verdict and the top-N table (errors still go to stderr)")


def print_warnings(caught: list[warnings.WarningMessage]) -> None:
    for w in caught:  # one line each, not Python's source-line format
        print(f"warning: {w.message}", file=sys.stderr)


def variants_of(args: argparse.Namespace) -> list[Variant]:
    """The grid the options name: every --variant, then the --grid file's; [] when they name none (the
    sweep then runs the default grid of its data and model, `grid_of`)."""
    try:
        variants = [parse_variant(v) for v in args.variant]
    except ValueError as e:
        raise SystemExit(f"error: --variant: {e}") from e
    return variants + (load_grid(args.grid) if args.grid else [])


def grid_of(session: Session, variants: list[Variant]) -> list[Variant]:
    """`variants`, or when there are none the session's default grid (Session.default_grid)."""
    return variants or session.default_grid()


def session_of(args: argparse.Namespace) -> Session:
    """The session the options describe: the dataset (--data, --questions, --strict, --skip-missing,
    --max-questions, --distractors), the settings, the engine, the models and the pgvector server (--pg), each
    refused with a one-line error naming its option before any model loads."""
    if args.max_questions is not None and args.max_questions < 1:
        raise SystemExit(f"error: --max-questions must be >= 1, got {args.max_questions}")
    try:
        if args.pg:
            check_url(args.pg)
    except ValueError as e:
        raise SystemExit(f"error: --pg: {e}") from e
    try:
        with warnings.catch_warnings(record=True, action="always", category=DatasetWarning) as caught:
            dataset = load_dataset(args.data, args.questions, strict=args.strict,
                                   missing="skip" if args.skip_missing else "error")
    except DatasetError as e:
        raise SystemExit(f"error: {e}") from e
    print_warnings(caught)
    if args.max_questions:
        dataset = dataset.select(max_questions=args.max_questions)
    if args.distractors is not None:
        try:
            dataset = dataset.with_distractors(args.distractors)
        except ValueError as e:
            raise SystemExit(f"error: --distractors: {e}") from e
    try:
        device = resolve_device(args.device)
    except ValueError as e:
        raise SystemExit(f"error: --device: {e}") from e
    try:  # before the model loads: a bad setting costs nothing
        settings = Settings(ks=tuple(args.ks), budgets=tuple(args.budgets), budget_encoding=args.budget_encoding,
                            mode=args.mode, preview=args.preview, ann=Ann.parse(args.ann) if args.ann else None)
    except (TypeError, ValueError) as e:
        raise SystemExit(f"error: {e}") from e
    try:
        engine = get_engine(args.engine, args.address)
    except (ImportError, ValueError, ConnectionError) as e:
        raise SystemExit(f"error: {'--address' if args.address else '--engine'}: {e}") from e
    try:
        specs = [None if m == "default" else m for m in args.model or ["default"]]
        models = embedders_of(specs, args.cache, threads=args.threads, progress=not args.quiet,
                              backend=args.backend, device=device, engine=engine)
    except ValueError as e:  # the model folder, or a backend the device cannot run
        option = "--device" if "device=" in str(e) else "--model"
        raise SystemExit(f"error: {option}: {e}") from e
    return Session(dataset, settings, cache=args.cache, models=models, engine=engine, progress=not args.quiet,
                   mmap=args.mmap, pg=args.pg)


def documents_of(folder: Path, strict: bool) -> Dataset:
    """The documents of `folder` as a dataset, its questions (if any) left out: what reads chunks only
    (audit, export) needs none, and a quote that no longer locates must not stop it."""
    try:
        with warnings.catch_warnings(record=True, action="always", category=DatasetWarning) as caught:
            docs = load_documents(folder, strict=strict, require_questions=False)[0]
    except DatasetError as e:
        raise SystemExit(f"error: {e}") from e
    print_warnings(caught)
    return Dataset(folder.name, tuple(docs), ())
