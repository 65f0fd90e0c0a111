"""Issue 48: the default grid, cold, on real folders of documentation and code, as a user runs it.

For each folder (a public project's files, copied out of a git checkout by `prepare`, never committed):
  1. cold: `python -m workbench sweep --data FOLDER` with a fresh --cache and --out and no grid, so the
     default grid (workbench/run/defaults.py: code, markdown and route join it on such a folder), timed
     whole as a fresh process, with its report; its first estimate line (printed before the grid starts)
     read back, and its peak RSS (the child's own, from wait4).
  2. floor: every distinct text the cold sweep embedded (questions, semantic sentence groups, the chunks
     of every variant that builds an index entry), regenerated with the workbench's own chunkers and
     checked against the keys of the cold sweep's vector cache, embedded once in a fresh process by
     bench/perf.py's floor (the default backend, batches of 32 in length order), nothing else.
  3. the rest: the same sweep again with every vector it embedded cached (a cache holding only the cold
     sweep's embeddings: chunking, the estimate, indexes, scores, audit and report, all computed again),
     so the cold sweep's seconds and memory beyond embedding are measured, not inferred.
  4. where memory goes: the peak RSS of a fresh interpreter that imports the CLI, of the floor (the
     model and its inference arena, every text held as a string), of the rest and of the cold sweep; the
     vectors the sweep holds (texts x dimensions x 4 bytes) and the corpus itself.
The cold sweep and its floor run back to back: the machine is shared, so their ratio is the number,
their seconds move with the load (recorded at each start).

Questions: a folder of a public project has none, and `labels generate` needs an LLM run over the
corpus (longer than the sweep). `prepare` takes them mechanically: from QUESTIONS files spread evenly
over the folder (each the first with such a line from an even step on), one line of plain words each
(40 to 160 characters), its evidence itself; the question is that line's first eight words. They make
the sweep score something: the timing is what is measured, not recall.

  python -m bench.folders --prepare ../click/.git --files 100 --into /work/folders/click100
  python -m bench.folders /work/folders/click100 /work/folders/sphinx1000 --work /work/folderswork [--reuse]

With --work, each folder's measurements are saved in its own folder there (measured.json); --reuse reads a
folder measured whole before back instead of measuring it again, so folders can be measured one run at a time,
and resumes one whose cold sweep was measured after it (the texts, floor and import steps run on its cache).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.harness import BENCH, REPO, Start, header, table

SUFFIXES = (".py", ".md", ".rst")  # documentation and code
QUESTIONS = 40
PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9 ,.'()-]{38,158}[A-Za-z0-9.)]")  # a line of plain words
DURATION = r"(\d+ h \d+ min|\d+ min \d+ s|\d+ s)"


# ---- prepare: a folder of a git checkout's files, and mechanical questions -------------------------------

def prepare(git_dir: Path, files: int, max_bytes: int, out: Path, repo: str = "") -> dict[str, object]:
    """Copy `files` files (SUFFIXES, at most `max_bytes` each, spread evenly over the sorted paths) of the
    checkout's HEAD into `out`, and write questions.jsonl (module docstring); returns what was taken
    (`repo`: the project's name, for the result file)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "--git-dir", str(git_dir), *args], check=True, capture_output=True,
                              text=True).stdout

    listed = [ln.split(None, 4) for ln in git("ls-tree", "-r", "-l", "HEAD").splitlines()]
    paths = sorted(p for _, kind, _, size, p in listed  # a hidden folder's files are not read (.github/)
                   if kind == "blob" and p.endswith(SUFFIXES) and 0 < int(size) <= max_bytes
                   and not any(part.startswith(".") for part in p.split("/")))
    if len(paths) < files:
        raise SystemExit(f"prepare: {git_dir} has {len(paths)} files of {SUFFIXES} up to {max_bytes} bytes, "
                         f"not {files}")
    chosen = [paths[i * len(paths) // files] for i in range(files)]
    if out.exists():
        raise SystemExit(f"prepare: {out} exists; give a new folder")
    for p in chosen:
        target = out / p
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(subprocess.run(["git", "--git-dir", str(git_dir), "show", f"HEAD:{p}"], check=True,
                                          capture_output=True).stdout)
    from workbench.ingest.folder import load_documents

    documents, _, _ = load_documents(out, require_questions=False)
    lines, used = [], set()
    for i in range(QUESTIONS):  # from the i-th fortieth of the documents on, the first one with such a line
        for doc in documents[i * len(documents) // QUESTIONS:]:
            found = next((ln.strip() for ln in doc.text.splitlines()
                          if PLAIN.fullmatch(ln.strip()) and doc.text.count(ln.strip()) == 1), None)
            if found is not None and doc.doc_id not in used:
                used.add(doc.doc_id)
                lines.append({"qid": f"q{i}", "question": " ".join(found.split()[:8]) + "?", "source": doc.doc_id,
                              "evidence": found})
                break
    (out / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in lines))
    taken = {"repo": repo or str(git_dir),
             "commit": git("rev-parse", "HEAD").strip(), "files": files, "max_bytes": max_bytes,
             "candidates": len(paths), "chars": sum(len(d.text) for d in documents), "questions": len(lines)}
    out.with_name(out.name + ".json").write_text(json.dumps(taken, indent=1) + "\n")
    return taken


# ---- measuring ------------------------------------------------------------------------------------------

@dataclass
class Run:
    """One fresh process timed whole: wall and CPU seconds, its own peak RSS, the load when it started."""

    wall_s: float
    cpu_s: float
    peak_mb: float
    load: float
    command: str
    stdout: str = field(default="", repr=False)
    marked_s: float | None = None  # when its first line starting with `mark` came (seconds from the start)


def run(cmd: list[str], cwd: Path = REPO, mark: str | None = None) -> Run:
    """`cmd` as a fresh process; fails naming it. The peak RSS is the child's own (wait4), not the
    largest of every child so far (what getrusage(RUSAGE_CHILDREN) gives). Its output is read line by line
    (unbuffered), so the moment its first line starting with `mark` came is known."""
    env = os.environ | {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(REPO),
                        "PYTHONUNBUFFERED": "1"}
    load_1 = os.getloadavg()[0]
    with tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        child = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        lines, marked = [], None
        assert child.stdout is not None
        for line in child.stdout:
            if mark and marked is None and line.startswith(mark):
                marked = time.perf_counter() - t0
            lines.append(line)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode:
            err.seek(0)
            raise SystemExit(f"{shlex.join(cmd)} failed (exit {child.returncode}):\n{err.read()[-3000:]}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, load_1, shlex.join(cmd),
               "".join(lines), marked)


def seconds_of(text: str) -> float:
    """`workbench.models.estimate.duration`'s text back in seconds."""
    parts = dict((unit, int(n)) for n, unit in re.findall(r"(\d+) (h|min|s)\b", text))
    return parts.get("h", 0) * 3600 + parts.get("min", 0) * 60 + parts.get("s", 0)


def estimate_of(stdout: str) -> tuple[str, float]:
    """The CLI's first estimate (its wrapped lines joined) and the seconds it says: embedding and chunking."""
    lines = stdout.splitlines()
    first = next(i for i, ln in enumerate(lines) if ln.startswith("estimate:"))
    said = [lines[first]]
    for ln in lines[first + 1:]:
        if not ln.startswith("  "):
            break
        said.append(ln.strip())
    text = " ".join(said)
    embed = re.search(rf"about {DURATION} of embedding", text)
    chunk = re.search(rf"as long as it took here: {DURATION}", text)
    return text, sum(seconds_of(m.group(1)) for m in (embed, chunk) if m)


def collect_texts(folder: Path, cache: Path, out: Path) -> None:
    """Every distinct text the cold default sweep of `folder` embedded, regenerated (bench/perf.py's
    collect_texts for the default grid); fails unless they are exactly the cache's."""
    from workbench.chunkers import ChunkEnv
    from workbench.ingest import load_dataset
    from workbench.models.cache import text_key
    from workbench.models.embed import Embedder
    from workbench.retrieval.index import embed_texts, reads_vectors
    from workbench.run.defaults import default_grid

    dataset = load_dataset(folder)
    embedder = Embedder(cache_dir=cache, progress=False)
    texts = [q.question for q in dataset.questions]

    def recording(batch: list[str]):  # noqa: ANN202
        texts.extend(batch)
        return embedder.encode(batch)

    env = ChunkEnv(embed=recording, model_tokenizer=embedder.tokenizer)
    for variant in default_grid(dataset, embedder.window_tokens):
        chunks = variant.chunk(dataset, env)  # semantic's sentence groups are embedded here, whatever searches them
        texts += embed_texts(chunks) if reads_vectors(variant) else []  # a BM25 entry embeds no chunks
    distinct = list(dict.fromkeys(texts))
    cached = embedder.cache.get_many([text_key(t) for t in distinct])
    if embedder.stats.embedded or len(cached) != len(distinct) or len(embedder.cache) != len(distinct):
        raise SystemExit(f"--texts: {len(distinct)} distinct texts regenerated, {len(cached)} of them in the cache "
                         f"{embedder.cache.path} of {len(embedder.cache)} vectors: not the cold sweep's texts")
    out.write_text(json.dumps({"texts": distinct, "dim": embedder.dim, "variants": len(default_grid(
        dataset, embedder.window_tokens)), "documents": len(dataset.documents), "questions": len(dataset.questions),
        "chars": sum(len(d.text) for d in dataset.documents)}))


@dataclass
class Folder:
    path: Path
    taken: dict[str, object]
    runs: dict[str, Run] = field(default_factory=dict)
    estimate: str = ""
    estimate_s: float = 0.0
    facts: dict[str, int] = field(default_factory=dict)  # texts, dim, variants, documents, questions, chars
    started: str = ""  # when its first step began (UTC)

    def save(self, to: Path) -> None:
        to.write_text(json.dumps(asdict(self) | {"path": str(self.path)}, indent=1))

    @classmethod
    def read(cls, saved: Path) -> Folder:
        d = json.loads(saved.read_text())
        return cls(**d | {"path": Path(d["path"]), "runs": {k: Run(**r) for k, r in d["runs"].items()}})


def measure(f: Folder, work: Path, save: Callable[[], None]) -> None:
    """Every step of the module docstring for one folder, `save` after each; a cold run saved before (--reuse)
    with its cache is kept, and the steps after it run on that cache."""
    from workbench.models.embed import default_model_path

    folder = f.path
    py = sys.executable

    def step(what: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {folder.name}: {what}", file=sys.stderr, flush=True)

    if "cold" not in f.runs or not (work / "cache").is_dir():
        f.started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        step("cold")
        f.runs["cold"] = run([py, "-m", "workbench", "sweep", "--data", str(folder), "--cache",
                              str(work / "cache"), "--out", str(work / "cold")], mark="estimate:")
        f.estimate, f.estimate_s = estimate_of(f.runs["cold"].stdout)
        save()
    step("texts")
    texts = work / "texts.json"
    run([py, "-m", "bench.folders", "--texts", str(folder), str(work / "cache"), str(texts)])
    facts = json.loads(texts.read_text())
    f.facts = {k: (len(v) if k == "texts" else v) for k, v in facts.items()}
    (work / "floor.json").write_text(json.dumps(facts["texts"]))
    step("floor")
    f.runs["floor"] = run([py, "-m", "bench.perf", "--floor", str(work / "floor.json"), str(default_model_path())])
    step("rest")
    rest = work / "rest"
    shutil.rmtree(rest, ignore_errors=True)
    shutil.copytree(work / "cache" / "embeddings", rest / "cache" / "embeddings")
    f.runs["rest"] = run([py, "-m", "workbench", "sweep", "--data", str(folder), "--cache", str(rest / "cache"),
                          "--out", str(rest / "out")])
    step("import")
    f.runs["import"] = run([py, "-c", "import workbench, workbench.cli"])
    save()


# ---- the result file ------------------------------------------------------------------------------------

def markdown(folders: list[Folder], start: Start, done: bool) -> str:
    partial = "" if done else "\n**Partial: the run had not finished all its steps when this was written.**\n"
    rows, memory, said = [], [], []
    for f in folders:
        cold, floor, rest, imp = (f.runs.get(k) for k in ("cold", "floor", "rest", "import"))
        name = f"`{f.path.name}`"
        rows.append([
            name, f"{f.facts.get('documents', f.taken.get('files', '?'))}",
            f"{f.facts.get('chars', f.taken.get('chars', 0)):,}",
            f"{f.facts.get('questions', f.taken.get('questions', '?'))}", f"{f.facts.get('variants', '?')}",
            f"{f.facts['texts']:,}" if "texts" in f.facts else "",
            _secs(cold), _secs(floor), _secs(rest),
            f"{cold.wall_s / floor.wall_s:.2f}x (CPU {cold.cpu_s / floor.cpu_s:.2f}x)" if cold and floor else "",
            f"{f.estimate_s:.0f} s" if f.estimate else "",
            f"{cold.wall_s - cold.marked_s:.0f} s" if cold and cold.marked_s is not None else "",
            f"{(cold.wall_s - cold.marked_s) / f.estimate_s:.2f}x (whole run {cold.wall_s / f.estimate_s:.2f}x)"
            if cold and cold.marked_s is not None and f.estimate_s else "",
        ])
        vectors = f.facts.get("texts", 0) * f.facts.get("dim", 0) * 4 / 2**20
        memory.append([name, *(f"{r.peak_mb:,.0f}" if r else "" for r in (cold, imp, floor, rest)), f"{vectors:,.0f}",
                       f"{f.facts.get('chars', 0) / 2**20:,.1f}"])
        if f.estimate:
            said.append(f"- {name}: {f.estimate}")
    sources = [f"- `{f.path.name}` (measured from {f.started}): {f.taken.get('files')} files "
               f"({', '.join(SUFFIXES)}, each at most "
               f"{f.taken.get('max_bytes', 0):,} bytes, spread evenly over the {f.taken.get('candidates')} such "
               f"files by path) of {f.taken.get('repo')} at {str(f.taken.get('commit'))[:12]}"
               for f in folders if f.taken]
    commands = [f"- {f.path.name} {what}: `{r.command}`" for f in folders for what, r in f.runs.items()]
    return "\n".join([
        header("Folders of documentation and code: the default grid cold, against its embedding floor", start),
        partial,
        "Each folder swept as a user sweeps it: `python -m workbench sweep --data FOLDER` (the default grid, "
        "with the report), a fresh --cache, timed whole as a fresh process, then its embedding floor (every "
        "distinct text it embedded, embedded once in a fresh process: bench/perf.py's floor), back to back on "
        "a shared 2-core machine (load at each start below). Questions taken mechanically (bench/folders.py's "
        "docstring): the timing is the measure, not recall.",
        "", *sources, "",
        table(["folder", "documents", "characters", "questions", "variants", "distinct texts embedded",
               "cold: wall s / CPU s / load", "floor: wall s / CPU s / load",
               "the rest (every vector cached): wall s / CPU s / load", "cold vs floor (target <= 1.15x)",
               "first estimate said", "measured after it was printed",
               "measured / estimate (target within 1.5x)"], rows),
        "", "## Peak memory (RSS, MB) and where it goes", "",
        "Each process's own peak resident set (wait4). The import column is a fresh interpreter that imports the "
        "CLI and nothing else; the floor holds the model, its inference arena and every text; the rest is the "
        "same sweep with every vector cached (the model loaded, nothing embedded): chunk tables, indexes, "
        "scores, the audit and the report.", "",
        table(["folder", "cold sweep", "import the CLI", "floor (model + texts)", "the rest (every vector cached)",
               "vectors of every text (MB)", "corpus text (MB)"], memory),
        "", "## The first estimate, as printed", "", *said, "", "## Commands", "", *commands, "",
    ])


def _secs(r: Run | None) -> str:
    return "" if r is None else f"{r.wall_s:.1f} / {r.cpu_s:.1f} / {r.load:.1f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folders", nargs="*", type=Path, help="prepared folders to measure (module docstring)")
    p.add_argument("--out", type=Path, default=BENCH / "folders.md", help="markdown to write (default: %(default)s)")
    p.add_argument("--work", type=Path, help="where caches, outputs and each folder's measured.json go "
                                              "(default: a temporary folder, removed)")
    p.add_argument("--reuse", action="store_true", help="read a folder measured whole in --work before back")
    p.add_argument("--texts", nargs=3, type=Path, metavar=("FOLDER", "CACHE", "OUT"), help=argparse.SUPPRESS)
    p.add_argument("--prepare", type=Path, metavar="GIT_DIR",
                   help="instead: copy --files files of this checkout's HEAD (its .git folder) into --into, with "
                        "questions")
    p.add_argument("--files", type=int, help="with --prepare: how many files")
    p.add_argument("--max-bytes", type=int, default=1 << 20, help="with --prepare: the largest file taken")
    p.add_argument("--into", type=Path, help="with --prepare: the new folder")
    p.add_argument("--repo", default="", help="with --prepare: the project's name (owner/name), for the result file")
    args = p.parse_args()
    if args.prepare:
        if not (args.files and args.into):
            p.error("--prepare needs --files and --into")
        print(json.dumps(prepare(args.prepare, args.files, args.max_bytes, args.into, args.repo), indent=1))
        return
    if args.texts:
        return collect_texts(*args.texts)
    if not args.folders:
        p.error("give prepared folders to measure, or `prepare`")
    start, measured = Start(), []

    def save(done: bool = False) -> None:
        args.out.write_text(markdown(measured, start, done))

    with tempfile.TemporaryDirectory(prefix="folders-") as tmp:
        work = args.work or Path(tmp)
        for folder in args.folders:
            saved = work / folder.resolve().name / "measured.json"
            done = Folder.read(saved) if args.reuse and saved.is_file() else None
            if done is not None and {"cold", "floor", "rest", "import"} <= done.runs.keys():
                measured.append(done)
                continue
            meta = folder.resolve().with_name(folder.resolve().name + ".json")
            measured.append(done or Folder(folder.resolve(), json.loads(meta.read_text()) if meta.exists() else {}))
            saved.parent.mkdir(parents=True, exist_ok=True)
            measure(measured[-1], saved.parent, lambda f=measured[-1], to=saved: (f.save(to), save()))
    save(True)
    print(args.out.read_text())


if __name__ == "__main__":
    main()
