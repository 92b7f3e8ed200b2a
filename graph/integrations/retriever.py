"""`MiaWorkflowRetriever`: MIA's memory as a LangChain retriever (a Document per workflow)."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from mia.graph.integrations.store import unwrap


class MiaWorkflowRetriever(BaseRetriever):
    """Past workflows for a query: the k_pos best successful ones, then the k_neg best failed ones.
    Each Document's text is the workflow; its metadata says the question, outcome and score."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Any
    namespace: str = "default"
    k_pos: int = 2
    k_neg: int = 2

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        got = unwrap(self.store).retrieve(query, namespace=self.namespace, k_pos=self.k_pos, k_neg=self.k_neg)
        return [
            Document(
                page_content=m.record.workflow,
                id=m.record.id,
                metadata={
                    "id": m.record.id,
                    "question": m.record.question,
                    "outcome": m.record.outcome,
                    "namespace": m.record.namespace,
                    "score": m.score,
                    "similarity": m.similarity,
                    "win_rate": m.win_rate,
                },
            )
            for m in [*got.positives, *got.negatives]
        ]
