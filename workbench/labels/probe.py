"""Questions that probe the cuts: evidence that straddles the chunk boundaries of the variants compared.

Why: questions whose evidence sits well inside any chunk cannot tell chunkers apart (HiCBench argues
so of sparse-evidence benchmarks). A probe's evidence is the sentence a cut falls inside, or the two
sentences on either side of a cut between them: a chunking that cuts there must return two chunks to
hold it, one that does not holds it in one. Evidence is prose (MIN_WORDS words of letters), not a
heading or a line of code. The probes most worth asking are those some of the
variants cut and others keep whole; `probes` picks those first, spread over the documents.

The evidence is taken from the text, so it is an exact span; `workbench.labels.generate` then writes
the question (a language model, asked to put it in its own words) or a draft for a person to word
(`--no-llm`), and marks each line `"probe"` with the variants whose cuts it straddles.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence

from workbench.chunkers.sentence import sentence_spans
from workbench.core.chunk import Chunk
from workbench.dataset import Document, Span
from workbench.labels.generate import Probe, spread

MIN_CHARS, MAX_CHARS = 30, 600  # evidence shorter says too little to ask about; longer is no longer a probe
MIN_WORDS = 8  # words of letters evidence needs to be asked about: a heading or a line of code is not
_WORD = re.compile(r"(?<!\S)[^\W\d_]{2,}[.,;:!?]?(?!\S)")  # a word of letters between spaces: not a URL or code


def cuts(chunks: Sequence[Chunk], length: int) -> set[int]:
    """A document's cut positions: each chunk's start or end strictly inside it."""
    return {c.end for c in chunks if 0 < c.end < length} | {c.start for c in chunks if 0 < c.start < length}


def around(sentences: Sequence[tuple[int, int]], starts: Sequence[int], p: int) -> tuple[int, int] | None:
    """The evidence a cut at `p` falls in: the sentence it cuts, or the sentence before it and the one
    after; None at the document's edges. `starts`: the sentences' starts, searched by bisection."""
    j = bisect_left(starts, p)  # the first sentence starting at or after p
    if j > 0 and sentences[j - 1][0] < p < sentences[j - 1][1]:
        return sentences[j - 1]
    return (sentences[j - 1][0], sentences[j][1]) if 0 < j < len(sentences) else None


def probes(docs: Sequence[Document], chunkings: Mapping[str, Sequence[Chunk]], n: int, seed: int) -> list[Probe]:
    """Up to `n` probes over `docs` for the variants of `chunkings` (label -> chunks of every document):
    those some variants cut and others keep whole first, then those every variant cuts; spread over the
    documents by `seed`, in corpus order."""
    by_doc: dict[str, dict[str, list[Chunk]]] = {d.doc_id: {label: [] for label in chunkings} for d in docs}
    for label, chunks in chunkings.items():
        for c in chunks:
            if c.doc_id in by_doc:
                by_doc[c.doc_id][label].append(c)
    telling: dict[str, list[Probe]] = {}
    shared: dict[str, list[Probe]] = {}
    for d in docs:
        sentences = sentence_spans(d.text)
        starts = [a for a, _ in sentences]
        positions = {label: sorted(cuts(chunks, len(d.text))) for label, chunks in by_doc[d.doc_id].items()}
        found = {span for ps in positions.values() for p in ps if (span := around(sentences, starts, p)) is not None
                 and MIN_CHARS <= span[1] - span[0] <= MAX_CHARS and len(_WORD.findall(d.text, *span)) >= MIN_WORDS}
        for a, b in sorted(found):
            labels = tuple(label for label, ps in sorted(positions.items()) if bisect_right(ps, a) < bisect_left(ps, b))
            pool = telling if len(labels) < len(chunkings) else shared
            pool.setdefault(d.doc_id, []).append(Probe(Span(d.doc_id, a, b), labels))
    picked = spread(telling, n, seed)
    picked += spread(shared, n - len(picked), seed) if len(picked) < n else []
    rank = {d.doc_id: i for i, d in enumerate(docs)}
    return sorted(picked, key=lambda p: (rank[p.evidence.doc_id], p.evidence.start))
