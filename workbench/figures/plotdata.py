"""What the figures of a SweepResult show, computed without matplotlib: the parameters swept, the
groups of variants a line joins, axis labels, the overview's panels, the variants' colours (and,
in a crowded figure, which few are drawn in colour), the variants that share their chunks.

workbench.figures.plots draws from these; the report reads them too, for its captions, its legend and the
names of the figures it reads back from the figure cache, so a report whose figures are all
cached never imports matplotlib (the costliest import of a warm re-run).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from workbench.chunkers import STRATEGIES
from workbench.core.params import UNIT_PARAM, short_value
from workbench.core.stages import STAGES, get_stage
from workbench.evaluation import stats
from workbench.models.choose import variant_key
from workbench.variant import Variant

if TYPE_CHECKING:
    from workbench.results.result import SweepResult

RECALL, MRR, COST = "recall", "mrr", "context_tokens"
_MODIFIERS = ("contextual_header", "late")
_MODIFIER_NAMES = {"contextual_header": "contextual header", "late": "late chunking"}
RETRIEVER = "retriever"
# matplotlib's tab10 (tests/test_plots.py checks it is), then ten colours picked greedily in CIELAB, each
# the farthest from all before it (lightness 30-75, chroma < 70: visible on white, not garish): any two of
# the 20 differ by a CIE76 delta E of 27 or more
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#4b5a0f", "#d2b478", "#a5004b", "#ff8787", "#5aa578", "#965a00", "#1e87ff", "#870078",
           "#b4b4e1", "#0f5a4b")
# Over CROWDED variants (or lines) in one figure, no set of colours stays apart: the TOP best are drawn in
# colour (_LEAD's, best first) and labelled at their points, the rest in GREY beneath them
CROWDED, TOP, GREY = 12, 8, "#b3b3b3"
_LEAD = tuple(c for c in PALETTE if c != "#7f7f7f")  # the colours of the TOP: PALETTE less its grey


def variant_colors(keys: Sequence[str]) -> dict[str, Any]:
    """One distinct colour per variant, as "#rrggbb": PALETTE up to 20 (tab20 would pair each colour with a pale
    twin), then an evenly sampled continuous map."""
    n = len(keys)
    if n <= len(PALETTE):
        return dict(zip(keys, PALETTE[:n], strict=True))
    import matplotlib  # only for a grid of over 20 variants: a report read from the figure cache never needs it
    from matplotlib.colors import to_hex

    return {key: to_hex(c) for key, c in zip(keys, matplotlib.colormaps["turbo"](np.linspace(0.05, 0.95, n)),
                                             strict=True)}


def top_keys(result: SweepResult, keys: Sequence[str], n: int = TOP) -> list[str]:
    """The n best of `keys` by the verdict's metric (recall at the default k, `SweepResult.ranking`),
    best first; without recall, the first n in sweep order."""
    if RECALL not in set(result.summary["metric"]):
        return list(keys)[:n]
    wanted = set(keys)
    return [key for key in result.ranking()["key"] if key in wanted][:n]


def figure_colors(result: SweepResult, keys: Sequence[str]) -> dict[str, str]:
    """The colour of every variant of the result in a figure that draws `keys` (and in the report's
    legend, which lists the figures' variants): up to CROWDED, each its own (`variant_colors` of
    the whole result, so a redraw with fewer variants repaints nothing); over it, the TOP best of
    `keys` in colour and the rest GREY."""
    if len(keys) <= CROWDED:
        return variant_colors(result.keys)
    return dict.fromkeys(result.keys, GREY) | dict(zip(top_keys(result, keys), _LEAD, strict=False))


def group_colors(result: SweepResult, groups: Sequence[tuple[str, pd.DataFrame]]) -> dict[str, str]:
    """The colour of each line of a figure against a parameter (`_groups`): up to CROWDED lines,
    each its own; over it, the lines that hold the TOP best variants in colour (the best's first)
    and the rest GREY."""
    names = [name for name, _ in groups]
    if len(names) <= CROWDED:
        return variant_colors(names)
    line = {key: name for name, part in groups for key in part["key"]}
    lead = dict.fromkeys(line[key] for key in top_keys(result, list(line)))
    return dict.fromkeys(names, GREY) | dict(zip(lead, _LEAD, strict=False))


def chunkings(result: SweepResult, keys: Sequence[str]) -> list[tuple[str, list[str]]]:
    """`keys` grouped by their chunks, in sweep order, each group with its name: variants that
    differ in the retriever alone (one Variant.chunking_key, one model) share them, so a metric of
    the chunks alone (precision_omega) is one number of theirs. A variant the result's grid cannot
    make again (a strategy this version lacks) is a chunking of its own, named by its label."""
    made: dict[str, Variant] = {}
    for spec in result.provenance.grid:
        try:
            variant = Variant.from_spec(spec)
        except ValueError:
            continue
        made[variant.key] = variant.chunking
    groups: dict[str, list[str]] = {}
    for key in keys:
        base = variant_key(key)
        chunks = made[base].key if base in made else base
        groups.setdefault(chunks + key[len(base):], []).append(key)
    return [(made[variant_key(members[0])].label if len(members) > 1 else result.label_of(members[0]), members)
            for members in groups.values()]


def _pick_k(result: SweepResult, k: int | None) -> int:
    ks = result.ks
    if k is None:
        return result.default_k
    if k not in ks:
        raise ValueError(f"k must be one of the swept ks {ks}, got {k}")
    return int(k)


def _budget(s: pd.DataFrame) -> pd.Series:
    """The budget column (0 everywhere for a result swept before budgets existed)."""
    return s["budget"] if "budget" in s.columns else pd.Series(0, index=s.index)


def has_budgets(result: SweepResult) -> bool:
    """Whether the result holds metrics at equal context budgets (budget rows)."""
    return bool((_budget(result.summary) > 0).any())


def overview_panels(result: SweepResult, k: int | None = None) -> list[tuple[str, str]]:
    """The overview's panels in order, each its title and what to look for in it: `overview` titles
    its panels from here and the report's caption reads it, so a caption names what is drawn."""
    k = _pick_k(result, k)
    panels = [(f"{RECALL}@k", "higher is better, and a curve that rises early needs fewer chunks"),
              (f"{MRR}@{k} (best on top)", "how near the top the first evidence ranks"),
              (f"cost vs {RECALL}@{k} (numbers: legend)",
               "context tokens against recall, up and to the left is better; circled: the Pareto front")]
    if has_budgets(result):
        panels.append((f"{RECALL} at equal budgets",
                       "recall for the same number of tokens handed to the LLM, higher is better"))
    return panels


def models_of(result: SweepResult) -> list[str]:
    """The models a result holds, in sweep order (one for a result saved before models were a dimension)."""
    return list(dict.fromkeys(result.variants["model"])) if "model" in result.variants.columns else []


def best_by_group(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The best row of each group of a `SweepResult.by_group` table already cut to one metric and
    cut-off (highest mean; lowest for a cost, see stats.lower_is_better), in group order."""
    order = table["mean"] * (-1 if stats.lower_is_better(metric) else 1)
    return table.loc[order.groupby(table["group"], sort=False).idxmax()]


def _unit(result: SweepResult, param: str, keys: Sequence[str] | None = None) -> str | None:
    """The unit of a parameter (Param.unit; sizes counted in `unit` take the variant's `unit`
    column). Several units (e.g. overlap of fixed and of sentence) are joined with " or "."""
    rows = result.variants if keys is None else result.variants[result.variants["key"].isin(keys)]
    rows = rows[rows[param].notna()] if param in rows else rows.iloc[:0]
    units: dict[str, None] = {}
    given = rows["unit"] if "unit" in rows else pd.Series(None, index=rows.index)
    # each (strategy, unit) once, in sweep order: the variants of a grid share a few
    for strategy, counted in dict.fromkeys(zip(rows["strategy"], given, strict=True)):
        spec = STRATEGIES.get(strategy)
        unit = spec.params[param].unit if spec is not None and param in spec.params else None
        if unit == UNIT_PARAM:
            unit = counted if isinstance(counted, str) else "units"
        if unit:
            units[unit] = None
    return " or ".join(units) or None


def _axis_label(result: SweepResult, param: str, keys: Sequence[str]) -> str:
    """ "size (tokens)", "overlap (sentences)"; no unit the name already says (breakpoint_percentile)."""
    unit = _unit(result, param, keys)
    return f"{param} ({unit})" if unit and unit not in param else param


def _is_size(result: SweepResult, param: str) -> bool:
    """A chunk size (size, max_size, child_size...), measured in tokens or characters; an overlap
    shares the unit but is not a size, and buffer_size counts sentences."""
    unit = _unit(result, param)
    return "size" in param and unit is not None and set(unit.split(" or ")) <= {"tokens", "chars"}


def swept_parameters(result: SweepResult) -> list[str]:
    """The grid parameters that some variants differ in alone (everything else that varies equal,
    see `_groups`): those a "by parameter" figure compares. Two variants that differ in size and
    overlap at once compare neither. Sizes (in tokens or characters) first, then the others, each
    group in grid order."""
    swept = [p for p in result.grid_params if _takes_two(result, p) and parameter_lines(result, p)]
    return sorted(swept, key=lambda p: not _is_size(result, p))


def _takes_two(result: SweepResult, param: str) -> bool:
    """Whether `param` takes two values or more among the variants that have it: else no line of
    `parameter_lines` can (each holds some of those variants), and its groups need not be made (a
    pandas groupby per parameter, most of a warm report's figure list on a grid of many parameters).
    The retriever is placed at names made of its stages: always asked."""
    return param == RETRIEVER or _values(result.variants[result.variants[param].notna()], param).map(str).nunique() > 1


def parameter_lines(result: SweepResult, param: str) -> list[tuple[str, pd.DataFrame]]:
    """The lines a figure of every variant against `param` draws (`_groups` of those that have it,
    where it takes two values or more), each its name and its variants' rows."""
    return _compared(_groups(result, _with_param(result, result.keys, [param])[0], [param]), param)


def _compared(groups: list[tuple[str, pd.DataFrame]], param: str) -> list[tuple[str, pd.DataFrame]]:
    """The groups in which `param` takes two values or more: a line to draw, not a lone point."""
    return [(name, part) for name, part in groups if _values(part, param).map(str).nunique() > 1]


def _check_param(result: SweepResult, param: str) -> None:
    if param not in result.grid_params:
        raise ValueError(f"parameter {param!r} is not a parameter of this result's variants; "
                         f"swept: {swept_parameters(result)}, all: {result.grid_params}")


def _stage_params() -> set[str]:
    """The parameters of retrieval stages (rrf_k): part of the retriever, not of the chunking."""
    return {name for stage in STAGES.values() for name in stage.params}


def value_categories(values: pd.Series) -> list[Any]:
    """The values of a parameter that is not a number (tokenizer, unit, a switch), in sweep order,
    to be placed at 0, 1, 2...; [] for a numeric parameter, drawn on its own scale."""
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    return [] if numeric else list(dict.fromkeys(values))


def is_categorical(result: SweepResult, param: str) -> bool:
    """Whether a figure against `param` places its values as categories (`value_categories`), not on a scale."""
    rows = result.variants
    return bool(value_categories(_values(rows[rows[param].notna()], param)))


def _values(rows: pd.DataFrame, param: str) -> pd.Series:
    """What a figure places `param` at: its values; for the retriever, its stages with the stage
    parameters that are not their default ("hybrid(rrf_k=30)"), so the retriever is the stages alone."""
    if param != RETRIEVER:
        return rows[param]

    def name(row: pd.Series) -> str:
        given = [f"{p}={short_value(row[p])}" for stage in row[RETRIEVER].split("+")
                 for p, spec in get_stage(stage).params.items()
                 if p in row and _known(row[p]) and row[p] != spec.default]
        return row[RETRIEVER] + (f"({', '.join(given)})" if given else "")

    return rows.apply(name, axis=1)


def _others(result: SweepResult, rows: pd.DataFrame, exclude: Sequence[str]) -> list[str]:
    """The columns besides `exclude` (the retriever takes its stage parameters along) that vary
    among `rows`: strategy, parameters, modifiers. A parameter some strategies lack varies only
    if it takes two values where it exists: the strategy tells the others apart already."""
    left_out = {*exclude, *(_stage_params() if RETRIEVER in exclude else ())}
    cols = ["strategy", *(p for p in result.grid_params if p not in left_out), *_MODIFIERS,
            *(["model"] if "model" in rows.columns and "model" not in left_out else [])]
    return [c for c in cols if rows[c].dropna().map(str).nunique() > 1]


def _group_name(row: pd.Series, cols: Sequence[str], varying: set[str]) -> str:
    """ "fixed, overlap=0, late chunking": the strategy, then the values that set this group apart
    from others of its strategy (`varying`: the columns that vary among them), then the modifiers
    in words (a "+header" would read as a retriever). A value all variants of its strategy share
    (recursive's custom_separators) is left out."""
    params = [f"{c}={short_value(row[c])}" for c in cols
              if c not in ("strategy", *_MODIFIERS) and _known(row[c]) and c in varying]
    mods = [_MODIFIER_NAMES[c] for c in _MODIFIERS if c in cols and row[c]]
    return ", ".join([row["strategy"], *params, *mods, *([row["model"]] if "model" in cols else [])])


def _known(value: Any) -> bool:
    return not (isinstance(value, float) and math.isnan(value))


def _groups(result: SweepResult, rows: pd.DataFrame, exclude: Sequence[str]) -> list[tuple[str, pd.DataFrame]]:
    """The variants split by everything that varies besides `exclude`, in sweep order, named."""
    cols = _others(result, rows, exclude)
    # str() per cell: pandas' string dtype would keep NaN (a parameter another strategy lacks) as a float
    ids = rows[["strategy", *cols]].apply(lambda row: "|".join(map(str, row)), axis=1)
    varying = {strategy: {c for c in cols if own[c].map(str).nunique() > 1}  # once per strategy, not per group
               for strategy, own in rows.groupby("strategy", sort=False)}
    return [(_group_name(part.iloc[0], cols, varying[part["strategy"].iloc[0]]), part)
            for _, part in rows.groupby(ids, sort=False)]


def _with_param(result: SweepResult, keys: Sequence[str], params: Sequence[str]) -> tuple[pd.DataFrame, int]:
    """The variant rows (in sweep order) that have every one of `params`, and how many lack one."""
    rows = result.variants.set_index("key").loc[list(keys)].reset_index()
    has = rows[list(params)].notna().all(axis=1)
    return rows[has], int((~has).sum())



# --- a search's race (workbench.run.search) --------------------------------------------------------


def exit_kind(reason: str) -> str:
    """Why a candidate left a search's race, without its numbers: a reason up to its details in parentheses."""
    return reason.split(" (", 1)[0]


def race_points(race: pd.DataFrame) -> pd.DataFrame:
    """The race's rows in round order with what the race figure draws: `score` (the preview's corrected
    score where there is one, else the mean) and `last` (the candidate's last round: where it left or finished)."""
    rows = race.sort_values("round", kind="stable").reset_index(drop=True)
    last = rows.groupby("key")["round"].transform("max") == rows["round"]
    return rows.assign(score=rows["corrected"].fillna(rows["mean"]), last=last)


def race_rounds(race: pd.DataFrame) -> pd.DataFrame:
    """One row per round of a race, in order: round, stage, documents, entered (candidates scored in it),
    new (of those, scored first in it: the leader's neighbours a search adds), dropped (those that left
    in it), final (those that finished in it)."""
    rows = race_points(race)
    first = rows.groupby("key")["round"].transform("min") == rows["round"]
    return (rows.assign(new=first & (rows["round"] > rows["round"].min()))
            .groupby("round", sort=True)
            .agg(stage=("stage", "first"), documents=("documents", "first"), entered=("key", "size"),
                 new=("new", "sum"), dropped=("status", lambda s: int((s == "dropped").sum())),
                 final=("status", lambda s: int((s == "final").sum())))
            .reset_index())


def race_title(rounds: pd.DataFrame) -> str:
    """ "candidates per round: 300 -> 30 (+2 new) -> 5": how the race narrowed (`race_rounds`)."""
    counts = [f"{r.entered}" + (f" (+{r.new} new)" if r.new else "") for r in rounds.itertuples(index=False)]
    return "candidates per round: " + " \u2192 ".join(counts)


def race_finalists(race: pd.DataFrame) -> pd.DataFrame:
    """The rows of the candidates that finished, best first by their last round's mean (lowest for a cost)."""
    final = race[race["status"] == "final"]
    metric = str(final["metric"].iloc[0]) if len(final) else RECALL
    sign = 1 if stats.lower_is_better(metric) else -1
    return final.sort_values("mean", key=lambda m: sign * m, kind="stable").reset_index(drop=True)
