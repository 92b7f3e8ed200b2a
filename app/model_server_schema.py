"""The request side of `mia serve-model`: an OpenAI chat-completions request, validated whole.

Everything a client sends is checked here, before any model work, so that a malformed request gets
a 400 naming the bad field (as vLLM and OpenAI answer) and never reaches a backend as a 500. Unknown
top-level fields are accepted and ignored (as vLLM does); unknown fields inside a message are ignored.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mia.memory.text import clean_value, valid_unicode

#: OpenAI's rule for function names (also what the local tool protocol can round-trip).
TOOL_NAME = r"^[A-Za-z0-9_-]{1,64}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)


class TextPart(_Strict):
    """A content part; only text can be served (the models here read no images or audio)."""

    type: Literal["text"]
    text: str


Content = str | list[TextPart]


class FunctionCall(_Strict):
    name: str = Field(pattern=TOOL_NAME)
    arguments: str = "{}"


class ToolCall(_Strict):
    id: str | None = None
    type: Literal["function"] = "function"
    function: FunctionCall


class SystemMessage(_Strict):
    role: Literal["system", "developer"]
    content: Content


class UserMessage(_Strict):
    role: Literal["user"]
    content: Content


class AssistantMessage(_Strict):
    role: Literal["assistant"]
    content: Content | None = None
    tool_calls: list[ToolCall] | None = None


class ToolMessage(_Strict):
    role: Literal["tool"]
    content: Content
    tool_call_id: str


Message = Annotated[SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")]


class FunctionParameters(BaseModel):
    """A JSON schema for a function's arguments: an object schema (extra schema keywords kept)."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    type: Literal["object"] = "object"
    properties: dict[str, dict[str, Any]] = Field(default_factory=dict)
    required: list[str] = Field(default_factory=list)


class FunctionDef(_Strict):
    name: str = Field(pattern=TOOL_NAME)
    description: str | None = None
    parameters: FunctionParameters = Field(default_factory=FunctionParameters)


class Tool(_Strict):
    type: Literal["function"] = "function"
    function: FunctionDef


class NamedFunction(_Strict):
    name: str = Field(pattern=TOOL_NAME)


class NamedToolChoice(_Strict):
    type: Literal["function"] = "function"
    function: NamedFunction


class StreamOptions(_Strict):
    include_usage: bool = False


class ChatRequest(BaseModel):
    """The subset of the OpenAI chat-completions request that mia honours."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    model: str | None = None
    messages: list[Message] = Field(min_length=1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    stop: str | list[str] | None = Field(default=None)
    stream: bool = False
    stream_options: StreamOptions | None = None
    tools: list[Tool] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    n: int = Field(default=1, ge=1, le=1, description="only one choice is generated")

    @field_validator("stop")
    @classmethod
    def _stops(cls, value: str | list[str] | None) -> list[str] | None:
        if value is None:
            return None
        stops = [value] if isinstance(value, str) else value
        if len(stops) > 4:
            raise ValueError("at most 4 stop sequences")
        return [s for s in stops if s]

    def limit(self) -> int | None:
        """The requested completion budget (max_completion_tokens wins, as in OpenAI's API)."""
        return self.max_completion_tokens or self.max_tokens

    def tool_dicts(self) -> list[dict[str, Any]]:
        """Tools in OpenAI's dict form, for `bind_tools`."""
        return [t.model_dump(exclude_none=True) for t in self.tools or []]

    def tool_choice_value(self) -> str | None:
        """`bind_tools`'s tool_choice: 'none', 'auto', 'required' or a tool name (checked to exist)."""
        choice = self.tool_choice
        if isinstance(choice, NamedToolChoice):
            names = {t.function.name for t in self.tools or []}
            if choice.function.name not in names:
                raise ValueError(f"tool_choice names {choice.function.name!r}, which is not among the tools")
            return choice.function.name
        return choice


class RequestError(ValueError):
    """A request the server refuses; `param` names the offending field (OpenAI's error shape)."""

    def __init__(self, message: str, param: str | None = None, status: int = 400, code: str | None = None) -> None:
        super().__init__(message)
        self.param, self.status, self.code = param, status, code


def parse_request(body: bytes) -> ChatRequest:
    """Bytes of a request body -> a validated ChatRequest, or RequestError with a one-line reason."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise RequestError(f"the body is not valid UTF-8 (byte {err.start})") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as err:  # JSONDecodeError, too many digits, too deep
        raise RequestError(f"the body is not valid JSON: {str(err)[:200]}") from None
    if not isinstance(data, dict):
        raise RequestError(f"the body must be a JSON object, not {type(data).__name__}")
    try:
        # lone surrogates (legal in JSON's \u escapes, not in UTF-8) become U+FFFD: no backend or log line chokes
        return ChatRequest.model_validate(clean_value(data, valid_unicode))
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
        raise RequestError(f"{where}: {first['msg']}{more}", param=where or None) from None
    except RecursionError:
        raise RequestError("the body is nested too deeply") from None


def text_of(content: Content | None) -> str:
    """The text of a message's content (a string, or the concatenated text parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.text for p in content)


def tool_arguments(raw: str) -> dict[str, Any]:
    """A tool call's `arguments` string as a dict; text that is not a JSON object is kept under
    `_raw` (OpenAI accepts any string there, and clients echo a model's broken calls back)."""
    try:
        value = json.loads(raw or "{}")
    except (ValueError, RecursionError):
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_raw": raw}


def to_langchain(messages: list[Any]) -> list[Any]:
    """Validated OpenAI messages -> LangChain messages (tool calls and tool results included)."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage as LCSystem, ToolMessage as LCTool

    out: list[Any] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            out.append(LCSystem(text_of(m.content)))
        elif isinstance(m, UserMessage):
            out.append(HumanMessage(text_of(m.content)))
        elif isinstance(m, AssistantMessage):
            calls = [
                {"name": c.function.name, "args": tool_arguments(c.function.arguments), "id": c.id}
                for c in m.tool_calls or []
            ]
            out.append(AIMessage(text_of(m.content), tool_calls=calls))
        else:
            out.append(LCTool(text_of(m.content), tool_call_id=m.tool_call_id))
    return out
