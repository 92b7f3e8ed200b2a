"""The one prompt builder for the planner and the executor. The graph's nodes and training both
call these functions, so a policy is trained on exactly the prompt it is served
(tests/graph/test_prompt_builder.py holds them to it, cold start and with memories).

Untrusted text (memories, past trajectories, tool results) is escaped here, where it enters a
prompt, with `escape_untrusted`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mia.graph.prompts import caption_line, load_prompts, render
from mia.memory.strategy import placeholders, question_names, strategy_view
from mia.graph.protocol import escape_untrusted, is_yes_no_question, question_options, tool_schema_lines, truncate_words

PLAN_STYLE = "hops"
"""The plan style the builder writes when not told (Context.plan_style's default: serving and training agree)."""
MEMORY_STYLE = "strategy"
"""How memories are shown when not told (Context.memory_style's default)."""
PLAN_WORDS = 400
"""The plan length the planner prompt asks for."""
REPLAN_WORDS = 200
"""The supplementary plan length the replan prompt asks for."""

Message = dict[str, str]


def render_memories(retrieved: Any, style: str = MEMORY_STYLE) -> str:
    """Positive and negative workflows as separate sections (reference 2.7); `None` or empty
    results render the cold-start block (each section says none was found). `style` strategy shows
    each workflow as a strategy (mia.memory.strategy: names as placeholders, no findings); paper, as stored."""
    p = load_prompts("memory")
    lines = [p["header"]]
    positives = list(getattr(retrieved, "positives", []) or [])
    negatives = list(getattr(retrieved, "negatives", []) or [])
    for title, items in ((p["positives"], positives), (p["negatives"], negatives)):
        lines.append(title.format(n=len(items)))
        if not items:
            lines.append(p["none_found"])
        for i, scored in enumerate(items, 1):
            rec = getattr(scored, "record", scored)
            caption = (getattr(rec, "caption", "") or "").strip()
            outcome = str(getattr(rec, "outcome", "unknown"))
            # a failed memory shows the reviewers' feedback: the lesson the planner should learn (12.7)
            feedback = (getattr(rec, "judge_feedback", "") or "").strip() if outcome == "incorrect" else ""
            question, workflow = rec.question.strip(), (getattr(rec, "workflow", "") or "").strip()
            if style == "strategy":
                names = question_names(question)
                question, workflow = strategy_view(workflow, question)
                feedback = placeholders(feedback, names)
            lines.append(
                render(
                    "memory",
                    "item",
                    i=i,
                    modality="image-text" if caption else "text-only",
                    judgement=outcome,
                    question=escape_untrusted(question),
                    caption_line=caption_line(caption),
                    feedback_line=p["feedback_line"].format(feedback=escape_untrusted(feedback)) if feedback else "",
                    workflow=escape_untrusted(workflow),
                )
            )
    return "\n".join(lines)


def render_trajectories(found: Any, max_words: int) -> str:
    """Raw past trajectories for the trajectory-rag baseline (each cut to max_words)."""
    items = []
    for i, item in enumerate(found or [], 1):
        traj = item[0] if isinstance(item, tuple) else getattr(item, "trajectory", item)
        trace = traj.to_trace_text(max_words_per_observation=64) if hasattr(traj, "to_trace_text") else str(traj)
        items.append(
            render(
                "memory",
                "trajectory_item",
                i=i,
                question=escape_untrusted(getattr(traj, "question", "")),
                judgement=getattr(traj, "outcome", "unknown"),
                trace=escape_untrusted(truncate_words(trace, max_words)),
            )
        )
    return "\n".join(items)


def planner_messages(
    question: str,
    memories: str = "",
    max_words: int = PLAN_WORDS,
    caption: str = "",
    style: str = PLAN_STYLE,
    attempt: tuple[str, str] | None = None,
) -> list[Message]:
    """The planner's prompt for one question (with its image caption, if any); `memories` is the
    rendered memory block (empty: the cold-start block); `style` hops or paper (Context.plan_style);
    `attempt` (trace, failure): the executor's failed attempt the plan follows (Context.plan_when "failure")."""
    attempt_block = (
        "\n\n" + render("planner", "attempt_block", trace=escape_untrusted(attempt[0]), reason=attempt[1])
        if attempt
        else ""
    )
    return [
        {"role": "system", "content": render("planner", "system")},
        {
            "role": "user",
            "content": render(
                "planner",
                "plan_hops" if style == "hops" else "plan",
                **({"example": hops_example(question)} if style == "hops" else {}),
                memories=memories.strip() or render_memories(None),
                max_words=max_words,
                question=question,
                caption_line=caption_line(caption),
                attempt_block=attempt_block,
            ),
        },
    ]


def hops_example(question: str) -> str:
    """The hop plan example for this question's form: a question naming two candidates gets the
    choice example, a yes/no question the comparison example, any other the bridge chain (a small
    planner copies its example's last step)."""
    if question_options(question):
        return render("planner", "example_choice")
    return render("planner", "example_compare" if is_yes_no_question(question) else "example_bridge")


def answer_line(question: str) -> str:
    """What the question's wording says of its answer's form, for the executor: a comparison
    question's two candidates, or that a yes/no question is answered "yes" or "no"."""
    options = question_options(question)
    if options:
        return "\n" + render("executor", "options_line", first=options[0], second=options[1])
    return "\n" + render("executor", "yes_no_line") if is_yes_no_question(question) else ""


def executor_messages(
    question: str,
    plan: str = "",
    tools: Sequence[Any] = (),
    native: bool = False,
    memories: str = "",
    caption: str = "",
    image_block: dict[str, Any] | None = None,
    plan_style: str = PLAN_STYLE,
) -> list[dict[str, Any]]:
    """The executor's prompt: the system prompt (with the tool schemas in the text protocol),
    then the question (with its image caption, the form its answer takes, and the
    image itself as a content block for a multimodal executor), the plan and, for trajectory-rag,
    past trajectories."""
    tools_text = render("executor", "tools", tool_lines=tool_schema_lines(tools)) if tools and not native else ""
    plan, memories = plan.strip(), memories.strip()
    user = render(
        "executor",
        "question",
        question=question,
        caption_line=caption_line(caption),
        answer_line=answer_line(question),
        plan_block=render("executor", "plan_block_hops" if plan_style == "hops" else "plan_block", plan=plan) + "\n"
        if plan
        else "",
        memory_block=render("executor", "memory_block", memories=memories) + "\n" if memories else "",
    )
    return [
        {"role": "system", "content": render("executor", "system_native" if native else "system", tools=tools_text)},
        {"role": "user", "content": [{"type": "text", "text": user}, image_block] if image_block else user},
    ]


def reflection(trace: str) -> str:
    """The planner's reflection turn: the executor's trajectory, escaped inside its fence."""
    return render("planner", "reflect", trace=escape_untrusted(trace))


def replan_request(question: str, max_words: int = REPLAN_WORDS) -> str:
    """The planner's turn that asks for a supplementary plan."""
    return render("planner", "replan", question=question, max_words=max_words)


def failure_replan_request(trace: str, reason: str, question: str, max_words: int = REPLAN_WORDS) -> str:
    """The planner's turn that asks for a supplementary plan after a failure the trace shows
    (Context.replan_when "failure"): the trajectory, escaped in its fence, and the failure."""
    return render(
        "planner", "failure", trace=escape_untrusted(trace), reason=reason, question=question, max_words=max_words
    )


def late_plan_message(plan: str, reason: str) -> str:
    """The executor's turn that holds back its failed answer and hands it the plan written after it
    (Context.plan_when "failure")."""
    return render("planner", "late_plan_message", plan=plan, reason=reason)


def replan_message(replan: str) -> str:
    """The executor's turn that hands it the supplementary plan."""
    return render("planner", "replan_message", replan=replan)


def observation(result: str) -> str:
    """A tool result as the executor sees it: escaped inside the <tool_response> fence."""
    return render("executor", "observation", result=escape_untrusted(result))


def force_answer(reason: str = "budget") -> str:
    """The turn that ends the tool loop and asks for the final answer (reason: budget, context, format)."""
    key = {"budget": "reason_budget", "context": "reason_context"}.get(reason, "reason_format")
    return render("executor", "force_answer", reason=render("executor", key))
