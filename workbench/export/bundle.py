"""The source of workbench functions and everything they use, as one self-contained module.

Why copy source: a plain-Python export must cut exactly what the workbench cuts, and the only code
that surely does is the workbench's own. Starting from a few functions, every module-level name
they read is followed to its definition (a function, a class, a constant: its top-level statements
copied as written, docstrings and comments included) or to the import that binds it (emitted as
an import); `stand_ins` swap a workbench object for another of the same name (workbench.export.
standalone). Names read only in annotations are not followed (`from __future__ import
annotations` keeps them strings), nor the `@strategy(...)` registration a chunker is decorated with.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

Key = tuple[str, str]  # (module, name) of a top-level definition
DROPPED_DECORATORS = ("strategy",)  # registration in the workbench, nothing of the chunking


@cache
def _text(module: str) -> str:
    return Path(inspect.getfile(importlib.import_module(module))).read_text(encoding="utf-8")


@cache
def _tree(module: str) -> ast.Module:
    return ast.parse(_text(module))


@cache
def _lines(module: str) -> list[str]:
    return _text(module).splitlines()


def _statements(module: str, name: str) -> list[ast.stmt]:
    """The top-level statements of `module` that define or fill `name` (def, class, assignment,
    `NAME[key] = ...`)."""
    out: list[ast.stmt] = []
    for node in _tree(module).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name:
            out.append(node)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bases = [t.value if isinstance(t, ast.Subscript) else t for t in targets]
            if any(isinstance(b, ast.Name) and b.id == name for b in bases):
                out.append(node)
    return out


def _imports(module: str) -> dict[str, ast.Import | ast.ImportFrom]:
    """Name -> the top-level import statement of `module` that binds it."""
    out: dict[str, ast.Import | ast.ImportFrom] = {}
    for node in _tree(module).body:
        if isinstance(node, ast.Import) or isinstance(node, ast.ImportFrom) and node.module != "__future__":
            for alias in node.names:
                out[alias.asname or alias.name.split(".")[0]] = node
    return out


def _kept_decorators(node: ast.stmt) -> list[ast.expr]:
    decorators = getattr(node, "decorator_list", [])
    return [d for d in decorators if _called(d) not in DROPPED_DECORATORS]


def _called(decorator: ast.expr) -> str:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return target.id if isinstance(target, ast.Name) else ""


def _names(node: ast.AST, eager: bool) -> Iterator[str]:
    """Global names `node` reads, annotations left out; with `eager`, only those read when the
    definition itself runs (decorators, defaults, class bodies, assigned values), not those read
    when its functions are called: what must be defined before it."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        args = node.args
        parts: list[ast.AST] = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
        if not isinstance(node, ast.Lambda):
            parts += _kept_decorators(node)
        if not eager:
            parts += node.body if isinstance(node.body, list) else [node.body]
        for part in parts:
            yield from _names(part, eager)
        return
    if isinstance(node, ast.ClassDef):
        for part in [*node.bases, *_kept_decorators(node), *node.body]:
            yield from _names(part, eager)
        return
    if isinstance(node, ast.AnnAssign):
        if node.value is not None:
            yield from _names(node.value, eager)
        return
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        yield node.id
    for child in ast.iter_child_nodes(node):
        yield from _names(child, eager)


def _source(module: str, node: ast.stmt) -> str:
    """The statement as written, with its kept decorators (a dropped one removed)."""
    kept = _kept_decorators(node)
    first = kept[0].lineno if kept else node.lineno
    return "\n".join(_lines(module)[first - 1 : node.end_lineno])


def _import_line(node: ast.Import | ast.ImportFrom, name: str) -> str:
    alias = next(a for a in node.names if (a.asname or a.name.split(".")[0]) == name)
    shown = alias.name + (f" as {alias.asname}" if alias.asname else "")
    return f"import {shown}" if isinstance(node, ast.Import) else f"from {node.module} import {shown}"


@dataclass
class Bundle:
    """The definitions to copy, by where they are defined, and the imports they need."""

    stand_ins: Mapping[Key, Key]
    imports: set[str] = field(default_factory=set)
    defined: dict[Key, list[ast.stmt]] = field(default_factory=dict)

    def add(self, key: Key) -> None:
        """`key`'s definition and, transitively, everything it reads."""
        key = self.stand_ins.get(key, key)
        if key in self.defined:
            return
        module, name = key
        statements = _statements(module, name)
        if not statements:
            raise ValueError(f"export: {module}.{name} is not defined at the top level of its module")
        self.defined[key] = statements
        for node in statements:
            for used in set(_names(node, eager=False)):
                target = self._target(module, used)
                if isinstance(target, str):
                    self.imports.add(target)
                elif target is not None:
                    self.add(target)

    def _target(self, module: str, name: str) -> Key | str | None:
        """What `name` read in `module` is: a definition to copy (stand-ins applied), the line that
        imports it, or None (a builtin, or a name local to the function that reads it)."""
        imported = _imports(module).get(name)
        if imported is None:
            key = (module, name) if _statements(module, name) else None
        elif isinstance(imported, ast.ImportFrom) and (imported.module or "").startswith("workbench"):
            key = _home(imported.module, next(a.name for a in imported.names if (a.asname or a.name) == name))
        else:
            return _import_line(imported, name)
        return None if key is None else self.stand_ins.get(key, key)

    def modules(self) -> list[str]:
        """The modules copied from, each after those whose definitions its own read as they run
        (within a module, its source order runs); else in the order they were reached."""
        found = list(dict.fromkeys(module for module, _ in self.defined))
        needs: dict[str, set[str]] = {m: set() for m in found}
        for (module, _), nodes in self.defined.items():
            for node in nodes:
                deps = (self._target(module, used) for used in _names(node, eager=True))
                needs[module] |= {d[0] for d in deps if isinstance(d, tuple) and d in self.defined and d[0] != module}
        ordered: list[str] = []
        while len(ordered) < len(found):
            ready = next((m for m in found if m not in ordered and needs[m] <= set(ordered)), None)
            if ready is None:
                raise ValueError(f"export: the modules {sorted(set(found) - set(ordered))} need each other's "
                                 "definitions as they run")
            ordered.append(ready)
        return ordered

    def source(self) -> str:
        """The imports, then each module's definitions in its source order, under a comment naming
        the file they were copied from."""
        names: dict[str, Key] = {}
        for key in self.defined:
            if key[1] in names:
                raise ValueError(f"export: {key[1]!r} is defined in both {names[key[1]][0]} and {key[0]}")
            names[key[1]] = key
        parts = [_imports_source(self.imports)]
        for module in self.modules():
            statements = {id(node): node for (m, _), nodes in self.defined.items() if m == module for node in nodes}
            nodes = sorted(statements.values(), key=lambda node: node.lineno)
            text = f"# copied from {module.replace('.', '/')}.py\n\n" + _source(module, nodes[0])
            for before, node in itertools.pairwise(nodes):
                defs = ast.FunctionDef | ast.ClassDef
                text += ("\n" if not isinstance(before, defs) and not isinstance(node, defs) else "\n\n\n")
                text += _source(module, node)
            parts.append(text)
        return "\n\n\n".join(parts) + "\n"


def _imports_source(lines: set[str]) -> str:
    """The import lines, standard library first, `from` imports of one module joined."""
    plain = {line for line in lines if line.startswith("import ")}
    froms: dict[str, list[str]] = {}
    for line in sorted(lines - plain):
        module, _, name = line[len("from "):].partition(" import ")
        froms.setdefault(module, []).append(name)
    merged = plain | {f"from {m} import {', '.join(names)}" for m, names in froms.items()}

    def key(line: str) -> tuple[bool, bool, str]:
        top = line.split()[1].split(".")[0]
        return top not in sys.stdlib_module_names, line.startswith("from "), line

    groups = [[line for line in sorted(merged, key=key) if (key(line)[0]) == third] for third in (False, True)]
    return "\n\n".join("\n".join(g) for g in groups if g)


def _home(module: str, name: str) -> Key:
    """Where `name`, imported from `module`, is defined (a package's __init__ re-exports)."""
    if _statements(module, name):
        return module, name
    imported = _imports(module).get(name)
    if isinstance(imported, ast.ImportFrom) and imported.module:
        alias = next(a for a in imported.names if (a.asname or a.name) == name)
        return _home(imported.module, alias.name)
    raise ValueError(f"export: cannot find where {module}.{name} is defined")


def key_of(obj: Any) -> Key:
    """The (module, name) of a function or class."""
    return obj.__module__, obj.__qualname__


def bundle(roots: Sequence[Any], stand_ins: Mapping[Any, Any], imports: Sequence[str] = ()) -> str:
    """Self-contained source defining `roots` (functions or classes) and what they use, with each
    key of `stand_ins` replaced by its value (same name, e.g. workbench.export.standalone's), and
    `imports` (lines) besides theirs."""
    b = Bundle({key_of(old): key_of(new) for old, new in stand_ins.items()}, set(imports))
    for root in roots:
        b.add(key_of(root))
    return b.source()

