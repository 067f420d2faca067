"""The in-place JSON editor on generated documents: any change an installer makes (add, remove,
replace at any depth) is written without a rewrite, in the file's own indent, and undone back
to the original bytes."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from signet.harnesses.jsontext import edit_text

keys = st.text(alphabet="abcdefgh-_", min_size=1, max_size=6)
scalars = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=20,
)
documents = st.dictionaries(keys, values, min_size=1, max_size=5)
indents = st.sampled_from([None, 2, 4, "\t"])


def containers(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    if isinstance(doc, dict):
        out.append(path)
        for k, v in doc.items():
            out += containers(v, (*path, k))
    elif isinstance(doc, list):
        out.append(path)
        for i, v in enumerate(doc):
            out += containers(v, (*path, i))
    return out


def at(doc: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        doc = doc[p]
    return doc


@settings(max_examples=150, deadline=None)
@given(documents, indents, st.data())
def test_changes_are_written_in_place_and_undone(doc: dict[str, Any], indent: int | str | None, data: Any) -> None:
    text = json.dumps(doc, indent=indent) + "\n"
    new = copy.deepcopy(doc)
    target = at(new, data.draw(st.sampled_from(containers(new))))
    value = data.draw(values)
    action = data.draw(st.sampled_from(["add", "remove", "replace"]))
    added_to_nonempty = action == "add" and bool(target)
    if isinstance(target, dict):
        if action == "add" or not target:
            target[data.draw(keys.filter(lambda k: k not in target))] = value
        elif action == "remove":
            del target[data.draw(st.sampled_from(sorted(target)))]
        else:
            target[data.draw(st.sampled_from(sorted(target)))] = value
    elif action == "add" or not target:
        target.append(value)
    elif action == "remove":
        del target[data.draw(st.integers(0, len(target) - 1))]
    else:
        target[data.draw(st.integers(0, len(target) - 1))] = value

    out = edit_text(text, new)
    assert json.loads(out) == new
    if indent is None:
        assert "\n" not in out.rstrip("\n")
    else:
        unit = "\t" if indent == "\t" else " " * int(indent)
        for line in out.splitlines():
            lead = line[: len(line) - len(line.lstrip())]
            assert lead == unit * (len(lead) // len(unit)), (unit, out)
    if added_to_nonempty:  # taking Signet's entry out again gives the user's bytes back
        assert edit_text(out, doc) == text
