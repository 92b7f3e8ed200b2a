"""The training question: one definition shared by the QA loader and the trajectory-log reader."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class QAExample:
    """One question with its gold answers and the paragraphs its sandbox search may use."""

    id: str
    question: str
    gold_answers: list[str]
    paragraphs: list[dict[str, str]] = field(default_factory=list)
    memories: str = ""

    def row(self) -> dict[str, Any]:
        """The dataset columns every stage carries (passed on to the reward functions)."""
        return {
            "qid": self.id,
            "question": self.question,
            "gold_answers": list(self.gold_answers),
            "paragraphs": [{"title": p.get("title", ""), "text": p["text"]} for p in self.paragraphs],
            "memories": self.memories,
        }
