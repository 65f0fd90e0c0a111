"""`sweep`: the headless sweep behind `make demo`, and the lines a run ends with (the verdict, the top variants)."""


from __future__ import annotations

import argparse
import shlex
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from workbench.cli.options import EPILOG, grid_of, session_of, sweep_arguments, variants_of
from workbench.core.errors import describe
from workbench.dataset import Dataset
from workbench.evaluation.metrics import MetricAt
from workbench.run.search import Space
from workbench.run.session import Session
from workbench.variant import Variant

if TYPE_CHECKING:
    from workbench.results.answers import Answers
    from workbench.results.result import SweepResult
    from workbench.results.verdict import Verdict
from workbench.cli.options import TOP, WIDTH

CONFIRM_SETS = ("variant", "grid", "out", "preview")  # what a preview's confirm command sets itself


def measure(args: argparse.Namespace, then: Callable[[SweepResult, Dataset], Answers] | None = None,
            space: Space | None = None) -> tuple[SweepResult, Answers | None, Verdict | None]:
    """The sweep the options describe (or with `space`, the search of it: `search`), what `then` makes
    of it (answer quality) and its verdict (None when it has none), saved to --out (with plots and the
    report unless --no-report), with its progress and the paths it wrote printed unless --quiet."""
    given = space.variants().variants if space else variants_of(args)
    if args.top < 1:
        raise SystemExit(f"error: --top must be >= 1, got {args.top}")
    t0 = time.perf_counter()
    session = session_of(args)
    variants = grid_of(session, given)
    dataset, models = session.dataset, session.models
    if not args.quiet:
        print(f"{dataset.name}: {len(dataset.documents)} documents, {len(dataset.questions)} questions, "
              f"{len(variants)} variants, model{'s' * (len(models) > 1)} {', '.join(e.name for e in models)}")
    metric = getattr(args, "verdict_metric", MetricAt())
    try:
        result = (searched if space is not None else swept)(args, session, variants, metric)
        result.provenance = result.provenance.with_(command=shlex.join(["python", "-m", "workbench", *args.argv]))
        answers = then(result, dataset) if then else None
        judged = judge(result, metric)
        if getattr(args, "no_report", True):
            paths = result.save(args.out) | (answers.save(args.out) if answers else {})
        else:
            from workbench.report import export

            audit = session.audit([Variant.from_spec(g) for g in result.provenance.grid],  # its "Chunk health"
                                  label_free=args.label_free)
            paths = export(result, args.out, dataset=dataset, store=session.store, answers=answers, judged=judged,
                           audit=audit)
    except Exception as e:  # one line, never a traceback: what failed, where, and why
        raise SystemExit(f"error: {describe(e)}") from e
    except KeyboardInterrupt:  # Ctrl-C: one line, what finished and is kept
        raise SystemExit(f"interrupted: {interrupted(session, variants)}") from None
    if not args.quiet:
        sampled = sum(e.stats.embedded for e in models) - result.provenance.computed.texts_embedded
        print(f"done in {time.perf_counter() - t0:.1f} s: {_computed(result, len(result.keys), sampled)}")
        print(_wrote(args.out, paths))
        if args.preview:
            print("\n".join(_preview_lines(args, result)))
        print()
    return result, answers, judged


def swept(args: argparse.Namespace, session: Session, variants: list[Variant], metric: MetricAt) -> SweepResult:
    """The sweep of `variants`, its estimate said first unless --quiet, with the route when the folders
    disagree (Session.with_route)."""
    if not args.quiet:  # before a cold grid starts: how much it will embed, and for how long
        print("estimating: the grid is chunked and a sample of what is not cached is embedded (or generated) "
              "to measure the rates...", flush=True)
        for name, estimate in session.estimate(variants).items():
            print(textwrap.fill(f"{name}: " * (len(session.models) > 1) + estimate.line(), WIDTH,
                                subsequent_indent="  "))
    result = session.with_route(session.sweep(variants), metric)
    if len(result.keys) > len(variants) * len(session.models) and not args.quiet:
        print(textwrap.fill(f"the folders disagree: measured {result.labels[-1]}", WIDTH, subsequent_indent="  "))
    return result


def searched(args: argparse.Namespace, session: Session, variants: list[Variant], metric: MetricAt) -> SweepResult:
    """The search of `variants` (cli.search's options), what it will spend said first unless --quiet."""
    if metric.budget or metric.name == "precision_omega":
        raise ValueError(f"--metric {metric.label}: a search races on a metric at k (recall@5, mrr@10)")
    if not args.quiet:
        embedding = len({v.chunking_key for v in variants if v.embeds}) * len(session.models)
        print(textwrap.fill(f"searching: a preview of all {len(variants) * len(session.models)} candidates, then at "
                            f"most {args.spend:.0%} of what sweeping their {embedding} chunkings that embed would "
                            "embed", WIDTH, subsequent_indent="  "), flush=True)
    return session.search(variants, metric=metric.name, k=metric.k, budget=args.spend, seed=args.seed,
                          finalists=args.finalists, refine=not args.no_refine)


def interrupted(session: Session, variants: list[Variant]) -> str:
    """What a Ctrl-C leaves: the variants whose scores are cached (every model's), and that the rest of
    what was computed (vectors, generations, judgements) is cached too, so the same command resumes."""
    caches = [session.context(e).scores for e in session.models]  # none for a preview: nothing of it is kept
    done = sum(all(c is not None and c.has(v) for c in caches) for v in variants)
    return (f"{done} of {len(variants)} variants measured and cached, and every vector, generation and judgement "
            "computed before the interrupt; run the same command again to resume from there")


def judge(result: SweepResult, metric: MetricAt) -> Verdict | None:
    """The verdict on `metric`, computed once for the report and the closing lines (its paired
    comparisons read back from the sweep's cache on a re-run); None when the result allows none
    (`answer` then says why)."""
    try:
        return result.verdict(metric)
    except ValueError:
        return None


def add_parser(sub: argparse._SubParsersAction) -> None:
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
    sweep_arguments(s)
    s.add_argument("--mlflow", metavar="URI",
                   help="log every variant as an MLflow run under a run for the sweep (parameters, every metric with "
                   "its interval, costs, the verdict; report.html and the tables as artifacts) to this tracking "
                   "store: a server (http://host:5000), sqlite:///mlflow.db, ...; a result logged before is not "
                   "logged again (needs mlflow-skinny)")
    s.add_argument("--experiment", metavar="NAME", help="the MLflow experiment of --mlflow (default: 'workbench "
                   "<dataset name>')")
    metric_argument(s, "what the verdict and the table it ends with judge: a metric at a cut-off, recall@5, "
                    "mrr@10, ndcg@3, or at an equal context budget, recall@budget=1024 (a budget of --budgets); "
                    "without a cut-off, the default one (default: recall)")


def metric_argument(s: argparse.ArgumentParser, help_: str) -> None:
    """--metric, read as a MetricAt into args.verdict_metric (`sweep` and `search`)."""
    s.add_argument("--metric", dest="verdict_metric", type=metric_at, default=MetricAt(), metavar="METRIC",
                   help=help_)


def metric_at(text: str) -> MetricAt:
    """--metric's type: a MetricAt, or argparse's one-line error naming what is wrong."""
    try:
        return MetricAt.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def run(args: argparse.Namespace) -> None:
    result, _, judged = measure(args)
    print("\n".join(answer(result, args.top, judged) + approximate_lines(result, judged.k if judged else None)))
    if args.mlflow:
        print(tracked(result, args, judged))


def tracked(result: SweepResult, args: argparse.Namespace, judged: Verdict | None) -> str:
    """Log the result to --mlflow (results.track), with its --out folder as artifacts; what was logged, in a line."""
    from workbench.results.track import track

    try:
        done = track(result, args.mlflow, args.experiment, folder=args.out, verdict=judged)
    except Exception as e:  # one line, never a traceback
        raise SystemExit(f"error: --mlflow: {describe(e)}") from e
    where = f"{args.mlflow}, experiment {done.experiment!r}, run {done.url(args.mlflow) or done.run_id}"
    if not done.logged:
        return f"mlflow: every variant was logged before ({where}): nothing logged"
    return f"mlflow: logged {len(done.logged)} variant run{'s' * (len(done.logged) > 1)} ({where})"


def approximate_lines(result: SweepResult, k: int | None = None) -> list[str]:
    """One line per variant searched approximately (results.approximate): what it keeps of exact search, and
    its recall@k against the same variant searched exactly when the sweep holds it."""
    from workbench.results.approximate import approximation

    table = approximation(result, k=k)
    k = result.default_k if k is None else k
    out = []
    for r in table.itertuples(index=False):
        line = f"{r.index}: keeps {r.ann_recall:.1%} of exact search's top {max(result.ks)}"
        if isinstance(r.exact, str):
            line += (f"; recall@{k} {r.mean:.3f} against {r.exact_mean:.3f} searched exactly, difference "
                     f"{r.diff:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}]")
        out += textwrap.wrap(line, WIDTH, initial_indent="  ", subsequent_indent="    ")
    return ["", "Approximate search against exact:", *out] if out else []


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
    from workbench.results.verdict import sweep_warnings, verdict

    try:
        v = judged if judged is not None else verdict(result)
    except ValueError as e:  # the warnings still hold
        return [f"No verdict: {e}. The tables hold every score.", *sweep_warnings(result.variants, result.provenance)]
    at = v.at.label
    preview = " (a preview: pooled vectors, confirm before you trust it)" if result.preview else ""
    out = [f"Verdict on {at} over {v.questions} questions{preview}:"]
    out += [line for sentence in v.sentences() for line in textwrap.wrap(sentence, WIDTH, initial_indent="  ",
                                                                          subsequent_indent="  ")]
    ranked = v.table.reset_index(drop=True)
    shown = ranked[(ranked.index < top) | (ranked["key"] == v.best)]
    level = f"{result.confidence:.0%}"
    seconds = bool(ranked["query_seconds"].gt(0).any())  # a column only when some variant spends model time per query
    head = ["", "#", "variant", f"{at} [{level} CI]", "vs best", "context tokens", *["s/question"] * seconds,
            "chunks", "truncated"]
    rows = [["*" if r.key == v.best else "", str(i + 1), r.variant, f"{r.mean:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]",
             "" if r.key == v.best else "trade-off" if r.trade_off else "tied" if r.tied else "worse",
             _count(r.context_tokens), *[f"{r.query_seconds:.2f}"] * seconds, _count(getattr(r, "chunks", None)),
             _truncated(getattr(r, "truncated_chunks", None), getattr(r, "chunks", None))]
            for i, r in zip(shown.index, shown.itertuples(index=False), strict=True)]
    widths = [max(len(row[c]) for row in [head, *rows]) for c in range(len(head))]
    left = {1, 2}  # rank and label read left to right; numbers align right
    out += [""] + ["  ".join(cell.ljust(w) if c in left else cell.rjust(w)
                             for c, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
                   for row in [head, *rows]]
    more = "; --top N for more" if len(shown) < len(ranked) else ""
    out.append(f"* the headline (the highest mean); {len(shown)} of {len(ranked)} variants, by {at}{more}")
    return out


def _count(value: float | None) -> str:
    return "-" if value is None or pd.isna(value) else f"{value:,.0f}"


def _truncated(n: float | None, chunks: float | None) -> str:
    """Chunks longer than the model's window, with their share when there are any."""
    if n is None or pd.isna(n) or not n or not chunks:
        return _count(n)
    return f"{n:,.0f} ({n / chunks:.0%})"


def _computed(result: SweepResult, n_variants: int, sampled: int) -> str:
    """What the run computed, for its closing line: the indexes built, or the preview's token pass,
    and the texts embedded, as the result's provenance (and so the report) counts them, plus those
    the estimate embedded first to measure its rate (`sampled`, kept in the cache)."""
    embedded = result.provenance.computed.texts_embedded
    more = f" (and {sampled:,} by the estimate, to measure its rate)" if sampled else ""
    if not result.preview:
        texts = (f"{embedded:,} texts embedded{more}" if embedded or sampled
                 else "embedded nothing new (every vector came from the cache)")
        return f"{int(result.variants['built'].sum())} of {n_variants} indexes built, {texts}"
    texts = f"{embedded:,} texts embedded{more}" if embedded or sampled else "no text embedded"
    passed = result.provenance.computed.token_pass_documents
    tokens = (f"a token pass over {passed} documents (computed now)" if passed
              else f"the cached token pass over {result.provenance.dataset.documents} documents (no model pass)")
    return f"a preview of {n_variants} variants from {tokens}, {texts}"


def _preview_lines(args: argparse.Namespace, result: SweepResult) -> list[str]:
    """What a preview can order (its own paired bootstrap over questions, SweepResult.ties), and
    the real sweep of the variants tied with its top: the set that should hold the real best."""
    from workbench.evaluation import stats

    ties = result.ties()
    level = f"{result.confidence:.0%}"
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
    given = argparse.ArgumentParser()
    sweep_arguments(given)
    defaults = vars(given.parse_args([]))
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
