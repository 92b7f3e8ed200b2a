"""Versioned planner adapters with a rolling-reward rollback.

Why versions: an online update can make the planner worse (a bad batch, a noisy judge). Every
update is saved to a new folder (`adapters/planner/v0001`, `v0002`, ...) that is never
overwritten, `registry.json` (replaced atomically) says which one is served, and the rewards of
the answers each version served decide whether the newest one stays: when its rolling mean
reward falls more than `tolerance` below the version it replaced (over `window` answers each),
the registry rolls back to that version.

A version whose folder has lost its adapter files (a machine recycled with the data directory only
partly kept, a folder deleted by hand) cannot be served or trained on: on load the registry marks
it `missing` and serves its newest intact ancestor, says so in `recovered` and the log, and never
gives its name to a new version.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mia.training.online.episodes import atomic_write_json
from mia.training.online.layout import BASE, REGISTRY_FILE

log = logging.getLogger(__name__)

_VERSION = re.compile(r"^v(\d{4,})$")
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")  # what a servable version folder holds
MISSING = "missing"  # the status of a version whose adapter files are gone


@dataclass(frozen=True)
class RollbackPolicy:
    """When the newest adapter is rolled back: after `window` served answers, if its mean
    reward is below the previous version's (last `window` answers) minus `tolerance`."""

    window: int = 20
    tolerance: float = 0.05

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ValueError("rollback window must be at least 1 answer")
        if self.tolerance < 0:
            raise ValueError("rollback tolerance must be >= 0")


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


class AdapterRegistry:
    """The served planner adapter's history: versions, which one is current, their rewards."""

    def __init__(self, root: str | Path, policy: RollbackPolicy | None = None) -> None:
        self.root = Path(root).expanduser()
        self.root.mkdir(parents=True, exist_ok=True)
        self.path = self.root / REGISTRY_FILE
        self.policy = policy or RollbackPolicy()
        self._lock = threading.RLock()
        self._state = self._load()
        self.recovered: list[str] = self._recover_missing()

    # ---------------------------------------------------------------- persistence
    def _load(self) -> dict[str, Any]:
        if not self.path.is_file():
            return {"current": BASE, "versions": {BASE: {"parent": None, "status": "active", "rewards": []}}}
        try:
            state = json.loads(self.path.read_text(encoding="utf-8"))
            state["versions"].setdefault(BASE, {"parent": None, "status": "active", "rewards": []})
            return state
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{self.path} is damaged ({exc}); move it aside to start a new history") from None

    def _save(self) -> None:
        atomic_write_json(self.path, self._state)

    def intact(self, version: str) -> bool:
        """Whether a version can be served: `base`, or a folder holding its adapter files."""
        folder = self.path_of(version)
        return folder is None or all((folder / name).is_file() for name in ADAPTER_FILES)

    def _recover_missing(self) -> list[str]:
        """Mark versions whose files are gone as `missing` and, when the served one is among them,
        serve its newest intact ancestor instead. Returns the versions newly found missing."""
        versions = self._state["versions"]
        lost = [v for v in versions if v != BASE and versions[v].get("status") != MISSING and not self.intact(v)]
        if not lost:
            return []
        now = time.time()
        for version in lost:
            versions[version].update(
                status=MISSING, missing_since=now, missing_reason=f"adapter files missing from {self.path_of(version)}"
            )
        current = self._servable(self._state["current"])
        if current != self._state["current"]:
            log.warning(
                "planner adapter %s has lost its files: serving %s, its newest intact ancestor",
                self._state["current"],
                current,
            )
            self._state["current"] = current
        log.warning("planner adapter versions without their files (marked missing): %s", ", ".join(lost))
        self._save()
        return lost

    def _servable(self, version: str) -> str:
        """The version itself, or its newest ancestor not marked missing (at worst `base`)."""
        versions = self._state["versions"]
        while version != BASE and versions.get(version, {}).get("status") == MISSING:
            version = versions[version].get("parent") or BASE
        return version

    # ---------------------------------------------------------------- versions
    @property
    def current(self) -> str:
        """The served version name (`base` before the first update)."""
        with self._lock:
            return str(self._state["current"])

    def versions(self) -> list[str]:
        """Every published version, oldest first (without `base`)."""
        with self._lock:
            return sorted((v for v in self._state["versions"] if v != BASE), key=lambda v: int(v[1:]))

    def info(self, version: str) -> dict[str, Any]:
        with self._lock:
            return dict(self._state["versions"][version])

    def path_of(self, version: str | None) -> Path | None:
        """The adapter folder of a version (None for `base`)."""
        if version in (None, BASE):
            return None
        return self.root / str(version)

    def current_path(self) -> Path | None:
        return self.path_of(self.current)

    def next_dir(self) -> Path:
        """A fresh folder for the next version (v0001, v0002, ...), created empty. A name the
        history already holds is never reused, even when its folder is gone."""
        with self._lock:
            names = [p.name for p in self.root.iterdir()] + list(self._state["versions"])
            taken = [int(m.group(1)) for name in names if (m := _VERSION.match(name))]
            folder = self.root / f"v{max(taken, default=0) + 1:04d}"
            folder.mkdir(parents=True)
            return folder

    def publish(self, folder: Path, meta: dict[str, Any] | None = None) -> str:
        """Make a saved adapter folder the served version; its parent is the one it replaces."""
        folder = Path(folder)
        if folder.parent.resolve() != self.root.resolve() or not _VERSION.match(folder.name):
            raise ValueError(f"{folder} is not a version folder of {self.root} (use next_dir())")
        with self._lock:
            name = folder.name
            self._state["versions"][name] = {
                "parent": self._state["current"],
                "status": "active",
                "rewards": [],
                "created_at": time.time(),
                **(meta or {}),
            }
            self._state["current"] = name
            self._save()
        return name

    # ---------------------------------------------------------------- rewards and rollback
    def record_reward(self, version: str | None, reward: float) -> None:
        """Credit one served answer's reward to the version that served it."""
        name = version or BASE
        with self._lock:
            entry = self._state["versions"].setdefault(name, {"parent": None, "status": "unknown", "rewards": []})
            entry["rewards"] = (entry.get("rewards", []) + [float(reward)])[-max(200, 4 * self.policy.window) :]
            self._save()

    def rolling(self, version: str) -> float | None:
        """Mean reward of a version's last `window` answers (None until it served that many)."""
        with self._lock:
            rewards = self._state["versions"].get(version, {}).get("rewards", [])
            return _mean(rewards[-self.policy.window :]) if len(rewards) >= self.policy.window else None

    def check_rollback(self) -> str | None:
        """Roll back the current version when its rolling reward dropped; returns the version
        now served after a rollback, else None."""
        with self._lock:
            current = self._state["current"]
            parent = self._state["versions"][current].get("parent")
            if current == BASE or parent is None:
                return None
            mine, before = self.rolling(current), self.rolling(parent)
            if mine is None or before is None or mine >= before - self.policy.tolerance:
                return None
            self._state["versions"][current]["status"] = "rolled_back"
            self._state["versions"][current]["rolled_back_at"] = time.time()
            self._state["versions"][current]["rollback_reason"] = (
                f"rolling reward {mine:.3f} < {before:.3f} - {self.policy.tolerance} of {parent}"
            )
            target = self._state["current"] = self._servable(parent)
            self._save()
            log.warning(
                "planner adapter %s rolled back to %s (rolling reward %.3f vs %.3f of %s)",
                current,
                target,
                mine,
                before,
                parent,
            )
            return target

    def rollback(self) -> str:
        """Roll back to the current version's parent now (manual); returns the version served."""
        with self._lock:
            current = self._state["current"]
            parent = self._state["versions"][current].get("parent")
            if parent is None:
                raise ValueError("nothing to roll back to: the base planner is served")
            self._state["versions"][current]["status"] = "rolled_back"
            target = self._state["current"] = self._servable(parent)
            self._save()
            return target
