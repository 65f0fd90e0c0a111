"""What pgvector's HNSW costs against exact search, on the bundled corpus: recall, and time per query.

Every dense variant of data/chroma_small's default grid (pgvector serves dense search; the demo's best is a
BM25 variant) is swept with exact FAISS search beside the same vectors in pgvector (the bundled PostgreSQL 18 +
pgvector 0.8.6, started here in a temporary folder) with HNSW at pgvector's default build (m=16,
ef_construction=64) and ef_search 10 and 40 (the default): each pgvector row's recall@5 minus exact search's,
paired over the questions with its interval, and the share of exact search's top 10 its top 10 keeps
(ann_recall). Then, on the variant with the most chunks, one question at a time as an application asks, the
time of a query: FAISS flat (exact), FAISS HNSW at the same m and ef_search (workbench.retrieval.ann) and
pgvector HNSW by SQL over a localhost connection, interleaved over rounds, the median and 95th percentile of
every question's best round. Reads the vectors from results/cache (run `make demo` first, or it embeds them).
Writes bench/pgvector.md.

    python -m bench.pgvector [--rounds 5]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import numpy as np

from bench.harness import BENCH, REPO, SMALL, Start, header, lap, table
from workbench import load_dataset
from workbench.results.approximate import approximation
from workbench.retrieval.ann import Ann
from workbench.retrieval.index import ChunkIndex, IndexStore
from workbench.retrieval.pgvector import literal
from workbench.retrieval.postgres import BundledServer
from workbench.run.session import Session
from workbench.variant import parse_variant

EF_SEARCH = (10, 40)  # 40: pgvector's default
KS = (1, 3, 5, 10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the per-query timing (default: 5)")
    args = parser.parse_args()
    start = Start()
    ds = load_dataset(SMALL)
    folder = Path(tempfile.mkdtemp(prefix="bench-pgvector-"))
    folder.chmod(0o755)  # under root the bundled server runs as nobody, who must enter it
    server = BundledServer(folder / "postgres")
    try:
        url = server.start()
        store = IndexStore(REPO / "results" / "cache", pg=url)  # the demo's cache: its vectors, no model pass
        with Session(ds, cache=store, ks=KS, progress=False) as session:
            dense = [v for v in session.default_grid() if v.retriever == "dense"]
            variants = [w for v in dense for w in (v, *(parse_variant(f"{v.text}+pgvector:ef_search={ef}")
                                                        for ef in EF_SEARCH))]
            result, took = lap(lambda: session.sweep(variants))
            recall = approximation(result, k=5).set_index("key")
            largest = max(dense, key=lambda v: int(result.variants.set_index("key").loc[v.key, "chunks"]))
            timed = parse_variant(f"{largest.text}+pgvector:ef_search=40")
            index = store.get(timed, ds, session.embedder)
            qvecs = session.embedder.encode([q.question for q in ds.questions])
            params = dict(timed.stages[0][1])
            times = query_times(index, params, qvecs, args.rounds)
            built = index.pgvector.server.connection().execute(
                "SELECT obj_description(%s::regclass)", (index.pgvector.table(params),)).fetchone()[0]
    finally:
        server.stop()
        shutil.rmtree(folder)
    at5 = result.summary.query("metric == 'recall' and k == 5").set_index("key")
    table_ = result.variants.set_index("key")
    rows = []
    for v in dense:
        exact = at5.loc[v.key]
        row = [v.label, f"{int(table_.loc[v.key, 'chunks']):,}",
               f"{exact['mean']:.3f} [{exact['ci_low']:.3f}, {exact['ci_high']:.3f}]"]
        for ef in EF_SEARCH:
            r = recall.loc[parse_variant(f"{v.text}+pgvector:ef_search={ef}").key]
            row += [f"{r.ann_recall:.3f}", f"{r['diff']:+.4f} [{r.ci_low:+.4f}, {r.ci_high:+.4f}]"]
        rows.append(row)
    head = ["variant (dense, default grid)", "chunks", "exact recall@5 [95%]"]
    for ef in EF_SEARCH:
        head += [f"ef_search={ef}: kept@10", f"ef_search={ef}: recall@5 minus exact [95%]"]
    lines = [header("pgvector HNSW against exact search: recall and time per query", start),
             f"data/chroma_small ({len(ds.questions)} questions): every dense variant of its default grid, searched "
             "exactly (FAISS flat) and in pgvector (HNSW at pgvector's default build, m=16, ef_construction=64, "
             f"on the same vectors); the sweep took {took.wall_s:.1f} s (vectors from the cache). kept@10: the share "
             "of exact search's top 10 that pgvector's top 10 holds; the difference is paired over the questions. "
             "pgvector draws HNSW levels from the server's random state, and this run starts a server of its own: "
             "a run builds new graphs, so the ef_search=10 columns move a little from run to run.",
             "", "## Recall", "",
             table(head, rows, ["---", "---:", "---:", *["---:"] * 2 * len(EF_SEARCH)]), "",
             "## Time per query", "",
             f"`{largest.label}` ({index.exact.ntotal:,} chunks of {qvecs.shape[1]} dimensions; pgvector "
             f"{built.split('; ')[1]}). One question at a time, top 10, {args.rounds} rounds interleaved; each "
             "question's best round, then the median and 95th percentile over the questions (milliseconds).", "",
             table(["search", "median ms", "p95 ms", "vs FAISS flat (median)"],
                   [[name, f"{np.median(t):.3f}", f"{np.percentile(t, 95):.3f}",
                     f"{np.median(t) / np.median(times['FAISS flat (exact)']):.1f}x"] for name, t in times.items()],
                   ["---", "---:", "---:", "---:"]), ""]
    (BENCH / "pgvector.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


def query_times(index: ChunkIndex, params: dict, qvecs: np.ndarray, rounds: int) -> dict[str, np.ndarray]:
    """Milliseconds of each question's best round, for each search (top 10, one question a call). pgvector's
    query is what an application sends once its session is set (the stage sets ef_search and the scan options
    per batch): one prepared statement, the vector as pgvector's text."""
    vectors = index.exact.reconstruct_n(0, index.exact.ntotal)
    hnsw = Ann("hnsw", above=0, m=params["m"], ef_construction=params["ef_construction"],
               ef_search=params["ef_search"]).build(vectors)
    index.pgvector.search(qvecs[:1], 10, [None], params)  # the table, and the session's settings
    cursor = index.pgvector.server.connection().cursor()
    query = f"SELECT id, embedding <#> %s::vector AS d FROM {index.pgvector.table(params)} ORDER BY d LIMIT 10"
    searches = {
        "FAISS flat (exact)": lambda q: index.exact.search(q[None, :], 10),
        "FAISS HNSW (m=16, ef_search=40)": lambda q: hnsw.search(q[None, :], 10),
        "pgvector HNSW (m=16, ef_search=40), SQL on localhost": lambda q: cursor.execute(
            query, (literal(q),), prepare=True).fetchall(),
    }
    for search in searches.values():  # warm up: the table built, the plans prepared, the pages cached
        for q in qvecs[:20]:
            search(q)
    best = {name: np.full(len(qvecs), np.inf) for name in searches}
    for _ in range(rounds):
        for name, search in searches.items():
            for i, q in enumerate(qvecs):
                best[name][i] = min(best[name][i], lap(lambda q=q: search(q))[1].wall_s * 1000)
    return best


if __name__ == "__main__":
    main()
