"""finalize, judge and memorise: the episode becomes a Trajectory, is graded, and is written to
memory (compressed by the manager model) with the win-rate statistics of the memories it used."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from mia.graph.context import Context
from mia.graph.models.spec import EXTRACTIVE
from mia.graph.nodes.calls import count_usage
from mia.graph.nodes.deps import Deps
from mia.graph.nodes.episode import build_trajectory
from mia.graph.nodes.failure import trace_failure
from mia.graph.prompts.echo import strip_prompt_echo
from mia.graph.protocol import drop_repeats
from mia.graph.judge.verdict import verdict_to_channel
from mia.graph.state import State, given


def make_finalize(deps: Deps):
    def finalize(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = Context.coerce(runtime.context)
        answer = drop_repeats(strip_prompt_echo((state.get("answer") or "").strip()))
        trajectory = build_trajectory({**state, "answer": answer}, ctx)
        return {
            "answer": answer,
            "trajectory": trajectory.model_dump(mode="json"),
            "stop_reason": state.get("stop_reason") or "answered",
        }

    return finalize


def make_judge(deps: Deps):
    def judge(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = Context.coerce(runtime.context)
        trajectory = build_trajectory(state, ctx)
        gold = list(given(state, "gold_answers") or [])
        mode = ctx.judge_mode
        if mode == "auto":
            mode = "ground_truth" if gold else "reviewers"
        failure = None
        if mode == "reviewers":  # without gold, a failure the trace shows decides (JudgeConfig.trace_checks)
            steps = list(state.get("steps") or [])
            failure, _ = trace_failure(
                steps, state.get("answer") or "", state.get("stop_reason") or "", state["question"]
            )
        try:
            with count_usage() as counter:
                verdict = deps.judge(
                    model=deps.chat_model(ctx, "judge"),
                    question=state["question"],
                    answer=state.get("answer") or "",
                    trace_text=trajectory.to_trace_text(include_judgement=False),
                    gold_answers=gold or None,
                    mode=mode,
                    config=ctx.judge_config(),
                    trace_failure=failure,
                )
            judgement = verdict_to_channel(verdict)  # the one codec: a malformed verdict is a failed judge
        except Exception as exc:  # the answer must survive a broken judge
            return {"judgement": None, "warnings": [f"judge failed: {type(exc).__name__}: {exc}"]}
        usage = {"judge": counter.as_dict()}
        traj = dict(state.get("trajectory") or {})
        traj.update(outcome=judgement["outcome"], judge_feedback=judgement["feedback"])
        return {"judgement": judgement, "trajectory": traj, "usage": usage}

    return judge


def make_memorise(deps: Deps):
    def memorise(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = Context.coerce(runtime.context)
        from mia.memory.trajectory import Trajectory

        data = dict(state.get("trajectory") or {})
        data["usage"] = state.get("usage") or data.get("usage") or {}
        trajectory = Trajectory.model_validate(data)
        update: dict[str, Any] = {}
        try:
            store, lost = deps.usable_memory_store(ctx)
            if lost:
                update["warnings"] = [lost]
            if ctx.memory_mode == "trajectory-rag":  # raw trajectories only (the baseline)
                store.log_trajectory(trajectory)
                update["memory_id"] = None
            else:
                extractive = ctx.model_for("manager")[0].strip() == EXTRACTIVE and deps.given_model("manager") is None
                with count_usage() as counter:  # no model call for the `extractive` manager
                    compressor = deps.compressor(None if extractive else deps.chat_model(ctx, "manager"))
                    record = store.memorise(trajectory, compressor=compressor)
                update["usage"] = {"manager": counter.as_dict()}
                update["memory_id"] = getattr(record, "id", None) if record is not None else None
            used = list(state.get("used_memory_ids") or [])
            if used and trajectory.outcome != "unknown" and ctx.credit_used_memories:
                store.update_stats(used, success=trajectory.outcome == "correct")
        except Exception as exc:  # report, keep the answer
            update["warnings"] = [*update.get("warnings", []), f"memorise failed: {type(exc).__name__}: {exc}"]
        return update

    return memorise
