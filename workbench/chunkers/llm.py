"""Chunking by a language model: propositions (Dense X Retrieval) and LLM-chosen boundaries (Chroma's
LLM chunker). The model is the one a `model` parameter names (workbench.models.llm.llm_of; "llm" is
the bundled SmolLM2-135M, small and weak), asked through ChunkEnv.llm, so every generation is cached
by content and a re-run generates nothing; its fingerprint names the variant's index entry and
scores (Strategy.models). What the generations cost, and how often the model's answer could not be
used, is counted in ChunkEnv.llm_cost: the index cost of the variant.

Spans stay exact. A proposition is not a span of the document, so it is the chunk's `embed_text` and
its chunk is its SOURCE PASSAGE: retrieval is scored on passages. Several propositions of one passage
are several rows with one span; a ranking keeps the best-ranked of them and skips the rest
(ChunkIndex.hits returns each span once), so a top-k holds k distinct passages. What counts as sent
is the `context` parameter: the passage (what an application would hand the LLM), or the one
proposition that ranked (Chunk.context_text; recall is still scored on its passage, so that mode
credits evidence the proposition may have left out).

A passage of fewer than MIN_WORDS words (a heading, a lone word) is its own statement: nothing is asked.
Model output that cannot be used never passes silently: a passage whose answer holds no statement is
embedded as itself, a window whose answer holds no piece number is cut by size, and a chunk over
`max_size` is cut by size; each is counted ("fallbacks") and warned about per document.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.chunkers.base import ChunkEnv
from workbench.chunkers.registry import Asks, strategy
from workbench.chunkers.sentence import pack, sentences_of
from workbench.chunkers.units import TOKENIZER
from workbench.core.chunk import Bounds, Chunk, make_chunk
from workbench.core.params import Param
from workbench.dataset import Document
from workbench.models.llm import LLM_SPEC, Prompt, llm_fingerprint


class LLMChunkWarning(UserWarning):
    """The model's answers for some passages or windows of a document could not be used: counted fallbacks."""


MODEL = Param(LLM_SPEC, f"the LLM: {LLM_SPEC!r} (the bundled SmolLM2-135M), a local .gguf file or Hugging Face "
              "folder, or an endpoint 'openai:<model>@<base_url>'", label=True)


def _check(params: dict[str, Any]) -> None:
    """The model is found before any chunk is made (its files hashed, nothing loaded, no endpoint asked)."""
    llm_fingerprint(params["model"])


# Bump a prompt's version when its wording changes: it names the cached generations.
PROPOSE = Prompt(
    "propositions", 1,
    "Rewrite the passage as a list of short, simple statements, one per line. Each statement says one fact "
    "and can be understood alone: use full names instead of pronouns. Write only the statements.\n\n"
    "Passage:\n{passage}",
)
# The pieces, then the question: so worded, the bundled model answered with numbers; with the question first,
# or with a worked example, it wrote prose (tried on tests/chunkers/test_llm_chunkers.py's story)
BOUNDARIES = Prompt(
    "llm-chunk", 1,
    "{pieces}\n\nThe sentences above are numbered. List the numbers of the sentences where a new topic begins. "
    'Reply with numbers only, like "3, 5". Reply 0 if the topic never changes.',
)

_BULLET = re.compile(r"^\s*(?:[-*•]+|\(?\d+[.)]|statement\s*\d*\s*:)\s*", re.IGNORECASE)
MIN_WORDS = 3  # a line with fewer words is no statement (a heading, a cut-off answer, noise)


def _generate(env: ChunkEnv, spec: str, prompt: Prompt, items: Sequence[Mapping[str, Any]], max_tokens: int,
              doc: Document) -> list[str]:
    """The model's answers, their cost (cached ones at what they cost when made) counted in env.llm_cost;
    with nothing to ask, the model is not even made."""
    if not items:
        return []
    made = env.llm(spec).generate(prompt, items, max_tokens=max_tokens, desc=f"{prompt.name} {doc.doc_id}",
                                  stop=env.stop)
    env.llm_cost["tokens_generated"] += sum(g.generated_tokens for g in made)
    env.llm_cost["llm_seconds"] += sum(g.seconds for g in made)
    return [g.value for g in made]


def _fallbacks(env: ChunkEnv, doc: Document, n: int, what: str) -> None:
    if n:
        env.llm_cost["fallbacks"] += n
        warnings.warn(f"{doc.doc_id}: {what}", LLMChunkWarning, stacklevel=3)


def parse_statements(answer: str) -> list[str]:
    """The statements of an answer: its lines, bullets and numbering removed, those of fewer than
    MIN_WORDS words dropped, each once, in order."""
    lines = (_BULLET.sub("", line).strip() for line in answer.splitlines())
    return list(dict.fromkeys(s for s in lines if _words(s) >= MIN_WORDS))


def _words(text: str) -> int:
    return len(re.findall(r"\w+", text))


def passages(doc: Document, size: int, tokenizer: str, env: ChunkEnv) -> list[Bounds]:
    """Whole sentences packed up to `size` tokens: what the model rewrites, one at a time."""
    return pack(doc.text, sentences_of(doc.text), size, 0, "tokens", tokenizer, env)


def _to_propose(doc: Document, env: ChunkEnv, passage_size: int, tokenizer: str) -> tuple[list[Bounds], list[Bounds]]:
    """The document's passages, and those the model is asked to rewrite (a shorter one is its own statement)."""
    spans = passages(doc, passage_size, tokenizer, env)
    return spans, [(a, b) for a, b in spans if _words(doc.text[a:b]) >= MIN_WORDS]


def _propose_items(doc: Document, asked: Sequence[Bounds]) -> list[dict[str, str]]:
    return [{"passage": doc.text[a:b]} for a, b in asked]


def _propositions_asks(doc: Document, env: ChunkEnv, *, passage_size: int, max_tokens: int, model: str,
                       tokenizer: str, **_: Any) -> list[Asks]:
    """Every passage the model will rewrite is known before it generates."""
    return [Asks(model, PROPOSE, _propose_items(doc, _to_propose(doc, env, passage_size, tokenizer)[1]), max_tokens)]


@strategy(
    "propositions",
    "The model rewrites each passage (sentences packed up to `passage_size` tokens) into short self-contained "
    "statements (Dense X Retrieval); each statement is embedded, and retrieved as its source passage, once per "
    "ranking. `context` says what counts as sent: the passage, or the statement that ranked.",
    {
        "passage_size": Param(128, "tokens of the passages the model rewrites", lo=8, label=True, unit="tokens"),
        "context": Param("passage", "what a hit sends and counts as context cost: its source passage, or the "
                         "proposition that ranked", choices=("passage", "proposition")),
        "max_tokens": Param(192, "tokens the model may write per passage", lo=1, hi=4096, unit="tokens"),
        "model": MODEL,
        "tokenizer": TOKENIZER,
    },
    check=_check,
    models=("model",),
    generations=_propositions_asks,
)
def propositions(doc: Document, env: ChunkEnv, *, passage_size: int, context: str, max_tokens: int, model: str,
                 tokenizer: str) -> list[Chunk]:
    spans, asked = _to_propose(doc, env, passage_size, tokenizer)
    answers = dict(zip(asked, _generate(env, model, PROPOSE, _propose_items(doc, asked), max_tokens, doc),
                       strict=True))
    out: list[Chunk] = []
    failed = 0
    for a, b in spans:
        if (a, b) not in answers:
            out.append(make_chunk(doc, a, b))
            continue
        statements = parse_statements(answers[(a, b)])
        if not statements:
            failed += 1
            out.append(make_chunk(doc, a, b))
        out += [make_chunk(doc, a, b, embed_text=s, context_text=s if context == "proposition" else None)
                for s in statements]
    _fallbacks(env, doc, failed, f"propositions: {failed} of {len(asked)} passages gave no statement of "
               f"{MIN_WORDS}+ words (max_tokens={max_tokens}); each is embedded as itself")
    return out


def parse_starts(answer: str, n: int) -> list[int] | None:
    """The pieces (1-based, 2..n) an answer says start a new chunk; [] for "0"; None when it names
    no piece of the window and is not "0" (nonsense)."""
    numbers = {int(x) for x in re.findall(r"\d+", answer)}
    starts = sorted(i for i in numbers if 2 <= i <= n)
    return starts if starts or numbers == {0} else None


def _numbered(text: str, shown: Sequence[Bounds]) -> dict[str, str]:
    """The BOUNDARIES prompt's input for a window of sentences."""
    return {"pieces": "\n".join(f"[{n}] {text[a:b]}" for n, (a, b) in enumerate(shown, 1))}


def _llm_chunk_asks(doc: Document, env: ChunkEnv, *, window: int, max_tokens: int, model: str, **_: Any
                    ) -> list[Asks]:
    """The first window is known before the model answers; where the next starts depends on the
    answer. Each window moves on by 1 to `window` sentences and none starts at the last one, so
    `n` sentences take between ceil((n - 1) / window) and n - 1 windows."""
    pieces = sentences_of(doc.text)
    n = len(pieces)
    if n < 2:
        return []
    return [Asks(model, BOUNDARIES, [_numbered(doc.text, pieces[:window])], max_tokens,
                 (-(-(n - 1) // window) - 1, n - 2))]


@strategy(
    "llm_chunk",
    "The model reads `window` numbered sentences at a time and names those that start a new chunk (Chroma's LLM "
    "chunker); the next window starts at the last chunk it began. Chunks are whole sentences, never over "
    "`max_size` tokens: a longer one, or a window whose answer names no sentence, is cut by size (counted).",
    {
        "window": Param(12, "sentences numbered in one prompt", lo=2, hi=64, label=True, unit="sentences"),
        "max_size": Param(512, "tokens a chunk may hold, whatever the model answers", lo=8, label=True,
                          unit="tokens"),
        "max_tokens": Param(24, "tokens the model may write per window", lo=1, hi=512, unit="tokens"),
        "model": MODEL,
        "tokenizer": TOKENIZER,
    },
    check=_check,
    models=("model",),
    generations=_llm_chunk_asks,
)
def llm_chunk(doc: Document, env: ChunkEnv, *, window: int, max_size: int, max_tokens: int, model: str,
              tokenizer: str) -> list[Chunk]:
    text = doc.text
    pieces = sentences_of(text)  # candidates: every sentence end (a line or paragraph end among them)
    if not pieces:
        return []
    starts: set[int] = {0}  # indices of the pieces that start a chunk
    nonsense = asked = 0
    i = 0  # the first piece of the next window: the start of the chunk the last window left open
    while i < len(pieces):
        shown = pieces[i : i + window]
        if len(shown) == 1:  # the last sentence: nothing to choose, it joins the open chunk
            break
        answer = _generate(env, model, BOUNDARIES, [_numbered(text, shown)], max_tokens, doc)[0]
        asked += 1
        chosen = parse_starts(answer, len(shown))
        if chosen is None:  # nonsense: this window is cut by size instead
            nonsense += 1
            first = {a for a, _ in pack(text, shown, max_size, 0, "tokens", tokenizer, env)}
            starts |= {i + n for n, (a, _) in enumerate(shown) if a in first}
            chosen = []
        starts |= {i + s - 1 for s in chosen}
        i = i + chosen[-1] - 1 if chosen else i + len(shown)
    order = sorted(starts)
    groups = [(pieces[a][0], pieces[b - 1][1]) for a, b in zip(order, [*order[1:], len(pieces)], strict=True)]
    length = env.length_fn("tokens", tokenizer)
    spans: list[Bounds] = []
    over = 0
    for a, b in groups:
        if length(text[a:b]) <= max_size:
            spans.append((a, b))
        else:
            over += 1
            spans += pack(text, [p for p in pieces if a <= p[0] < b], max_size, 0, "tokens", tokenizer, env)
    _fallbacks(env, doc, nonsense, f"llm_chunk: {nonsense} of {asked} windows were answered with no sentence "
               "number; each was cut by size")
    _fallbacks(env, doc, over, f"llm_chunk: {over} chunks the model chose were over max_size={max_size} tokens; "
               "each was cut by size")
    return [make_chunk(doc, a, b) for a, b in spans]
