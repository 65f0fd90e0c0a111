"""A variant's chunking as a Python file to run in production, checked to cut what the workbench cut.

    export = wb.export_code("recursive:size=238,tokenizer=model", to="langchain", dataset=ds)
    print(*export.verdict, sep="\\n")
    Path("chunker.py").write_text(export.code)

`to` names a library (langchain, llamaindex, chonkie: workbench.export.<name>, one shape per strategy)
or "python". A library's closest construction of the chunking is run on the corpus and compared
with the workbench's chunks (workbench.export.parity); when they are the same texts in the same
order in every document, the file is the library's. Otherwise the export says what the library
cannot express (each gap naming the parameter) and how far its chunks are, and the file is the
plain-Python export (workbench.export.python), itself checked, with the library's attempt kept at
its end, commented out.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from dataclasses import dataclass
from importlib.metadata import packages_distributions
from pathlib import Path

from workbench.chunkers import ChunkEnv
from workbench.core.chunk import Chunk
from workbench.core.tokens import MODEL_TOKENIZER
from workbench.dataset import Dataset
from workbench.export import chonkie, langchain, llamaindex
from workbench.export.library import Attempt, Library, Model
from workbench.export.parity import ExportRunError, Parity, compare, run_export
from workbench.export.python import python_snippet
from workbench.export.snippet import Snippet
from workbench.models.embed import Embedder, default_model_path
from workbench.variant import DENSE_ONLY, Variant, parse_variant

LIBRARIES: dict[str, Library] = {"langchain": langchain.LIBRARY, "llamaindex": llamaindex.LIBRARY,
                                 "chonkie": chonkie.LIBRARY}
PYTHON = "python"
TARGETS = (*LIBRARIES, PYTHON)
DEFAULT_DATA = Path("data/chroma_small")
# strategies that run a library's own splitter: their plain-Python export is that library's construction
NATIVE = {"langchain_recursive": "langchain", "llamaindex_sentence": "llamaindex"}


@dataclass(frozen=True)
class Export:
    """A variant's chunking as a file (`code`), and what checking it on a corpus found."""

    variant: Variant
    target: str  # what was asked for: a key of LIBRARIES, or "python"
    code: str  # the file: the library's construction when it cuts what the workbench cut, else the plain-Python one
    in_library: bool  # whether `code` builds the chunking in the library asked for
    exact: bool  # whether `code` gave the workbench's chunks on the corpus (same texts, same order, every document)
    verdict: tuple[str, ...]  # what the check found, in sentences
    gaps: tuple[str, ...] = ()  # what the library cannot express, each naming the parameter
    attempt: Snippet | None = None  # the library's closest construction (None: it has none, or `code` is it)
    parity: Parity | None = None  # how its chunks compared with the workbench's (None: none ran)


@dataclass(frozen=True)
class _Corpus:
    """The corpus a file is checked on, and the workbench's chunks of it."""

    dataset: Dataset
    chunks: list[Chunk]

    def check(self, code: str) -> Parity:
        return compare(self.dataset.documents, self.chunks, run_export(code, self.dataset.documents))

    def said(self, parity: Parity, who: str) -> tuple[str, ...]:
        """The check's lines, the first naming the corpus."""
        first, *rest = parity.lines(who)
        return (f"Checked on {self.dataset.name}: {first}", *rest)


def export_code(variant: Variant | str, to: str, dataset: Dataset | str | Path | None = None,
                embedder: Embedder | None = None) -> Export:
    """`variant` as a runnable file for `to` (a library or "python"), checked on `dataset` (a
    Dataset or a folder; default data/chroma_small). `embedder` is the model the sweep ran (default
    the bundled one): its tokenizer counts tokenizer="model", and semantic embeds with it."""
    if to not in TARGETS:
        raise ValueError(f"export: parameter 'to' must be one of {list(TARGETS)}, got {to!r}")
    variant = parse_variant(variant) if isinstance(variant, str) else variant
    library = LIBRARIES.get(to)
    if library is not None and importlib.util.find_spec(library.module.split(".")[0]) is None:
        raise ValueError(f"export: {library.name} is not installed: pip install {library.package}")
    embedder = embedder or Embedder(progress=False)
    model = Model(embedder.path, embedder.path == default_model_path())
    plain = _plain_snippet(variant, model)  # refuses what has no export before any chunking
    dataset = _dataset(dataset)
    # the model's tokenizer only where sizes count its word pieces: an embedder on torch loads it through transformers
    counts_model = variant.kwargs.get("tokenizer") == MODEL_TOKENIZER
    env = ChunkEnv(embed=lambda texts: embedder.encode(texts, desc="sentences"),
                   model_tokenizer=embedder.tokenizer if counts_model else None)
    corpus = _Corpus(dataset, variant.chunk(dataset, env))
    notes = _notes(variant, embedder)
    if library is None:
        return _plain(variant, to, plain, corpus, notes)
    shape = library.shapes.get(variant.strategy)
    tried = (shape(variant.kwargs, model) if shape else
             Attempt(None, (f"strategy {variant.strategy!r}: {library.name} has no counterpart",)))
    if tried.snippet is None:
        return _plain(variant, to, plain, corpus, notes, tried,
                      (f"{library.name} has no construction close to it, so nothing of it was run.",))
    made = f"built with {library.name}"
    code = tried.snippet.render(_header(variant, made, ()))
    try:
        parity = corpus.check(code)
    except ExportRunError as e:
        failed = (f"{library.name}'s closest construction failed to run: {e}",)
        return _plain(variant, to, plain, corpus, notes, tried, failed)
    checked = corpus.said(parity, library.name)
    if not parity.exact:
        return _plain(variant, to, plain, corpus, notes, tried, checked, parity)
    verdict = (f"{library.name} builds {variant.label} as the workbench cuts it.", *checked, *notes)
    if tried.gaps:
        verdict += ("On other texts it may cut otherwise:", *(f"- {gap}" for gap in tried.gaps))
    code = tried.snippet.render(_header(variant, made, verdict, needs(code, tried.packages)))
    return Export(variant, to, code, True, True, verdict, tried.gaps, None, parity)


def _plain_snippet(variant: Variant, model: Model) -> tuple[Snippet, str]:
    """The plain-Python file's code, and how it is made: the workbench's chunker copied, or for a
    strategy that runs a library's splitter, that library's construction."""
    native = LIBRARIES.get(NATIVE.get(variant.strategy, ""))
    if native is not None:
        return (native.shapes[variant.strategy](variant.kwargs, model).snippet,
                f"built with {native.name}, as the workbench's strategy runs it")
    return python_snippet(variant, model), "the workbench's own chunker, copied in plain Python"


def _plain(variant: Variant, to: str, plain: tuple[Snippet, str], corpus: _Corpus, notes: tuple[str, ...],
           tried: Attempt | None = None, checked: tuple[str, ...] = (), parity: Parity | None = None) -> Export:
    """The plain-Python export, checked; when a library was asked for, what it cannot express and
    what `checked` found said in the header, and its closest construction kept at the end."""
    snippet, made = plain
    draft = snippet.render(_header(variant, made, ()))
    own = corpus.check(draft)
    verdict: tuple[str, ...] = ()
    if tried is not None:
        name = LIBRARIES[to].name
        said = [f"- {gap}" for gap in tried.gaps] or ["- (every parameter: it expresses them all, yet cuts otherwise)"]
        verdict = (f"{name} cannot build {variant.label} as the workbench cuts it:", *said, *checked,
                   f"So this file is {made}.")
    verdict += (*corpus.said(own, "this file"), *notes)
    code = snippet.render(_header(variant, made, verdict, needs(draft)))
    attempt = tried.snippet if tried is not None else None
    if attempt is not None:
        code += f"\n\n# {LIBRARIES[to].name}'s closest construction, which cuts otherwise (see above):\n#\n"
        code += "\n".join(f"# {line}".rstrip() for line in attempt.code().splitlines()) + "\n"
    return Export(variant, to, code, False, own.exact, verdict, tried.gaps if tried else (), attempt, parity)


def _dataset(dataset: Dataset | str | Path | None) -> Dataset:
    if isinstance(dataset, Dataset):
        return dataset
    from workbench.ingest.folder import load_documents

    folder = Path(dataset or DEFAULT_DATA)
    if not folder.exists():
        raise ValueError(f"export: parameter 'dataset': {folder} does not exist")
    docs = load_documents(folder, require_questions=False)[0]  # the chunks need no questions
    return Dataset(folder.name, tuple(docs), ())


def _notes(variant: Variant, embedder: Embedder) -> tuple[str, ...]:
    """What the file leaves out or does otherwise than the sweep, said in its header."""
    notes = []
    if variant.stages != DENSE_ONLY or variant.contextual_header or variant.late or variant.contextual:
        notes.append("Only the chunking is exported: the +modifiers and retrieval stages of "
                     f"{variant.label} change what is embedded or how it is searched, never a chunk's text.")
    if variant.strategy_entry().embeds:
        notes.append(f"It embeds with sentence-transformers ({embedder.name}, on torch); the sweep's vectors came "
                     f"from its {embedder.backend} backend, whose float rounding differs a little: a breakpoint "
                     "whose distance ties the percentile could move.")
    return tuple(notes)


def _header(variant: Variant, made: str, verdict: tuple[str, ...], packages: list[str] | None = None) -> str:
    """The file's docstring: what it is (`made`: how it is built), what the check found, what it
    needs, how to run it."""
    lines = [f"Chunking {variant.label}: {made}, exported by the chunking workbench.", "", *verdict, ""]
    if packages:
        lines += [f"Needs: pip install {' '.join(packages)}", ""]
    lines += ["chunk(text) gives the chunk texts of a document, in order; `python THIS_FILE.py FILE` prints FILE's."]
    return "\n".join(lines).replace("\\", "\\\\")


def needs(code: str, packages: tuple[str, ...] = ()) -> list[str]:
    """The packages (as pip names them) whose modules `code` imports, standard library left out, and
    `packages` (what a library needs besides)."""
    modules: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            modules |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.add(node.module.split(".")[0])
    owners = packages_distributions()
    return sorted({owners.get(m, [m])[0] for m in modules - sys.stdlib_module_names} | set(packages))
