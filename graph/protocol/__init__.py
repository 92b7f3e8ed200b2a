"""The one protocol between models and the rest of mia: typed `Turn`/`ToolCall`, `parse` and
`render_call`, lenient JSON, tag helpers, the rendering of tool schemas, and the boundary
functions for untrusted text (sanitise, bound, escape). The graph's nodes, the local model
backends, the judge, the rewards and the training ReAct loop all read model output through here.

Every parser here is total (a typed failure, never an exception) and linear-time with a length
bound; tests/adversarial/test_parsers.py generates hostile inputs to hold it to that.
"""

from mia.graph.protocol.json_span import (
    MAX_DEPTH,
    MAX_JSON_CHARS,
    JSONRepairError,
    json_values,
    lenient_json,
    parse_json_loose,
)
from mia.graph.protocol.plans import (
    PLAN_STOP,
    adds_nothing,
    cut_plan_overrun,
    drop_guessed_answer,
    plan_queries,
    searches_added,
    query_key,
    served_plan,
    unfilled_hop,
)
from mia.graph.protocol.questions import is_yes_no_question, question_options
from mia.graph.protocol.schemas import tool_schema_lines
from mia.graph.protocol.tags import (
    after_last_think,
    closed_blocks,
    count_tags,
    remove_blocks,
    remove_tags,
    split_think,
    strip_think,
)
from mia.graph.protocol.text import (
    MAX_TEXT_CHARS,
    bounded,
    clean_text,
    clean_value,
    drop_repeats,
    escape_untrusted,
    estimate_tokens,
    truncate_words,
)
from mia.graph.protocol.turn import (
    ToolCall,
    Turn,
    TurnKind,
    cut_before_answer,
    extract_final_answer,
    final_answer,
    last_answer,
    normalise_search_args,
    parse,
    parse_calls,
    parse_turn,
    parse_yes_no,
    read_call,
    render_call,
    render_turn,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_JSON_CHARS",
    "MAX_TEXT_CHARS",
    "JSONRepairError",
    "PLAN_STOP",
    "ToolCall",
    "Turn",
    "TurnKind",
    "cut_plan_overrun",
    "drop_guessed_answer",
    "is_yes_no_question",
    "question_options",
    "unfilled_hop",
    "plan_queries",
    "searches_added",
    "served_plan",
    "query_key",
    "after_last_think",
    "bounded",
    "clean_text",
    "clean_value",
    "closed_blocks",
    "count_tags",
    "cut_before_answer",
    "drop_repeats",
    "escape_untrusted",
    "estimate_tokens",
    "extract_final_answer",
    "final_answer",
    "json_values",
    "last_answer",
    "lenient_json",
    "normalise_search_args",
    "parse",
    "parse_calls",
    "parse_json_loose",
    "parse_turn",
    "parse_yes_no",
    "read_call",
    "remove_blocks",
    "remove_tags",
    "render_call",
    "render_turn",
    "split_think",
    "strip_think",
    "tool_schema_lines",
    "truncate_words",
]
