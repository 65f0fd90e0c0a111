"""The code behind every stored result that is named by a version rather than by a hash of its code.

A cached chunk table, vector or FAISS entry is named by the variant key (which holds the strategy's
and the stages' versions), the corpus and the model fingerprint (which holds the encode version),
and the index build version. Their code is not hashed into those names, on purpose: a comment
edited in a chunker must not rebuild every user's cache. So this table records, per versioned
component, its version and a hash of the source of every workbench module it depends on
(transitively), and tests/test_code_versions.py fails when a source changes while its version
stays. Scores need no entry here: their cache key hashes the retrieval and scoring code itself.

    python tests/code_versions.py --update   # after bumping a version, or deciding no output changed
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

RECORD = Path(__file__).with_name("code_versions.json")


def closure(*roots: str) -> list[str]:
    """The workbench modules `roots` use, transitively (through what their globals name)."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in sys.modules:
            continue
        seen.add(name)
        for value in vars(sys.modules[name]).values():
            dep = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
            if isinstance(dep, str) and dep.startswith("workbench"):
                todo.append(dep)
    return sorted(seen)


def source_hash(modules: list[str]) -> str:
    h = hashlib.sha256()
    for name in modules:
        h.update(name.encode() + b"\0" + Path(sys.modules[name].__file__).read_bytes())
    return h.hexdigest()[:16]


def components() -> dict[str, dict[str, Any]]:
    """Every versioned component: its version now and the hash of its code now."""
    import workbench  # noqa: F401  (registers every strategy and stage)
    from workbench import variant
    from workbench.chunkers import STRATEGIES
    from workbench.core.stages import STAGES
    from workbench.models import context, embed, llm
    from workbench.results import audit, label_free
    from workbench.retrieval import index

    out = {f"strategy {name}": (s.version, closure(s.fn.__module__)) for name, s in STRATEGIES.items()}
    out |= {f"stage {name}": (s.version, [s.fn.__module__]) for name, s in STAGES.items()}
    out["index build (BUILD_VERSION)"] = (index.BUILD_VERSION, ["workbench.retrieval.index", "workbench.variant",
                                                                 "workbench.models.late"])
    out["contextual header (HEADER_VERSION)"] = (variant.HEADER_VERSION, ["workbench.variant"])
    out["encoding (ENCODE_VERSION)"] = (embed.ENCODE_VERSION, closure("workbench.models.embed"))
    out["generation (GENERATE_VERSION)"] = (llm.GENERATE_VERSION, closure("workbench.models.llm"))
    # the prompts +context sends (windows, template) name its index entries by the prompt's version
    out["chunk context (CONTEXT.version)"] = (context.CONTEXT.version, ["workbench.models.context"])
    out["chunk audit (AUDIT_VERSION)"] = (audit.AUDIT_VERSION, closure("workbench.results.audit"))
    out["label-free measures (LABEL_FREE_VERSION)"] = (label_free.LABEL_FREE_VERSION,
                                                       closure("workbench.results.label_free"))
    return {name: {"version": v, "source": source_hash(mods)} for name, (v, mods) in sorted(out.items())}


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        raise SystemExit(__doc__)
    RECORD.write_text(json.dumps(components(), indent=1) + "\n")
    print(f"wrote {RECORD}")
