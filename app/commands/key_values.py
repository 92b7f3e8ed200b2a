"""`KEY=VALUE` options (`mia train --set`, `mia eval --online`): one parser, values read as YAML so
that `8` is a number, `true` a flag and `bfloat16` a string."""

from __future__ import annotations

from typing import Any

import typer


def key_values(items: list[str] | None, flag: str) -> dict[str, Any]:
    """{"key": value} from ["key=value", ...]; an item without `=` is refused naming the flag."""
    import yaml

    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"{flag} expects KEY=VALUE, got {item!r}")
        out[key.strip()] = yaml.safe_load(value)
    return out
