"""A change to code that shapes a cached chunk, vector or index entry comes with its version (see code_versions.py)."""

from __future__ import annotations

import json

from code_versions import RECORD, components


def test_versioned_code_changes_only_with_its_version() -> None:
    recorded = json.loads(RECORD.read_text())
    now = components()
    stale = [name for name in now if name in recorded and now[name]["source"] != recorded[name]["source"]
             and now[name]["version"] == recorded[name]["version"]]
    assert not stale, (
        f"the code of {stale} changed but not its version: if its output (chunks, vectors, entries) can change "
        "for the same inputs, bump the version (it names new cache entries); then, or if it cannot, run "
        "`python tests/code_versions.py --update`")
    assert set(now) == set(recorded) and all(now[n]["version"] == recorded[n]["version"] for n in now), (
        "a component or a version is new: run `python tests/code_versions.py --update`")
