"""bench/RESULTS.md and the list of studies in bench/README.md, written from the result files as they are:
each study's headline numbers with the date and machine of its latest result file, and, for the index, the
question it answers, its command (the Makefile's when `make bench` runs it), its last run and the claim it
backs. It re-runs nothing. Run from the repo root after the studies (`make bench` does): python -m bench.results

STUDIES is the registry: a new study gets an entry here (and a line in the Makefile if it is to be re-run);
this script refuses to write while a module of bench/ or a study of the Makefile has none.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.harness import BENCH, REPO, STAMP, git

HELPERS = {"__init__", "harness", "results", "llamaindex_loop"}  # modules of bench/ that are not studies
BEGIN = "<!-- the list below is written by python -m bench.results: edit STUDIES in bench/results.py -->"
END = "<!-- end of the list written by python -m bench.results -->"


# ---- reading result files ---------------------------------------------------------------------------------

def tables(text: str) -> list[list[list[str]]]:
    """Every Markdown table in `text`: its rows of stripped cells, the header first, the rule left out."""
    found: list[list[list[str]]] = []
    rows: list[list[str]] = []
    for ln in [*text.splitlines(), ""]:
        if ln.startswith("|"):
            cells = [c.strip() for c in ln.strip().strip("|").split("|")]
            if not all(c and set(c) <= set(":-") for c in cells):
                rows.append(cells)
        elif rows:
            found.append(rows)
            rows = []
    return found


def column(table: list[list[str]], name: str) -> list[str]:
    """The cells of the column headed `name`, the header left out."""
    i = table[0].index(name)
    return [row[i] for row in table[1:]]


def line(text: str, pattern: str) -> str:
    """The first line of `text` that matches `pattern`."""
    found = re.search(pattern, text, re.M)
    if not found:
        raise ValueError(f"no line matching {pattern!r}")
    return found.group(0).strip()


def last_run(path: Path) -> str:
    """When and on what machine the result file was made: its stamp's, or for a file written before the
    stamp its own words (its latest date, its cores and CPU), or the date git last committed it."""
    text = path.read_text(encoding="utf-8")
    text = json.loads(text).get("stamp", text) if path.suffix == ".json" else text
    if stamp := STAMP.search(text):
        return f"{stamp['date']}, {stamp['machine']}"
    dates = re.findall(r"\d{4}-\d\d-\d\d(?: \d\d:\d\d(?: UTC)?)?", text)
    cores = re.search(r'(\d+)[ -]cores?\b|"cores": (\d+)', text)
    cpu = re.search(r"\((AMD [^)]*)\)", text) or re.search(r"\b(x86_64|aarch64|arm64)\b", text)
    machine = ", ".join(x for x in (cores and f"{cores[1] or cores[2]} cores", cpu and " ".join(cpu[1].split())) if x)
    committed = "" if dates else git("log", "-1", "--format=%cs", "--", str(path))
    when = max(dates) if dates else f"no date in the file; committed {committed}"
    return f"{when}, {machine or 'machine not recorded'}"


# ---- the headline numbers of each study's result file --------------------------------------------------------

def perf(text: str) -> list[str]:
    t = tables(text)[0]
    return [f"the column {t[0][-1]}, the last of {len(t[0]) - 3} measured side by side:"] + [
        f"{row[0].split('. ', 1)[1]}: {row[-1]}" for row in t[1:] if not row[-1].startswith("bench/")]


def backends(text: str) -> list[str]:
    speed, *quality = (t for t in tables(text) if t[0][1] == "torch")
    out = []
    for row in speed[1:]:
        ratios = (re.search(r"x[\d.]+", cell)[0] for cell in row[2:])
        out.append(f"{row[0]}, throughput against torch's: "
                   + "; ".join(f"{b} {x}" for b, x in zip(speed[0][2:], ratios, strict=True)))
    points = {b: max(abs(float(re.search(r"\(([+-][\d.]+)\)", c)[1])) for t in quality for c in column(t, b))
              for b in quality[0][0][2:]}
    return out + [f"recall@5 and MRR@5 against torch's, largest difference over {len(quality)} datasets: "
                  + ", ".join(f"{b} {p:.2f} points" for b, p in points.items())]


def preview(text: str) -> list[str]:
    t = tables(text)[0]
    wanted = ("rho preview", "preview grid / one real", "fresh process: preview grid / one real",
              "real grid / preview grid")
    return [f"{row[0]}: " + ", ".join(f"{d} {v}" for d, v in zip(t[0][1:], row[1:], strict=True))
            for row in t[1:] if row[0] in wanted]


def scale(text: str) -> list[str]:
    sizes, *_ = tables(text)
    rows = [dict(zip(sizes[0], r, strict=True)) for r in sizes[1:]]
    out = []
    for name in dict.fromkeys(r["dataset"] for r in rows):
        cold = max((r for r in rows if r["dataset"] == name and r["cache"] == "cold"),
                   key=lambda r: int(r["documents"]))
        warm = "".join(f", warm {r['wall_s']} s" for r in rows if r["dataset"] == name and r["cache"] == "warm")
        out.append(f"{name}, {cold['documents']} documents ({cold['characters']} characters, {cold['questions']} "
                   f"questions): cold {cold['wall_s']} s at {cold['peak_rss_mb']} MB peak{warm}")
    out += [line(text, r"^wall_s = .*$"), line(text, r"^peak_rss_mb = .*$")]
    ann = next(t for t in tables(text) if t[0][:2] == ["vectors", "index"])
    biggest = [r for r in ann[1:] if r[0] == ann[-1][0]]
    recall = ann[0].index("recall@10_vs_exact")
    out.append(f"{ann[-1][0]} vectors, recall@10 against exact search: "
               + ", ".join(f"{r[1]} {r[recall]}" for r in biggest))
    distractors = next(t for t in tables(text) if t[0][0] == "distractors")
    out.append("recall@5 with distractors: " + ", ".join(
        f"{n} others {r}" for n, r in zip(column(distractors, "distractors"), column(distractors, "recall@5"),
                                          strict=True)))
    return out


def chroma_metrics(text: str) -> list[str]:
    t = tables(text)[0]
    return [f"{r[0]}: precision-Ω ours {r[3]}, Chroma's definition on our chunks {r[4]}, Chroma's pipeline {r[6]}; "
            f"chunks ours / Chroma {r[1]}" for r in t[1:]]


def chunk_throughput(text: str) -> list[str]:
    t = tables(text)[-1]  # the latest runs
    return [f"{r[0]}, {r[1]}: {r[-2]} ({t[0][-2]}; target {r[-1]})" for r in t[1:]]


def chunker_costs(text: str) -> list[str]:
    t = tables(text)[0]
    variants = column(t, "variant")
    return [f"{what}: " + ", ".join(f"{v} {c}" for v, c in zip(variants, column(t, what), strict=True))
            for what in ("chunking time vs fixed", next(h for h in t[0] if h.startswith("embedding time")))]


def demo_times(text: str) -> list[str]:
    d = json.loads(text)
    return [f"make demo cold {d['cold_s']} s, warm {d['warm_s']} s (cold / warm {d['cold_over_warm']})",
            f"cold: {d['cold']}", f"warm: {d['warm']}"]


def widgets(text: str) -> list[str]:
    t = tables(text)[0]
    return [f"{r[0]}: {r[1]} ms median" for r in t[1:]]


def explorer(text: str) -> list[str]:
    t = tables(text)[0]
    out = []
    for what in t[0][-3:]:
        ms = [int(c.removesuffix(" ms")) for c in column(t, what)]
        out.append(f"{what}: {min(ms)} to {max(ms)} ms over {len(ms)} documents x settings")
    return out


def defaults(text: str) -> list[str]:
    t = tables(text)[0]
    return [f"{r[0]}: the worst dense variant truncates {r[1]} of its chunks (the previous grid's: {r[2]})"
            for r in t[1:]]


def label_free(text: str) -> list[str]:
    t = tables(text)[0]
    return [f"{r[0]}: {r[2]} ranks the chunkings as recall@5 does with rho {r[3]} {r[4]}" for r in t[1:]]


def search(text: str) -> list[str]:
    rates, trade, timing = tables(text)[:3]
    return [*(f"{r[0]}: the search's best in the exhaustive tied set {r[5]} (random search, same texts: {r[6]}); "
              f"texts {r[8]} of the exhaustive sweep's" for r in rates[1:]),
            *(f"budget {r[0]} ({r[1]}): in the exhaustive tied set {r[2]} (random {r[3]}), texts {r[4]}"
              for r in trade[1:]),
            *(f"{r[0]} at budget {r[1]}, cold side by side: wall {r[4]} of the exhaustive sweep's, texts embedded "
              f"{r[6]}" for r in timing[1:])]


def sweeper_overhead(text: str) -> list[str]:
    t = tables(text)[0]
    return [f"{r[0]} cache: wb.sweep {r[1]}, Sweeper Run {r[2]}, overhead {r[3]}" for r in t[1:]]


def model_stack(text: str) -> list[str]:
    t = tables(text)[0]
    unit, seconds = t[0].index("tokens per unit"), t[0].index("model s per unit")
    return [f"{r[0]}: {r[unit].replace(' per ', ' tokens per ')}, {r[seconds].replace(' per ', ' model s per ')}"
            for r in t[1:]] + [line(text, r"^First run: .*$")]


def rerank(text: str) -> list[str]:
    t = tables(text)[0]
    return [f"{r[0]}: the stage {r[4]} as fast as one pair at a time, {r[5]} ms a pair" for r in t[1:]]


def pgvector(text: str) -> list[str]:
    recall, times = tables(text)
    out = []
    for i, name in enumerate(recall[0]):
        if name.endswith(": kept@10"):
            kept = [float(c) for c in column(recall, name)]
            diffs = [float(c.split()[0]) for c in column(recall, recall[0][i + 1])]
            out.append(f"pgvector HNSW {name.removesuffix(': kept@10')}: keeps {min(kept):.1%} to {max(kept):.1%} of "
                       f"exact search's top 10 over {len(kept)} dense variants; recall@5 minus exact "
                       f"{min(diffs):+.4f} to {max(diffs):+.4f}")
    flat = float(times[1][1])
    return out + [f"a query, {r[0]}: {r[1]} ms median ({float(r[1]) / flat:.1f}x FAISS flat)" for r in times[2:]]


def peers(text: str) -> list[str]:
    chunkers, *rest = tables(text)
    out = [f"{r[0]}: {r[1]} takes {r[4]} the workbench's time (wall)" for r in chunkers[1:]
           if r[4] and not r[1].startswith("workbench")]
    runs = [t for t in rest if t[0][0] == "run"]
    ranked = [t for t in rest if t[0][0] == "metric@5"]
    for corpus, t in zip(("chroma_small corpus", "chroma_general corpus"), runs, strict=False):
        out += [f"end to end, {corpus}, {r[0]}: chunklab takes {r[3]} the workbench's time (wall / CPU)"
                for r in t[1:]]
    for corpus, t in zip(("chroma_small corpus", "chroma_general corpus"), ranked, strict=False):
        out += [f"end to end, {corpus}: {t[0][c].removesuffix(' (the same order)')} ranks the variants by {r[0]}@5 "
                f"as the default backend does: {r[c].rpartition('(')[2].rstrip(')')}"
                for c in range(2, len(t[0])) for r in t[1:]]
    return out


def folders(text: str) -> list[str]:
    found = tables(text)  # one run's tables, or several runs' one after the other (one folder each)
    peak = {r[0]: r[1] for t in found if t[0][1] == "cold sweep" for r in t[1:]}
    out = []
    for t in (t for t in found if t[0][1] == "documents"):
        ratio, estimate = (t[0].index(c) for c in ("cold vs floor (target <= 1.15x)",
                                                    "measured / estimate (target within 1.5x)"))
        out += [f"{r[0]} ({r[1]} documents, {r[2]} characters): cold default grid {r[ratio] or 'not measured'} "
                f"against its embedding floor; measured after the estimate / the estimate: {r[estimate]}; peak RSS "
                f"{peak.get(r[0], '?')} MB" for r in t[1:]]
    return out


def ray_scale(text: str) -> list[str]:
    t = tables(text)[0]
    return [", ".join(f"{e} {s} s" for e, s in zip(column(t, "engine"), column(t, "wall_s"), strict=True))
            + " (cold sweep, wall)", line(text, r"^1 worker / 2 workers: [\d.]+x")]


def gpu(text: str) -> list[str]:
    t = tables(text)[0]
    return [f"{r[0]}: GPU {r[3]} the CPU's rate; outputs agree: {r[4]}" for r in t[1:]]


def context(text: str) -> list[str]:
    return [line(text, r"^Prefix reuse is [\d.]+x faster[^.]*")]


def tokenizer_default(text: str) -> list[str]:
    t = tables(text)[0]
    diff, tokenizer = t[0].index("model - cl100k"), t[0].index("tokenizer")
    return ["recall@5, sized in model tokens - in cl100k, per strategy: " + ", ".join(
        f"{' '.join(x for x in r[:2] if x)}: {r[diff]}" for r in t[1:] if r[tokenizer] == "model")]


def code_chunking(text: str) -> list[str]:
    t = tables(text)[0]
    return [f"{r[0]}: {r[1]} s, {r[2]} of code's time" for r in t[1:]]


def overhead(text: str) -> list[str]:
    t = tables(text)[0]
    return [f"{r[0]}: {t[0][-2]}: {r[-2]}; {t[0][-1]}: {r[-1]}" for r in t[1:]]


# ---- the registry -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Study:
    name: str  # its module under bench/: "perf", "archive.context"
    result: str  # its result file, relative to bench/
    question: str
    claim: str  # what it backs, in the README or the docs
    headline: Callable[[str], list[str]]  # the result file's text -> its headline numbers
    note: str = ""  # how it is run, where that is not `make bench` or its module alone

    @property
    def archived(self) -> bool:
        return self.name.startswith("archive.")


STUDIES = [
    Study("perf", "perf.md",
          "Is a sweep of a hand-written grid faster than the plain LlamaIndex loop an engineer writes, cold and warm, "
          "and how close is a cold sweep to its own embedding floor?",
          "README, \"Speed\": the table of cold and warm sweeps against the LlamaIndex loop, the embedding floor, "
          "10 semantic percentiles against 1, chunking against SentenceSplitter(256)", perf),
    Study("backends", "backends.md",
          "Which embedding backend should a new cache get: are onnx, onnx-int8 and openvino-bf16 faster than torch "
          "with the same recall?",
          "README, the model runtime: backend=\"auto\" resolves to onnx for a new cache (same recall@5 and MRR@5 as "
          "torch, faster); the design notes of workbench/models/onnx.py, embed.py and choose.py", backends),
    Study("preview", "preview.md",
          "Does a preview sweep rank the variants as a real sweep does, and does a 22-variant preview cost no more "
          "than one real variant?",
          "README, \"Speed\": the preview row and the paragraphs on its rho and cost; workbench/retrieval/preview.py "
          "(float16 token cache, int8 token pass, pooling over the model window)", preview),
    Study("scale", "scale.md",
          "How do a sweep's time and peak memory grow with the corpus, the questions and the variants, and what do "
          "approximate indexes and distractors do?",
          "README, \"Scale\" (all of SQuAD dev cold and warm, the growth fit) and \"Big corpora\" (IVF and HNSW at "
          "50,000 vectors, distractors); Dataset.with_distractors' docstring", scale),
    Study("chroma_metrics", "chroma_metrics.md",
          "Do our fixed-token chunks and precision-Ω match Chroma's published definitions on chroma_general?",
          "README, metrics: fixed-token chunks and precision-Ω match Chroma's definitions; docs/metrics.md's "
          "differences from Chroma's code; tests/evaluation/test_crosscheck.py re-uses its re-implementation",
          chroma_metrics,
          "it prints its table; bench/chroma_metrics.md is one run's table with a reading written by hand"),
    Study("chunker_costs", "chunker_costs.md",
          "What does each chunking strategy cost to chunk, to embed and to hand to the LLM, against fixed at 256 "
          "tokens?",
          "docs/strategies.md, \"What the strategies cost\"; README, \"More measurements\"", chunker_costs),
    Study("defaults", "defaults.md",
          "Does the default grid fit the model: what share of each dense variant's chunks does the model truncate, "
          "on the bundled data, a folder of documentation and code and the shared datasets?",
          "README, \"Strategies\": the default grid's rule (sizes in the model's tokens, at 94% of its window); "
          "workbench/run/defaults.py", defaults),
    Study("label_free", "label_free.md",
          "Do the label-free measures rank chunkings as recall does on labelled data, and how far can a folder "
          "with no questions trust them?",
          "workbench/results/label_free.py's TRUST, said by audit --label-free and the report; docs/metrics.md, "
          "\"Quality without labels\"; README's audit paragraph", label_free),
    Study("search", "search.md",
          "How often is the search's best in the tied set of the exhaustive sweep of a space of 216 variants, and "
          "at what share of its texts and time, beside a random search given the same texts?",
          "README, the search paragraph and the preview limit; docs/cli.md, \"search\"; workbench/run/search.py",
          search),
    Study("demo_times", "demo_times.json",
          "How long does `make demo` take, cold and warm?",
          "README, \"Measured on this machine\": the `make demo` rows", demo_times),
    Study("widgets", "widgets.md",
          "How fast do the sweeper's plots redraw when a variant is scrubbed or k changes?",
          "README, the sweeper: a scrub against a full redraw; the \"Speed\" table's sweeper row; perf.md's row 6",
          widgets),
    Study("explorer", "explorer.md",
          "How fast does the semantic explorer re-cut a document (issue 8: under 300 ms)?",
          "README, the semantic explorer: the re-cut times with and without the figure", explorer),
    Study("sweeper_overhead", "sweeper_overhead.md",
          "What does the sweeper panel add to the same sweep through `wb.sweep` (target: within 5% cold)?",
          "README, the sweeper: a cold sweep from the panel against `wb.sweep`, the 5% target missed",
          sweeper_overhead),
    Study("model_stack", "model_stack.md",
          "What does each model-powered row (+context, propositions, llm_chunk, +rerank, answers) cost per chunk or "
          "question, and does a re-run generate anything?",
          "README, \"What each row costs\": tokens and model seconds per chunk and per question, a second run that "
          "generates nothing", model_stack),
    Study("rerank", "rerank.md",
          "What does the rerank stage's batching buy against scoring one pair at a time, for the LLM judge and a "
          "CrossEncoder (target: 5x)?",
          "README, \"Speed\": the reranking row", rerank),
    Study("pgvector", "pgvector.md",
          "What does pgvector's HNSW cost against exact search on the same vectors, in recall@5 and in time per "
          "query against FAISS?",
          "docs/production.md, \"The variant in PostgreSQL with pgvector\"", pgvector),
    Study("peers", "peers.md",
          "How do the workbench's chunkers and CLI sweep compare with Chonkie, LangChain and chunklab, side by side?",
          "README, \"Against the peers\"", peers),
    Study("folders", "folders.md",
          "How long does the default grid take cold on real folders of 100 and 1,000 files of documentation and "
          "code, against its embedding floor; how close is the CLI's estimate, and how much memory does it take?",
          "issue 48's folder rows (no README number yet)", folders,
          "by hand, not in `make bench`: it needs checkouts of two public projects, copied out by its `--prepare` "
          "(bench/folders.py's docstring)"),
    Study("chunk_throughput", "chunk_throughput.md",
          "How much faster are the fixed, recursive and sentence chunkers than LlamaIndex's SentenceSplitter(256)?",
          "README, \"Speed\": the chunking row (perf.md's row 5 re-measures it)", chunk_throughput,
          "not run alone by `make bench`: perf.py measures it as its row 5; bench/chunk_throughput.md holds earlier "
          "runs written up by hand; a run prints its table, `--out FILE` writes it"),
    Study("ray_scale", "ray_scale.md",
          "Does the Ray engine give the in-process run's results, and does a second local worker pay on 2 cores?",
          "README, the Ray engine: \"Measured: 1 and 2 workers\"", ray_scale,
          "by hand, not in `make bench`: it starts a local Ray instance and reads ../shared"),
    Study("gpu", "gpu.md",
          "How much faster is every model stage on a CUDA GPU than on the CPU, with the same outputs?",
          "tests/models/test_devices.py's docstring (no README number yet)", gpu,
          "by hand on a machine with a CUDA GPU; it exits with status 2 on one without"),
    Study("archive.context", "archive/context.md",
          "Is reading each document once into the KV cache worth it for +context (target: 3x)?",
          "README, +context: \"4.2x faster\" (the file says 3.5x, 2 Dec); notebooks/03_model_stack.ipynb: "
          "\"about 4x\"", context),
    Study("archive.tokenizer_default", "archive/tokenizer_default.md",
          "Should sized strategies count chunk sizes in the embedding model's tokens by default, not cl100k_base?",
          "README, truncation: the default stays cl100k_base", tokenizer_default),
    Study("archive.code_chunking", "archive/code_chunking.md",
          "How fast is the `code` strategy against LlamaIndex's CodeSplitter and LangChain's Python splitter?",
          "docs/strategies.md, `code`: \"Cost\"", code_chunking),
    Study("archive.overhead", "archive/overhead.md",
          "What did issue 21's work take off a CLI sweep, cold and warm, before (b06992d) and after, against "
          "chunklab?",
          "none now: README quotes peers.md for chunklab end to end", overhead),
]


def make_commands() -> dict[str, str]:
    """Each study `make bench` runs -> its command there: the Makefile is the list of what is re-run."""
    recipe = (REPO / "Makefile").read_text().partition("\nbench:")[2].partition("\n\n")[0]
    found = (re.match(r"\t(.*?)\$\(BIN\)/python -m bench\.(\S+)(.*)$", ln) for ln in recipe.splitlines())
    return {m[2]: f"{m[1]}python -m bench.{m[2]}{m[3]}" for m in found if m}


def unlisted(make: dict[str, str]) -> list[str]:
    """Studies with no entry in STUDIES: modules of bench/ and bench/archive/, and the Makefile's."""
    modules = {p.stem for p in BENCH.glob("*.py")} | {f"archive.{p.stem}" for p in (BENCH / "archive").glob("*.py")}
    listed = {s.name for s in STUDIES} | HELPERS | {"archive.__init__"}
    return sorted((modules | make.keys()) - listed)


# ---- the two pages -------------------------------------------------------------------------------------------

def headline(study: Study) -> tuple[str, list[str]]:
    """(its last run, its headline numbers); a missing file or a format this script no longer reads says so."""
    path = BENCH / study.result
    if not path.exists():
        return "not run yet", []
    try:
        return last_run(path), study.headline(path.read_text(encoding="utf-8"))
    except (ValueError, KeyError, IndexError, StopIteration, TypeError) as e:
        return last_run(path), [f"**headline not read** ({type(e).__name__}: {e}): fix its reader in bench/results.py"]


def results_page(read: dict[str, tuple[str, list[str]]]) -> str:
    out = ["# Benchmark results", "",
           "Written by `python -m bench.results` from the latest result file of each study (it re-runs nothing; "
           "`make bench` runs it last): the headline numbers, each study with the date and machine of its file. "
           "The machine is shared with other work, so read the ratios measured side by side in one run, not the "
           "seconds. What each study asks and which claim it backs: [README.md](README.md).", ""]
    for archived in (False, True):
        if archived:
            out += ["## Archived (answered, no longer re-run)", ""]
        for s in (s for s in STUDIES if s.archived == archived):
            when, numbers = read[s.name]
            out += [f"{'###' if archived else '##'} [{s.name.removeprefix('archive.')}]({s.result})", "",
                    s.question, "", f"Last run: {when}.", ""]
            out += [f"- {n}" for n in numbers] + ([""] if numbers else [])
    return "\n".join(out)


def index(read: dict[str, tuple[str, list[str]]], make: dict[str, str]) -> str:
    out = []
    for archived in (False, True):
        out += ["### Archived", "", "Answered once; not in `make bench`; each still runs as its module.", ""] \
            if archived else []
        for s in (s for s in STUDIES if s.archived == archived):
            command = make.get(s.name, f"python -m bench.{s.name}")
            how = ("archived, not re-run" if s.archived else "run by `make bench`" if s.name in make else "by hand")
            if s.note:
                how = f"{how}; {s.note}" if s.name in make else s.note
            out += [f"- **[{s.name.removeprefix('archive.')}]({s.name.replace('.', '/')}.py)**: {s.question}",
                    f"  - Command: `{command}`; {how}.",
                    f"  - Last run: {read[s.name][0]}"
                    + (f" ([{s.result}]({s.result}))." if (BENCH / s.result).exists() else "."),
                    f"  - Backs: {s.claim}."]
        out.append("")
    return "\n".join(out)


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    make = make_commands()
    if missing := unlisted(make):
        raise SystemExit(f"bench.results: no entry in STUDIES for {', '.join(missing)}")
    read = {s.name: headline(s) for s in STUDIES}
    (BENCH / "RESULTS.md").write_text(results_page(read), encoding="utf-8")
    readme = (BENCH / "README.md").read_text(encoding="utf-8")
    head, found, rest = readme.partition(BEGIN)
    if not found or END not in rest:
        raise SystemExit(f"bench/README.md: the markers {BEGIN!r} and {END!r} are missing")
    (BENCH / "README.md").write_text(f"{head}{BEGIN}\n{index(read, make)}{END}{rest.partition(END)[2]}",
                                     encoding="utf-8")
    unread = [s.name for s in STUDIES if any("headline not read" in n for n in read[s.name][1])]
    print("wrote bench/RESULTS.md and bench/README.md's list" + (f"; headlines not read: {unread}" if unread else ""))
    if unread:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
