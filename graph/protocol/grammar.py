"""The executor's turn as a grammar (GBNF), for backends that constrain decoding (llama.cpp).

Why: measured on the embedded Qwen2.5-Coder-1.5B, the executor's first turn ended right after its
`</think>` (the model emitted end-of-turn where the tool call should start) on every question of
the HotpotQA runs, so every question paid a malformed turn and a forced search, and 17 of 46 `mia`
questions ended by running out of format retries. A grammar makes the only way to end a turn a
well-formed one: an optional `<think>` block, then one `<tool_call>` naming a bound tool with a
JSON object of arguments, or one `<answer>`. Which of the two is allowed is the caller's
(an answer is not allowed before the required searches, a call not after the budget).

The grammar writes exactly what `render_call` writes and `parse_turn` reads; the tests hold the
three together on a real model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

# JSON values (RFC 8259, without exponents) and bounded whitespace: llama.cpp's grammar engine
# keeps every partial parse alive, so unbounded whitespace would let a model pad forever.
_JSON_RULES = r"""
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( string ws ":" ws value ( ws "," ws string ws ":" ws value )* )? ws "}"
array ::= "[" ws ( value ( ws "," ws value )* )? ws "]"
string ::= "\"" ( [^"\\\x00-\x1f] | "\\" ["\\/bfnrt] | "\\u" [0-9a-fA-F]{4} )* "\""
number ::= "-"? [0-9]+ ( "." [0-9]+ )?
ws ::= [ \t\n]{0,4}
"""


def _literal(text: str) -> str:
    """A GBNF string literal (JSON escaping is a subset of GBNF's)."""
    return json.dumps(text, ensure_ascii=False)


def turn_grammar(tool_names: Sequence[str], *, call: bool = True, answer: bool = True, think: bool = True) -> str:
    """GBNF for one executor turn: `(<think>...</think>)? (<tool_call>{...}</tool_call> | <answer>...</answer>)`.

    `call`/`answer` choose the actions allowed; at least one must be, and a call needs a tool.
    `think=False` leaves the thought out: the forced last answer, which serving prefills with
    `<answer>`. Thoughts and answers cannot contain `<` (the tag parser would split them there
    anyway), and an answer is one line."""
    names = [n for n in tool_names if n]
    if call and not names:
        raise ValueError("a tool call turn needs at least one tool name")
    actions = [name for name, allowed in (("call", call), ("answer", answer)) if allowed]
    if not actions:
        raise ValueError("a turn must allow a tool call, an answer, or both")
    rules = ["root ::= ( think ws )? action", 'think ::= "<think>" [^<]* "</think>"'] if think else ["root ::= action"]
    rules.append("action ::= " + " | ".join(actions))
    if call:
        tools = " | ".join(_literal(_literal(n)) for n in names)  # a JSON string, as a GBNF literal
        rules.append(
            'call ::= "<tool_call>" ws "{" ws "\\"name\\"" ws ":" ws tool ws "," ws "\\"arguments\\"" ws ":" ws '
            'object ws "}" ws "</tool_call>"'
        )
        rules.append(f"tool ::= {tools}")
    if answer:
        rules.append('answer ::= "<answer>" [ \\t]* [^<\\n]+ "</answer>"')
    return "\n".join(rules) + "\n" + _JSON_RULES.strip() + "\n"
