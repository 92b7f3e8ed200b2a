"""MIA's workflow memory on a store: memorise an episode (log, compress, dedup), retrieve and
rescore workflows for a question, credit the memories an episode used, and rebuild the memories
from the trajectory log. MemoryStore binds these functions as its methods (`store.memorise(...)`),
so each takes the store, typed by what it needs (`WorkflowStore`)."""

from __future__ import annotations

import builtins
import logging
import time
from collections.abc import Iterable
from typing import Protocol

import numpy as np

from mia.memory.caption import DEFAULT_CAPTION_WEIGHT, add_caption_vectors
from mia.memory.compression import CompressionResult, Compressor, extractive_workflow
from mia.memory.embeddings import count_tokens
from mia.memory.index import BUCKET_OF
from mia.memory.namespaces import check_namespace, resolve_namespace
from mia.memory.records import MemoryRecord, Retrieved, embed_text, parse_record
from mia.memory.retrieval import Retriever
from mia.memory.scoring import cosine
from mia.memory.screening import screened
from mia.memory.store_trajectories import TrajectoryStore, log_trajectory
from mia.memory.store_upkeep import UpkeepStore, maybe_prune
from mia.memory.trajectory import Trajectory
from mia.memory.upkeep import is_better, merge_into, same_question

log = logging.getLogger(__name__)


class WorkflowStore(UpkeepStore, TrajectoryStore, Protocol):
    """What workflow memory needs from a store (MemoryStore passes it; mypy checks where it is bound)."""

    retriever: Retriever


def memorise(
    store: WorkflowStore, trajectory: Trajectory, compressor: Compressor | None = None, *, log: bool = True
) -> MemoryRecord:
    """Log the raw trajectory (first: it is never lost), compress it (model or extractive),
    then add it, or resolve it against a near-duplicate. Returns the record now stored."""
    check_namespace(trajectory.namespace)
    vector = store.embedder.embed_query(embed_text(trajectory.question))
    if log:
        log_trajectory(store, trajectory, vector)
    result = (
        compressor.compress(trajectory)
        if compressor is not None
        else CompressionResult(extractive_workflow(trajectory), "extractive")
    )
    record = record_from_trajectory(trajectory, result)
    add_caption_vectors(store.embedder, [record])
    return add_deduplicated(store, record, vector)


def add_deduplicated(store: WorkflowStore, record: MemoryRecord, vector: np.ndarray) -> MemoryRecord:
    """Add, unless a duplicate with the same outcome exists in the namespace: the same
    question up to case and punctuation (`upkeep.question_key`) at cosine >=
    policy.dedup_threshold. Then the shorter workflow survives under the old id and the
    counts are summed (see upkeep). A question keeps at most one memory per outcome: a
    success and a failure of the same question are both kept, as the positive and the
    negative lesson (the paper's consolidation keeps that pair)."""
    store.check_writable()
    check_namespace(record.namespace)
    record = screened(store.screen, record)
    with store.writing():
        match = None if record.flags else duplicate_of(store, record, vector)
        if match is None:
            store.put(record, vector)
            maybe_prune(store, record.namespace)
            return record
        old, sim = match
        if not is_better(record, old):
            log.info("memory %s kept: duplicate (cos %.3f) of an equal or better one", old.id, sim)
            return old
        merged = merge_into(record, old, keep_id_of=old)
        store.put(merged, vector)
        log.info("memory %s replaced by a better duplicate (cos %.3f)", old.id, sim)
        return merged


def duplicate_of(
    store: WorkflowStore, record: MemoryRecord, vector: np.ndarray, n: int = 8
) -> tuple[MemoryRecord, float] | None:
    """The stored memory of the same outcome that `record` duplicates, with its cosine: among
    the n nearest, the closest with the same question key and cosine >= the threshold. (The
    n nearest, not the nearest: a near-identical other question can sit closer.)"""
    for entry in store.index.query(record.namespace, BUCKET_OF[record.outcome], vector, n, with_vectors=True):
        old = parse_record(entry.id, entry.record)
        if old is None or old.flags or not same_question(record, old) or entry.vector is None:
            continue
        sim = float(cosine(vector, entry.vector[None, :])[0])
        if sim >= store.policy.dedup_threshold:
            return old, sim
    return None


def update_stats(store: WorkflowStore, ids: Iterable[str], success: bool, namespace: str | None = None) -> int:
    """After an episode: usage + 1 for every memory it used, success + 1 if it was judged
    correct; also refreshes last_used_at. Atomic across processes (write lock). Unlike MIA
    this does not depend on whether the new episode was stored or deduplicated."""
    store.check_writable()
    wanted = list(dict.fromkeys(i for i in ids if i))
    if not wanted:
        return 0
    now = time.time()
    updated = 0
    with store.writing():
        for ns, suffix in store.memory_buckets(namespace):
            got = store.index.get(ns, suffix, wanted)
            if not got:
                continue
            found, raws = [], []
            for entry in got:
                rec = parse_record(entry.id, entry.record)
                if rec is None:
                    continue
                rec.usage_count += 1
                rec.success_count += int(bool(success))
                rec.last_used_at = now
                found.append(entry.id)
                raws.append(rec.to_json())
            if found:
                store.index.update(ns, suffix, found, raws)
            updated += len(found)
            seen = {e.id for e in got}
            wanted = [i for i in wanted if i not in seen]
            if not wanted:
                break
    return updated


def retrieve(
    store: WorkflowStore,
    question: str,
    namespace: str | None = None,
    k_pos: int = 2,
    k_neg: int = 2,
    *,
    caption: str = "",
    caption_weight: float = DEFAULT_CAPTION_WEIGHT,
    query_embedding: np.ndarray | None = None,
    n_candidates: int | None = None,
    min_similarity: float | None = None,
) -> Retrieved:
    """The k_pos best positive and k_neg best negative memories for a question (see `Retriever`)."""
    return store.retriever.retrieve(
        question,
        resolve_namespace(namespace),
        k_pos,
        k_neg,
        caption=caption,
        caption_weight=caption_weight,
        query_embedding=query_embedding,
        n_candidates=n_candidates,
        min_similarity=min_similarity,
    )


def rescore(
    store: WorkflowStore,
    query: np.ndarray,
    records: builtins.list[MemoryRecord],
    vectors: np.ndarray,
    k_pos: int,
    k_neg: int,
    *,
    caption: str = "",
    caption_weight: float = DEFAULT_CAPTION_WEIGHT,
    min_similarity: float | None = None,
) -> Retrieved:
    """Score a pool of full records from their vectors (float64 cosine), e.g. a full scan."""
    return store.retriever.rescore(
        query,
        records,
        vectors,
        k_pos,
        k_neg,
        caption=caption,
        caption_weight=caption_weight,
        min_similarity=min_similarity,
    )


def rebuild_from_log(
    store: WorkflowStore, compressor: Compressor | None = None, namespace: str | None = None, progress: bool = True
) -> int:
    """Re-memorise every logged trajectory in the order it was logged (after a reset, with a better
    manager model, or from a study that keeps only its log), crediting the memories each one used
    as the graph did: a record's id is its trajectory's, so the logged `used_memory_ids` name the
    rebuilt records. (Memories whose use test-time learning credited by majority, and logs written
    when record ids were random, are rebuilt without those credits.) The raw trajectories' question
    index is rebuilt too, so the store is whole, even when opened read-only later."""
    if namespace is not None:
        check_namespace(namespace)
    trajectories = list(store.trajectory_log.read(namespace))
    iterator: Iterable[Trajectory] = trajectories
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(trajectories, desc="rebuilding memories", unit="traj")
    for traj in iterator:
        memorise(store, traj, compressor, log=False)
        if traj.used_memory_ids and traj.outcome != "unknown":
            update_stats(store, traj.used_memory_ids, success=traj.outcome == "correct", namespace=traj.namespace)
    for ns in sorted({t.namespace for t in trajectories}):  # and trajectory-RAG's question index
        store.trajectories.sync(ns, force=True)
    return len(trajectories)


def record_from_trajectory(trajectory: Trajectory, result: CompressionResult) -> MemoryRecord:
    """A memory record for a compressed trajectory, with its sizes in tokens."""
    return MemoryRecord(
        id=trajectory.id,  # one id for the episode and its memory: a rebuild from the log keeps the ids it used
        namespace=trajectory.namespace,
        question=trajectory.question,
        caption=trajectory.caption,
        workflow=result.workflow,
        plan=trajectory.plan,
        outcome=trajectory.outcome,
        judge_feedback=trajectory.judge_feedback,
        source=trajectory.source,
        dataset=trajectory.dataset,
        trajectory_id=trajectory.id,
        trace_tokens=count_tokens(trajectory.to_trace_text()),
        workflow_tokens=count_tokens(result.workflow),
        compression=result.method,
        manager=result.model,
    )
