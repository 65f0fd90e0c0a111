"""Issue 21's peers, side by side in one run: Chonkie and LangChain's chunkers against the workbench's,
and chunklab end to end against `python -m workbench sweep`.

1. Chunkers, in process, on data/chroma_small's texts: each contender chunks every document through
   its public path, once to warm up (tokenizers, punkt, imports), then best of `--repeats` rounds run
   interleaved, so a burst of load from other jobs hits every contender alike; wall and CPU seconds of
   the best round. Every contender counts sizes in cl100k tokens (the same tiktoken encoding object),
   except the semantic pair, which count in the embedding model's tokens (Chonkie's SemanticChunker
   has no other choice): chunk counts and mean cl100k sizes are shown beside the times, so a speed is
   never bought with different cuts.
     Chonkie TokenChunker(size, overlap)      vs `fixed:size,overlap`
     Chonkie RecursiveChunker(size)           vs `recursive:size` and LangChain's
                                                 RecursiveCharacterTextSplitter(size, 0, cl100k length)
     Chonkie SentenceChunker(size)            vs `sentence:size`
     Chonkie SemanticChunker(local MiniLM, size) vs `semantic:tokenizer=model,max_size=size`, its
                                                 sentence-group vectors cached (warm) and from an empty
                                                 cache (cold, one round)
2. End to end, fresh processes timed whole (wall and CPU seconds, the load when each started): chunklab
   `run` against `workbench sweep` on a 3-file Markdown corpus with its questions, chunklab's example
   strategies, the bundled all-MiniLM-L6-v2 for both, each on an empty cache (cold) and again on it
   (warm), with and without the report; recall@5 of both, strategy by strategy; the workbench cold again
   with its default semantic (buffer_size=1), on the default backend and on the faster ones (onnx-int8,
   openvino-bf16), and whether each ranks the variants as the default does (recall@5, MRR@5). Then the
   same on a
   corpus 7 times larger, ../shared's chroma_general whole (5 documents, 472 questions), cold and
   warm with the report (skipped, and said so, where ../shared is not beside the repo).
3. Where a cold sweep's time goes: `-X importtime` and cProfile of a cold sweep, summed into
   imports, model load, embedding, chunking, bootstrap, figures and report.

The corpus is built from data/chroma_small (so a fresh clone runs it): its 3 documents written as .md
files, and the first QUESTIONS_PER_DOC questions of each, as workbench questions (spans) and as
chunklab's questions.yaml (each answer span's text a gold snippet). `--quick` (under a minute): one
size, one round, the corpus cut to its first QUICK_CHARS characters per document, no profile.
Needs requirements-bench.txt. Run from the repo root: python -m bench.peers [--quick] [--out bench/peers.md]
"""

from __future__ import annotations

import argparse
import cProfile  # noqa: F401  (run as `python -m cProfile` in a child; imported so a missing module fails early)
import json
import os
import pstats
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from bench.harness import BENCH, REPO, SHARED, SMALL, Start, Timed, best, header, interleaved, lap, load, table, timed
from bench.harness import OFFLINE as HF_OFFLINE
from workbench.chunkers import ChunkEnv
from workbench.core.memo import forget
from workbench.core.offline import bundled_tiktoken
from workbench.core.tokens import TiktokenTokenizer, tiktoken_encoding
from workbench.dataset import Dataset
from workbench.ingest import load_dataset
from workbench.models.embed import Embedder, default_model_path
from workbench.variant import parse_variant

GENERAL = SHARED / "chroma_general"
SIZES = (256, 512)  # chunk sizes, cl100k tokens (model tokens for the semantic pair)
QUESTIONS_PER_DOC = 31  # 3 x 31 = 93 questions, the corpus size
QUICK_CHARS = 4_000
QUICK_QUESTIONS_PER_DOC = 5
# chunklab's example strategies and the workbench's closest spec of each (issue 21)
STRATEGIES = [
    ("fixed", {"chunk_size": 512, "overlap": 64}, "fixed:size=512,overlap=64"),
    ("recursive", {"chunk_size": 512, "overlap": 64}, "recursive:size=512,overlap=64"),
    # chunklab embeds each sentence alone: buffer_size=0 (the workbench's default, 1, embeds three sentences each)
    ("semantic", {"breakpoint_percentile": 95, "min_tokens": 200, "max_tokens": 1000},
     "semantic:breakpoint_percentile=95,buffer_size=0,min_size=200,max_size=1000"),
    ("structure", {"max_tokens": 800}, "markdown:size=800"),
]
# the workbench's side with its default semantic (each sentence embedded with one neighbour per side), cold, once
BUFFER_1 = "workbench, buffer_size=1"
# the same on the backends of bench/backends.md faster than the default ("auto" is onnx: torch's vectors); one
# stands for the defaults' speed only where it ranks the variants as the default backend does (RANKED_BY)
FAST_BACKENDS = ("onnx-int8", "openvino-bf16")
RANKED_BY = ("recall", "mrr")  # at k=5
OFFLINE = HF_OFFLINE | {"TOKENIZERS_PARALLELISM": "false"}


# ---- the corpus -------------------------------------------------------------------------------------------

def build_corpus(folder: Path, source: Dataset, chars: int | None, per_doc: int | None) -> Dataset:
    """`source`'s documents as Markdown files (cut to their first `chars` characters) + the first `per_doc`
    questions of each (every one: None) whose answers lie in it: questions.jsonl (workbench), questions.yaml
    (chunklab)."""
    docs = folder / "docs"
    docs.mkdir(parents=True)
    names, kept = {}, []
    for doc in source.documents:
        text = doc.text[:chars]
        names[doc.doc_id] = (f"{doc.doc_id}.md", text)
        (docs / f"{doc.doc_id}.md").write_text(text, encoding="utf-8", newline="")
        fits = [q for q in source.questions
                if all(a.doc_id == doc.doc_id and a.end <= len(text) for a in q.answers)]
        kept += fits[:per_doc]
    lines = [json.dumps({"qid": q.qid, "question": q.question, "answers": [
        {"doc_id": names[a.doc_id][0], "start": a.start, "end": a.end} for a in q.answers]}) for q in kept]
    (docs / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    snippets = [{"id": q.qid, "query": q.question,
                 "gold_snippets": [names[a.doc_id][1][a.start:a.end] for a in q.answers]} for q in kept]
    (folder / "questions.yaml").write_text(yaml.safe_dump({"questions": snippets}, allow_unicode=True, width=10**6))
    data = load_dataset(docs)
    for d in data.documents:  # the workbench reads the files verbatim: the spans are the ones chunklab matches
        if d.text != names[d.doc_id.removesuffix(".md")][1]:
            raise SystemExit(f"{docs / d.doc_id}: the workbench read a different text than was written")
    return data


# ---- 1. chunkers, in process --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cut:
    """One contender's best round and what it cut."""

    wall_s: float
    cpu_s: float
    chunks: int
    mean_tokens: float  # cl100k tokens per chunk


def best_rounds(contenders: dict[str, Callable[[], list[str]]], repeats: int) -> dict[str, Cut]:
    """Each contender's best round (by wall seconds) of `repeats` interleaved ones, after a warm-up call;
    the chunks are those of the warm-up call (every round cuts the same)."""
    count = TiktokenTokenizer("cl100k_base").count_many
    texts = {name: fn() for name, fn in contenders.items()}
    fastest = {name: best(laps) for name, laps in interleaved(contenders, repeats).items()}
    return {name: Cut(fastest[name].wall_s, fastest[name].cpu_s, len(t), sum(count(t)) / max(len(t), 1))
            for name, t in texts.items()}


def workbench(spec: str, data: Dataset, env: Callable[[], ChunkEnv] = ChunkEnv) -> Callable[[], list[str]]:
    """The workbench's chunking of every document with a new ChunkEnv (`env()`) and nothing kept from an
    earlier call (workbench.core.memo.forget), as the peers' chunkers are made afresh: the process keeps
    each text's sentences and token boundaries for the variants of one sweep. Before 3 Dec one env
    served every round, so the rounds after the first timed those memos (fixed 0.001 s against 0.015 s
    from scratch)."""
    variant = parse_variant(spec)

    def run() -> list[str]:
        forget()
        return [c.text for c in variant.chunk(data, env())]
    return run


def each_text(make: Callable[[], object], data: Dataset) -> Callable[[], list[str]]:
    """A Chonkie chunker (`.chunk`) or a LangChain splitter (`.split_text`), made afresh on every call
    (RecursiveChunker keeps an lru_cache of token counts per instance: a kept one would time its cache),
    over every document."""
    def run() -> list[str]:
        chunker = make()
        cut = getattr(chunker, "chunk", None) or chunker.split_text
        return [getattr(c, "text", c) for d in data.documents for c in cut(d.text)]
    return run


def once(fn: Callable[[], list[str]]) -> Cut:
    """One timed call (the embedding contenders: each Chonkie call embeds everything again)."""
    texts, took = lap(fn)
    count = TiktokenTokenizer("cl100k_base").count_many
    return Cut(took.wall_s, took.cpu_s, len(texts), sum(count(texts)) / max(len(texts), 1))


def semantic_rows(data: Dataset, size: int, repeats: int, cache: Path) -> list[dict]:
    """Chonkie's SemanticChunker (one call) against the workbench's `semantic` on an empty vector cache
    (one call), then warm (best of `repeats`), each with the model loaded before the clock starts."""
    from chonkie import SemanticChunker
    from chonkie.embeddings import SentenceTransformerEmbeddings
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(default_model_path()), device="cpu")
    chonkie = SemanticChunker(SentenceTransformerEmbeddings(model), chunk_size=size)
    embedder = Embedder(cache_dir=cache / f"semantic{size}", progress=False)
    embedder.encode(["the model loads before the clock starts"])
    sem = workbench(f"semantic:tokenizer=model,max_size={size}", data,
                    lambda: ChunkEnv(embed=embedder.encode, model_tokenizer=embedder.tokenizer))
    cuts = {"Chonkie SemanticChunker (MiniLM, no cache), 1 call": once(each_text(lambda: chonkie, data)),
            "workbench semantic, empty cache, 1 call": once(sem)}
    cuts |= best_rounds({"workbench semantic, sentence vectors cached": sem}, repeats)
    row = f"semantic {size} (model tokens), {data.documents[0].doc_id}"
    return [{"row": row, "contender": name, **vars(cut)} for name, cut in cuts.items()]


def chunker_rows(data: Dataset, sizes: tuple[int, ...], repeats: int, cache: Path, semantic_chars: int | None = None
                 ) -> list[dict]:
    """The chunker rows; the semantic one on the first document (its first `semantic_chars` characters)."""
    from chonkie import RecursiveChunker, SentenceChunker, TokenChunker
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    enc = tiktoken_encoding("cl100k_base")
    cl100k = TiktokenTokenizer("cl100k_base").count
    rows = []
    for size in sizes:
        overlap = size // 8
        groups = {
            f"token {size}/{overlap}": {
                "Chonkie TokenChunker": each_text(lambda: TokenChunker(enc, size, overlap), data),
                "workbench fixed": workbench(f"fixed:size={size},overlap={overlap}", data)},
            f"recursive {size}": {
                "Chonkie RecursiveChunker": each_text(lambda: RecursiveChunker(enc, size), data),
                "LangChain RecursiveCharacterTextSplitter": each_text(lambda: RecursiveCharacterTextSplitter(
                    chunk_size=size, chunk_overlap=0, length_function=cl100k), data),
                "workbench recursive": workbench(f"recursive:size={size}", data)},
            f"sentence {size}": {"Chonkie SentenceChunker": each_text(lambda: SentenceChunker(enc, size), data),
                                 "workbench sentence": workbench(f"sentence:size={size}", data)},
        }
        for row, contenders in groups.items():
            rows += [{"row": row, "contender": name, **vars(cut)}
                     for name, cut in best_rounds(contenders, repeats).items()]
        print(f"[{time.strftime('%H:%M:%S')}] chunkers at {size}: done", file=sys.stderr, flush=True)
    first = data.documents[0]
    first = replace(first, text=first.text[:semantic_chars]) if semantic_chars else first
    rows += semantic_rows(Dataset(data.name, (first,), ()), sizes[-1], repeats, cache)
    print(f"[{time.strftime('%H:%M:%S')}] semantic: done", file=sys.stderr, flush=True)
    return rows


# ---- 2. end to end, fresh processes -------------------------------------------------------------------------

def chunklab_config(folder: Path, report: bool) -> Path:
    """chunklab's example strategies on the bundled model; `report`: its HTML report too, else JSON only."""
    cfg = {"embedding": {"model": str(default_model_path())},
           "strategies": [{"name": name, "params": params} for name, params, _ in STRATEGIES],
           "output": {"formats": ["console", "html", "json"] if report else ["json"]}}
    path = folder / f"chunklab{'-report' if report else ''}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@dataclass
class EndToEnd:
    """The runs of both tools on one corpus, by (tool, cold/warm, report/no report), and what they found."""

    runs: dict[tuple[str, str, bool], Timed]
    agreement: list[dict]  # per strategy: recall@5 and chunk count of both
    rankings: dict[str, dict[str, list[int]]]  # BUFFER_1's and each fast run's: per metric, variants best first


def end_to_end(corpus: Path, work: Path, reports: tuple[bool, ...]) -> EndToEnd:
    """Cold then warm, for each of `reports` (with the report, without: fresh caches), the two tools
    alternating. Recall and chunk counts come from the first setting's outputs."""
    env = os.environ | OFFLINE | {"TIKTOKEN_CACHE_DIR": str(bundled_tiktoken()),
                                  "PYTHONPATH": str(REPO)}
    docs, runs = corpus / "docs", {}
    specs = [a for _, _, spec in STRATEGIES for a in ("-v", spec)]
    for report in reports:
        tag = "report" if report else "tables"
        cmds = {
            "chunklab": [sys.executable, "-m", "chunklab", "run", "--docs", str(docs), "--questions",
                         str(corpus / "questions.yaml"), "--config", str(chunklab_config(corpus, report)),
                         "--out", str(work / f"chunklab-{tag}")],
            "workbench": [sys.executable, "-m", "workbench", "sweep", "--data", str(docs), "--cache",
                          str(work / f"wb-cache-{tag}"), "--out", str(work / f"wb-{tag}"), "--quiet", *specs,
                          *([] if report else ["--no-report"])],
        }
        for state in ("cold", "warm"):
            for tool, cmd in cmds.items():
                print(f"[{time.strftime('%H:%M:%S')}] {tool} {state} {tag}", file=sys.stderr, flush=True)
                cache = {"CHUNKLAB_CACHE_DIR": str(work / f"cl-cache-{tag}")}
                runs[tool, state, report] = timed(cmd, REPO, env | cache)
        if report == reports[0]:
            print(f"[{time.strftime('%H:%M:%S')}] {BUFFER_1} cold {tag}", file=sys.stderr, flush=True)
            cmd = [a.replace("buffer_size=0,", "") for a in cmds["workbench"]]
            cmd[cmd.index(str(work / f"wb-cache-{tag}"))] = str(work / f"wb-cache-{tag}-buffer-1")
            cmd[cmd.index(str(work / f"wb-{tag}"))] = str(work / f"wb-{tag}-buffer-1")
            runs[BUFFER_1, "cold", report] = timed(cmd, REPO, env)
            for backend in FAST_BACKENDS:
                print(f"[{time.strftime('%H:%M:%S')}] {fast_run(backend)} cold {tag}", file=sys.stderr, flush=True)
                fast = [*cmd, "--backend", backend]
                fast[fast.index(str(work / f"wb-cache-{tag}-buffer-1"))] = str(work / f"wb-cache-{tag}-{backend}")
                fast[fast.index(str(work / f"wb-{tag}-buffer-1"))] = str(work / f"wb-{tag}-{backend}")
                runs[fast_run(backend), "cold", report] = timed(fast, REPO, env)
    import pandas as pd

    first = "report" if reports[0] else "tables"
    chunklab = {r["strategy"]: r for r in json.loads((work / f"chunklab-{first}" / "report.json").read_text())
                ["strategy_results"]}
    summary = pd.read_csv(work / f"wb-{first}" / "summary.csv")
    recall = summary[(summary.metric == "recall") & (summary.k == 5) & (summary.budget == 0)].set_index("key")["mean"]
    variants = pd.read_csv(work / f"wb-{first}" / "variants.csv")  # in the order of the -v options
    agreement = [{"chunklab": name, "workbench": spec, "chunklab_recall": chunklab[name]["recall_at_k"],
                  "workbench_recall": float(recall[v.key]), "workbench_chunks": int(v.chunks),
                  "chunklab_chunks": chunklab[name]["chunk_health"]["num_chunks"]}
                 for (name, _, spec), v in zip(STRATEGIES, variants.itertuples(), strict=True)]
    return EndToEnd(runs, agreement, {BUFFER_1: ranking(work / f"wb-{first}-buffer-1"),
                                      **{fast_run(b): ranking(work / f"wb-{first}-{b}") for b in FAST_BACKENDS}})


def fast_run(backend: str) -> str:
    """The name of the buffer_size=1 run on `backend`."""
    return f"{BUFFER_1}, --backend {backend}"


def ranking(out: Path) -> dict[str, list[int]]:
    """Per RANKED_BY metric at k=5, the positions of a run's variants (in the order of its -v options),
    best first, ties kept in option order."""
    import pandas as pd

    summary = pd.read_csv(out / "summary.csv")
    keys = list(pd.read_csv(out / "variants.csv")["key"])
    at5 = summary[(summary.k == 5) & (summary.budget == 0)]
    ranks = {}
    for metric in RANKED_BY:
        score = at5[at5.metric == metric].set_index("key")["mean"]
        ranks[metric] = sorted(range(len(keys)), key=lambda i: (-score[keys[i]], i))
    return ranks


# ---- 3. what the cold sweep's time is made of ---------------------------------------------------------------

# (part, functions whose cumulative time is that part): file substring and function name, as cProfile names them
# (a lazy import inside a part counts in both: the parts overlap)
EMBED = "workbench/models/embed.py"
PARTS = {
    "imports (every module loaded, at any depth)": [("<frozen importlib._bootstrap>", "_find_and_load")],
    "model load (the ONNX session, or torch's SentenceTransformer)": [(EMBED, "onnx_encoder"), (EMBED, "_torch_model")],
    "embedding (Embedder.vectors, token passes; a lazy model load)": [(EMBED, "vectors"), (EMBED, "_run_windows")],
    "chunking (workbench/chunkers, with semantic's embedding)": [("workbench/chunkers/", "")],
    "bootstrap (workbench/evaluation/stats.py)": [("workbench/evaluation/stats.py", "")],
    "figures (workbench/figures: plots, draw, params)": [("workbench/figures/plots.py", ""),
                                                          ("workbench/figures/draw.py", ""),
                                                          ("workbench/figures/params.py", "")],
    "report (workbench/report, with the figures it draws)": [("workbench/report/", "")],
}


def import_seconds(stderr: str) -> list[tuple[str, float]]:
    """Top-level packages by cumulative import seconds, from `-X importtime`'s lines."""
    tops: dict[str, float] = {}
    for m in re.finditer(r"^import time:\s+\d+ \|\s+(\d+) \| (\S.*)$", stderr, re.M):
        if not m.group(2).startswith(" "):  # a top-level import, its children indented below it
            name = m.group(2).split(".")[0]
            tops[name] = tops.get(name, 0.0) + int(m.group(1)) / 1e6
    return sorted(tops.items(), key=lambda kv: -kv[1])


def part_seconds(profile: Path) -> dict[str, float]:
    """Cumulative seconds of each PARTS entry: its outermost functions' (those called from outside
    it), summed. cProfile's cumulative time of a recursive function counts its outermost calls
    only, so a part whose entry point calls itself, directly or through the part, counts once."""
    stats = pstats.Stats(str(profile)).stats  # (file, line, function) -> (cc, nc, tt, ct, callers)
    out = {}
    for part, wanted in PARTS.items():
        match = {k for k in stats if any(f in k[0] and (not fn or fn in k[2]) for f, fn in wanted)}
        out[part] = sum(stats[k][3] for k in match if set(stats[k][4]) - match)
    return out


def profile_cold(corpus: Path, work: Path, report: bool) -> tuple[Timed, list[tuple[str, float]], dict[str, float]]:
    """A cold sweep under `-X importtime`, then another under cProfile (each on an empty cache)."""
    env = os.environ | OFFLINE | {"PYTHONPATH": str(REPO)}
    specs = [a for _, _, spec in STRATEGIES for a in ("-v", spec)]

    def sweep(tag: str) -> list[str]:
        return ["-m", "workbench", "sweep", "--data", str(corpus / "docs"), "--cache", str(work / f"p-cache-{tag}"),
                "--out", str(work / f"p-{tag}"), "--quiet", *specs, *([] if report else ["--no-report"])]

    import subprocess

    done = subprocess.run([sys.executable, "-X", "importtime", *sweep("imports")], cwd=REPO, env=env,
                          capture_output=True, text=True, check=True)
    prof = work / "cold.prof"
    run = timed([sys.executable, "-m", "cProfile", "-o", str(prof), *sweep("profile")], REPO, env)
    return run, import_seconds(done.stderr), part_seconds(prof)


# ---- the table ----------------------------------------------------------------------------------------------

def chunker_table(rows: list[dict]) -> str:
    lines = []
    for row in dict.fromkeys(r["row"] for r in rows):
        group = [r for r in rows if r["row"] == row]
        ours = next(r for r in group if r["contender"].startswith("workbench") and "empty" not in r["contender"])
        lines += [[row, r["contender"], f"{r['wall_s']:.3f}", f"{r['cpu_s']:.3f}",
                   "" if r is ours else f"x{r['wall_s'] / ours['wall_s']:.2f}", r["chunks"], f"{r['mean_tokens']:.0f}"]
                  for r in group]
    return table(["row", "contender", "wall s", "CPU s", "workbench x faster (wall)", "chunks", "mean cl100k tokens"],
                 lines)


def run_cell(t: Timed) -> str:
    return f"{t.wall_s:.1f} s ({t.cpu_s:.1f} CPU, load {t.load:.1f})"


def end_to_end_table(e: EndToEnd) -> str:
    def row(what: str, cl: Timed, wb: Timed) -> list[str]:
        return [what, run_cell(cl), run_cell(wb), f"x{cl.wall_s / wb.wall_s:.2f} / x{cl.cpu_s / wb.cpu_s:.2f}"]

    runs = []
    for (tool, state, report), cl in e.runs.items():
        if tool != "chunklab":
            continue
        what = f"{state}, {'with the report' if report else 'no report (`--no-report`; chunklab: JSON only)'}"
        runs.append(row(what, cl, e.runs["workbench", state, report]))
        if (BUFFER_1, state, report) in e.runs:
            runs.append(row(f"{what}; the workbench's `semantic` at its default buffer_size=1", cl,
                            e.runs[BUFFER_1, state, report]))
            runs += [row(f"{what}; the same with `--backend {b}`", cl, e.runs[fast_run(b), state, report])
                     for b in FAST_BACKENDS]
    names = [f"`{spec.split(':')[0]}`" for _, _, spec in STRATEGIES]
    same = [b for b in FAST_BACKENDS if all(e.rankings[fast_run(b)][m] == e.rankings[BUFFER_1][m] for m in RANKED_BY)]
    cold = {run: t.wall_s for (run, state, _), t in e.runs.items() if state == "cold"}
    fastest = min(same, key=lambda b: cold[fast_run(b)], default=None)

    def order(run: str, metric: str) -> str:
        return " > ".join(names[i] for i in e.rankings[run][metric])

    return "\n".join([
        table(["run", "chunklab: wall (CPU, load at start)", "workbench: wall (CPU, load at start)",
               "workbench x faster: wall / CPU"], runs),
        "",
        "The variants ranked, best first, by the default backend (onnx, torch's vectors) and by each faster one, "
        "all with buffer_size=1:",
        "",
        table(["metric@5", "default backend", *(f"{b} (the same order)" for b in FAST_BACKENDS)],
              [[m, order(BUFFER_1, m), *(f"{order(fast_run(b), m)} "
                                         f"({'yes' if e.rankings[fast_run(b)][m] == e.rankings[BUFFER_1][m] else 'no'})"
                                         for b in FAST_BACKENDS)] for m in RANKED_BY]),
        "",
        f"So the fastest backend whose rankings match here is {fastest or 'the default, onnx'}: its row above "
        f"is the {'`--backend ' + fastest + '`' if fastest else 'buffer_size=1'} one.",
        "",
        table(["chunklab strategy", "workbench variant", "chunklab recall@5", "workbench recall@5",
               "chunks (chunklab / workbench)"],
              [[a["chunklab"], f"`{a['workbench']}`", f"{a['chunklab_recall']:.3f}", f"{a['workbench_recall']:.3f}",
                f"{a['chunklab_chunks']} / {a['workbench_chunks']}"] for a in e.agreement]),
    ])


def profile_table(run: Timed, imports: list[tuple[str, float]], parts: dict[str, float]) -> str:
    return "\n".join([
        f"A cold sweep with the report under cProfile: {run_cell(run)} (cProfile slows Python code, so the "
        "parts are shares of that run, not of the timed one above). Cumulative seconds of the outermost call:", "",
        table(["part", "s"], [[part, f"{s:.2f}"] for part, s in parts.items()]),
        "", "Imports of another cold sweep (`python -X importtime`, top-level packages, cumulative):", "",
        table(["package", "s"], [[name, f"{s:.2f}"] for name, s in imports[:12]]
              + [[f"all {len(imports)} top-level imports", f"{sum(s for _, s in imports):.2f}"]]),
    ])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="one size, one round, a small corpus, no report, no profile")
    p.add_argument("--repeats", type=int, default=5, help="interleaved chunking rounds; the best of each is kept")
    p.add_argument("--corpus-chars", type=int, help="section 2: cut each document to its first N characters "
                   "(default: whole; --quick: %d)" % QUICK_CHARS)
    p.add_argument("--semantic-chars", type=int, help="section 1's semantic row: the first document's first N "
                   "characters (default: whole; --quick: %d)" % (QUICK_CHARS // 3))
    p.add_argument("--out", type=Path, help="write the markdown here (default: bench/peers.md; --quick: print only)")
    args = p.parse_args()
    if args.quick:
        args.corpus_chars = args.corpus_chars or QUICK_CHARS
        args.semantic_chars = args.semantic_chars or QUICK_CHARS // 3
    out = args.out or (None if args.quick else BENCH / "peers.md")
    start = Start()
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        work = Path(tmp)
        small = load_dataset(SMALL)
        data = build_corpus(work / "corpus", small, args.corpus_chars,
                            QUICK_QUESTIONS_PER_DOC if args.quick else QUESTIONS_PER_DOC)
        rows = chunker_rows(small if not args.quick else data, SIZES[:1] if args.quick else SIZES,
                            1 if args.quick else args.repeats, work / "chunk-cache",
                            args.semantic_chars)
        e2e = end_to_end(work / "corpus", work / "e2e", (False,) if args.quick else (True, False))
        large = None
        if not args.quick and GENERAL.is_dir():
            large = (build_corpus(work / "large", load_dataset(GENERAL), None, None),
                     end_to_end(work / "large", work / "e2e-large", (True,)))
        md = markdown(args, data, rows, e2e, large, start)
        write(md, out)
        if not args.quick:  # written first: a failing profile keeps the table
            write(md + ["## 3. Where the workbench's cold time goes", "",
                        profile_table(*profile_cold(work / "corpus", work / "profile", True)), ""], out)


def write(md: list[str], out: Path | None) -> None:
    text = "\n".join(md)
    print(text, flush=True)
    if out:
        out.write_text(text)


def markdown(args: argparse.Namespace, data: Dataset, rows: list[dict], e2e: EndToEnd,
             large: tuple[Dataset, EndToEnd] | None, start: Start) -> list[str]:
    cut = f" cut to their first {args.corpus_chars:,} characters" if args.corpus_chars else ""
    per_doc = QUICK_QUESTIONS_PER_DOC if args.quick else QUESTIONS_PER_DOC
    corpus = (f"data/chroma_small's 3 documents as .md files{cut}, {len(data.questions)} questions (the first "
              f"{per_doc} per document whose answer spans lie in it)")
    md = [header(f"Peers, side by side in one run (issue 21){' — quick mode' if args.quick else ''}", start),
          f"{start.elapsed_s() / 60:.1f} min, shared with other engineers' jobs: load average (1/5/15 min) "
          f"{start.load} at the start, {load()} at the end. Seconds move with that load; the ratios, measured side "
          "by side, much less.", "",
          "## 1. Chunkers, in process", "",
          f"Texts: {'the corpus of section 2' if args.quick else 'data/chroma_small (3 documents, 206,423 characters)'}"
          f". Best of {1 if args.quick else args.repeats} interleaved rounds after a warm-up; the semantic row on "
          f"the first document only{f' (its first {args.semantic_chars:,} characters)' if args.semantic_chars else ''}"
          ", Chonkie and the empty cache one call each (each embeds everything), the warm "
          "cache best of the rounds. Chonkie's chunkers and LangChain's splitter are made afresh on every call "
          "(RecursiveChunker caches token counts per instance). workbench x faster = peer wall s / workbench "
          "wall s. Sizes in cl100k tokens of the same tiktoken encoding object, except the semantic row (the model's "
          "tokens: Chonkie's SemanticChunker counts with its embedding model's tokenizer). Mean sizes are cl100k "
          "tokens of the chunk texts for every row.", "", chunker_table(rows), "",
          "What each semantic contender embeds: Chonkie's SemanticChunker (threshold 0.8, similarity_window 3, its "
          "defaults) embeds every sentence alone (sentences split on `. ! ? \\n`, short ones merged to >= 24 "
          "characters) with the same local all-MiniLM-L6-v2, on every call: it has no cache. The workbench's "
          "`semantic` embeds each sentence with one neighbour per side (buffer_size=1) and keeps the vectors in "
          "its content-keyed cache; the warm row re-cuts from those cached vectors (what every later percentile, "
          "size limit or re-run costs), the empty-cache row is the first run. The two cut differently (different "
          "algorithms): compare the chunk counts before the times.", "",
          "## 2. chunklab end to end vs `python -m workbench sweep`", "",
          f"Corpus: {corpus}; the same files for both (chunklab: the answer spans' texts as gold snippets). "
          f"Model: the bundled all-MiniLM-L6-v2 ({default_model_path()}) for both, top 5. Each run a fresh process "
          "timed whole; cold = empty caches (chunklab's CHUNKLAB_CACHE_DIR, the workbench's --cache), warm = the "
          "same command again on them. chunklab's example strategies against the workbench's closest variants: "
          "chunklab's semantic embeds every sentence alone, so its closest is `semantic` with buffer_size=0; the "
          "workbench's default, buffer_size=1 (LlamaIndex's), embeds each sentence with one neighbour per side, "
          "about three times the text: more cold runs with it, marked so, the first on the default backend "
          "(onnx, torch's vectors), the others on the faster backends of bench/backends.md, "
          f"{' and '.join(FAST_BACKENDS)} (their vectors differ from torch's: int8 in the second digit of a cosine, "
          "bfloat16 in the fifth), whose rankings of the four variants follow the table.",
          "", end_to_end_table(e2e), "",
          "recall@5 is not defined the same way: chunklab's is the share of a question's gold snippets found "
          "(fuzzy, 0.90) inside a retrieved chunk; the workbench's the share of the evidence characters covered "
          "by the top 5 chunks. Both tools truncate chunks at the model's 256 tokens when they embed.", "",
          "### The same on a larger corpus", ""]
    if large is None:
        md += [f"Skipped{' (quick mode)' if args.quick else f': {GENERAL} is not beside the repo'}.", ""]
        return md
    big, e = large
    chars = sum(len(d.text) for d in big.documents)
    md += [f"Corpus: ../shared's chroma_general whole, {len(big.documents)} documents ({chars:,} characters, "
           f"{chars / sum(len(d.text) for d in data.documents):.1f} times the corpus above) as .md files, all "
           f"{len(big.questions)} of its questions; the same strategies, model and timing, with the report.", "",
           end_to_end_table(e), ""]
    return md


if __name__ == "__main__":
    main()
