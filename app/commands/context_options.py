"""The command lines' Context options, one mapping for `mia ask`, `mia chat` and `mia eval`.

Options a user gave (None: not given) become Context fields, with `--paper`'s values where no
option was given, and each free-text choice is checked against its field's Literal before anything
runs, worded by the option the user typed (Context's own check names the field, and comes later).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mia.graph.context import field_choices, paper_values


class OptionError(ValueError):
    """An option outside its field's choices (one line, naming the option)."""


def context_overrides(
    given: Mapping[str, Any], *, paper: bool = False, flags: Mapping[str, str] = {}
) -> dict[str, Any]:
    """The Context fields the options set. `flags` names an option that is not `--<field>`
    (`mia eval --memory` sets `memory_mode`)."""
    for name, value in given.items():
        allowed = field_choices(name)
        if value is not None and allowed and value not in allowed:
            flag = flags.get(name) or "--" + name.replace("_", "-")
            listed = ", ".join(allowed[:-1]) + f" or {allowed[-1]}" if len(allowed) > 1 else allowed[0]
            raise OptionError(f"{flag} must be {listed}, not {value!r}")
    overrides = {name: value for name, value in given.items() if value is not None}
    return {**overrides, **(paper_values(dict(given)) if paper else {})}


__all__ = ["OptionError", "context_overrides"]
