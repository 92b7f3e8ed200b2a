"""What one memory is, and what retrieval hands back.

A memory is a compressed, judged workflow for one past question. Counts are stored raw
(`usage_count`, `success_count`) and the win rate is derived with a prior at read time, so the
prior can change without rewriting the store (MIA stores a rounded win rate and starts every
record at 1.0; see docs/memory.md).
"""

from __future__ import annotations

import logging
import time
from typing import Any, get_args

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from mia.memory.text import clean_value, drop_controls, needs_cleaning
from mia.memory.trajectory import Outcome, new_id

SCHEMA_VERSION = 1

# The whole record is one JSON string under this Chroma metadata key: Chroma stores metadata as
# one SQLite row per key, and fetching 17 keys for 100 candidates cost more than the ANN search.
# No key is needed for filtering: namespaces and outcomes are separate collections.
META_KEY = "mia"
MAX_TIME = 32503680000.0  # year 3000: a bound so that every stored time can be displayed
_ID_FORBIDDEN = frozenset(" \t\r\n\x00")
_NAMES = ("id", "namespace")  # validated as given, never cleaned


class MemoryRecord(BaseModel):
    """One stored workflow memory (MIA's record, with provenance, sizes and timestamps)."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    id: str = Field(default_factory=new_id, min_length=1, max_length=200)
    namespace: str = "default"
    question: str
    caption: str = ""
    caption_vector: str = ""  # the caption's unit embedding, base64 float16 (memory/caption.py)
    workflow: str
    plan: str = ""
    outcome: Outcome = "unknown"
    judge_feedback: str = ""
    usage_count: int = Field(0, ge=0)
    success_count: int = Field(0, ge=0)
    created_at: float = Field(default_factory=time.time, ge=0.0, le=MAX_TIME)
    last_used_at: float = Field(0.0, ge=0.0, le=MAX_TIME)
    source: str = ""
    dataset: str = ""
    trajectory_id: str = ""
    trace_tokens: int = 0
    workflow_tokens: int = 0
    compression: str = "model"  # model | repaired | extractive | imported | manual
    manager: str = ""  # provenance: the model that wrote the workflow ("" for extractive ones)
    flags: list[str] = Field(default_factory=list)  # why screening distrusts it; flagged = never retrieved

    @model_validator(mode="before")
    @classmethod
    def _no_controls(cls, data: Any) -> Any:
        """NUL and other control characters are dropped from every text: Chroma keeps them, and a
        NUL reaching a C backend in a prompt ends the string there. Names are never rewritten (an
        id or a namespace with one is refused, not turned into another record's or tenant's)."""
        if not isinstance(data, dict) or not needs_cleaning(data):
            return data
        names = {key: data[key] for key in _NAMES if key in data}
        return {**clean_value(data, drop_controls), **names}

    @field_validator("id")
    @classmethod
    def _plain_id(cls, value: str) -> str:
        if any(ch in _ID_FORBIDDEN or not ch.isprintable() for ch in value):
            raise ValueError("an id has no spaces or control characters")
        return value

    @model_validator(mode="after")
    def _encodable(self) -> MemoryRecord:
        """Every text must be valid Unicode (a lone surrogate such as "\\ud800" cannot be stored
        and used to abort a whole import at write time); success never exceeds usage."""
        for name, value in self:
            if isinstance(value, str):
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError as err:
                    raise ValueError(f"{name} is not valid Unicode text ({err.reason} at {err.start})") from None
        if self.success_count > self.usage_count:
            raise ValueError(f"success_count {self.success_count} exceeds usage_count {self.usage_count}")
        return self

    def model_post_init(self, __context: Any) -> None:
        if not self.last_used_at:
            self.last_used_at = self.created_at

    def win_rate(self, prior_success: float = 1.0, prior_failure: float = 1.0) -> float:
        """Posterior mean of the success rate under a Beta(prior_success, prior_failure) prior."""
        return (self.success_count + prior_success) / (self.usage_count + prior_success + prior_failure)

    @property
    def embed_text(self) -> str:
        """The text whose embedding indexes the record: the question (the caption has its own vector)."""
        return embed_text(self.question)

    def to_json(self) -> str:
        """The record as the one JSON string an index stores (the id is the index's key)."""
        return self.model_dump_json(exclude={"id"})

    @classmethod
    def from_json(cls, record_id: str, raw: str) -> MemoryRecord:
        """Rebuild from an index entry (raises pydantic.ValidationError or ValueError when damaged)."""
        if not isinstance(raw, str) or not raw:
            raise ValueError(f"memory {record_id}: no record stored")
        record = cls.model_validate_json(raw)
        record.id = record_id
        return record


def embed_text(question: str) -> str:
    """The text of a record's (and a query's) main vector: the question alone. A caption has a
    vector of its own, mixed in at retrieval (memory/caption.py), as MIA does."""
    return question.strip()


def shown_memory(id: str, outcome: str, question: str, score: float, similarity: float) -> dict[str, Any]:
    """The short, JSON-able view of one memory shown to the agent (the graph's output, the CLI,
    an eval's log), the same for a scored workflow and a past trajectory."""
    return {
        "id": id,
        "outcome": outcome,
        "question": question,
        "score": round(float(score), 4),
        "similarity": round(float(similarity), 4),
    }


class ScoredMemory(BaseModel):
    """A retrieved memory with the parts of its score (for display and for checking)."""

    record: MemoryRecord
    score: float
    similarity: float
    normalised_similarity: float
    win_rate: float

    def shown(self) -> dict[str, Any]:
        return shown_memory(self.record.id, self.record.outcome, self.record.question, self.score, self.similarity)


class Retrieved(BaseModel):
    """Positives (judged correct) and negatives (judged incorrect), each ranked by score."""

    positives: list[ScoredMemory] = Field(default_factory=list)
    negatives: list[ScoredMemory] = Field(default_factory=list)
    candidate_ids: list[str] = Field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        """Every memory shown to the planner: pass these to `update_stats` after the episode."""
        return [m.record.id for m in self.positives + self.negatives]

    def __len__(self) -> int:
        return len(self.positives) + len(self.negatives)

    def to_prompt_text(self) -> str:
        """Markdown block for the planner, in the layout of MIA's `get_memories_context`."""
        lines = ["## Retrieved Relevant Memories"]
        if not self.positives and not self.negatives:
            return lines[0] + "\nNone found.\n"
        for title, items in (
            ("Positive Examples (Successful Strategies", self.positives),
            ("Negative Examples (Failure Lessons", self.negatives),
        ):
            lines.append(f"\n### {title} - {len(items)})")
            for number, item in enumerate(items, 1):
                rec = item.record
                lines.append(f"\n#### Example {number}")
                lines.append(f"Judgement: {rec.outcome}")
                lines.append(f"Question: {rec.question}")
                if rec.caption:
                    lines.append(f"Image Caption: {rec.caption}")
                if rec.judge_feedback and rec.outcome == "incorrect":
                    lines.append(f"Judge feedback: {rec.judge_feedback}")
                lines.append(f"Workflow Summary:\n{rec.workflow}")
        return "\n".join(lines) + "\n"


# ---- reading stored record JSON (the index keeps each record as one JSON string)
log = logging.getLogger(__name__)
_OUTCOMES = frozenset(get_args(Outcome))


def score_fields(raw: str) -> tuple[str, int, int, bool] | None:
    """(outcome, usage, success, flagged) from a record's JSON, without building the whole
    record; None when it is damaged."""
    try:
        data = orjson.loads(raw)  # ~100 candidates are parsed per retrieval
        outcome, usage, success = data["outcome"], data.get("usage_count", 0), data.get("success_count", 0)
        flagged = bool(data.get("flags"))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    if outcome not in _OUTCOMES or not isinstance(usage, int) or not isinstance(success, int):
        return None
    return outcome, usage, success, flagged


def caption_vector_of(raw: str) -> str:
    """A record's encoded caption vector from its JSON ("" when it has none)."""
    try:
        value = orjson.loads(raw).get("caption_vector", "")
    except (ValueError, TypeError, AttributeError):
        return ""
    return value if isinstance(value, str) else ""


def parse_record(record_id: str, raw: str) -> MemoryRecord | None:
    """The record, or None (with a warning) when its JSON is damaged: one bad record never
    breaks a retrieval."""
    try:
        return MemoryRecord.from_json(record_id, raw)
    except (ValidationError, ValueError) as err:
        log.warning("memory %s skipped: damaged record (%s)", record_id, str(err).splitlines()[0])
        return None
