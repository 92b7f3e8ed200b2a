"""Versioned planner adapters with a reward-drop rollback.

Why versions: an online update can make the planner worse (a bad batch, a noisy judge). Every
update is saved to a new folder (`adapters/planner/v0001`, `v0002`, ...) that is never
overwritten, `registry.json` (replaced atomically) says which one is served, and the rewards of
the answers each version served decide whether the newest one stays: when its mean reward falls
more than `tolerance` below the version it replaced, and a permutation test says the drop is not
question difficulty (`RollbackPolicy`), the registry rolls back to that version.

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
    """When the newest adapter is rolled back: once it has served `window` answers, if its mean
    reward is more than `tolerance` below its parent's and a one-sided permutation test over the
    rewards each of the two served finds so low a mean unlikely by chance (p <= `alpha`; None: the
    drop alone decides).

    Why the test: a version and its parent answered different questions, and over a few answers
    question difficulty alone moves the mean. Two equal planners right on 37.5% of questions (the
    2Wiki defaults) would give the newer one a 4-answer mean lower by more than 0.05 36% of the
    time (binomial); the first Qwen test-time run rolled its first update back at 1 right answer of
    4 against its parent's 3 of 4, which a permutation test puts at p = 0.071
    (results/ttl-2wiki/README.md). With the test a rollback guards against an update that broke
    the planner, not against a hard run of questions."""

    window: int = 20
    tolerance: float = 0.05
    alpha: float | None = 0.05

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ValueError("rollback window must be at least 1 answer")
        if self.tolerance < 0:
            raise ValueError("rollback tolerance must be >= 0")
        if self.alpha is not None and not 0 < self.alpha <= 1:
            raise ValueError(f"rollback alpha must be in (0, 1] or None, not {self.alpha}")


@dataclass(frozen=True)
class Comparison:
    """A version's served rewards against its parent's, as the rollback rule reads them."""

    version: str
    parent: str
    mean: float
    answers: int
    parent_mean: float
    parent_answers: int
    p: float | None  # one-sided permutation p of so low a mean (None: not tested, no drop or no alpha)
    drop: bool  # the rule's verdict: roll back

    def reason(self, policy: RollbackPolicy) -> str:
        """Why the rule rolled the version back (a registry entry's `rollback_reason`)."""
        test = "" if self.p is None else f", one-sided permutation p = {self.p:.3f} (alpha {policy.alpha})"
        return (
            f"mean reward {self.mean:.3f} over {self.answers} answers < {self.parent_mean:.3f} over "
            f"{self.parent_answers} of {self.parent} - {policy.tolerance}{test}"
        )


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def lower_p(mine: list[float], theirs: list[float], resamples: int = 9999) -> float:
    """One-sided permutation p-value of `mine` having so low a mean beside `theirs` (exact when
    the splits number at most `resamples`, else a fixed-seed Monte Carlo: the rule is repeatable)."""
    import numpy as np
    from scipy.stats import permutation_test

    def diff(x: Any, y: Any, axis: int) -> Any:
        return np.mean(x, axis=axis) - np.mean(y, axis=axis)

    result = permutation_test(
        (np.asarray(mine, dtype=float), np.asarray(theirs, dtype=float)),
        diff,
        permutation_type="independent",
        alternative="less",
        n_resamples=resamples,
        vectorized=True,
        rng=0,
    )
    return float(result.pvalue)


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

    def compare(self, version: str) -> Comparison | None:
        """The rollback rule's reading of `version` against its parent: None for the base planner
        or until each has served `window` answers."""
        with self._lock:
            versions = self._state["versions"]
            parent = versions.get(version, {}).get("parent")
            if parent is None:
                return None
            mine, theirs = versions[version].get("rewards", []), versions[parent].get("rewards", [])
        if min(len(mine), len(theirs)) < self.policy.window:
            return None
        mean, parent_mean = _mean(mine), _mean(theirs)
        lower, alpha = mean < parent_mean - self.policy.tolerance, self.policy.alpha
        p = lower_p(mine, theirs) if lower and alpha is not None else None
        drop = lower and (alpha is None or (p is not None and p <= alpha))
        return Comparison(version, parent, mean, len(mine), parent_mean, len(theirs), p, drop)

    def check_rollback(self) -> str | None:
        """Roll back the current version when the rule says it dropped (`compare`); returns the
        version now served after a rollback, else None."""
        with self._lock:
            current = self._state["current"]
            seen = self.compare(current)
            if seen is None or not seen.drop:
                return None
            entry = self._state["versions"][current]
            entry.update(status="rolled_back", rolled_back_at=time.time(), rollback_reason=seen.reason(self.policy))
            target = self._state["current"] = self._servable(seen.parent)
            self._save()
            log.warning("planner adapter %s rolled back to %s: %s", current, target, seen.reason(self.policy))
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
