"""The `search` tool as the graph calls it: text protocol dicts, native tool calls, bad arguments."""

from __future__ import annotations

import json

import pytest

from mia.graph.tools import SearchTool, build_tools, corpus_from_paragraphs, render_tool_schemas, tool_schemas
from mia.graph.tools.formatting import truncate

PARAS = [
    {
        "title": "Arthur's Magazine",
        "text": "Arthur's Magazine (1844-1846) was an American literary periodical published in Philadelphia.",
    },
    {
        "title": "First for Women",
        "text": "First for Women is a woman's magazine published by Bauer Media Group in the USA, started in 1989.",
    },
    {"title": "Quokka", "text": "The quokka is a small macropod found on Rottnest Island near Perth."},
    {"title": "Perth", "text": "Perth is the capital city of Western Australia."},
]


@pytest.fixture(scope="module")
def tool() -> SearchTool:
    return SearchTool(corpus_from_paragraphs(PARAS), top_k=2)


def test_formats_numbered_docs_per_query(tool):
    out = tool.invoke({"query_list": ["When was Arthur's Magazine started?", "where do quokkas live"]})
    blocks = out.split("\n=======\n")
    assert len(blocks) == 2
    assert blocks[0].startswith(
        "Results for \"When was Arthur's Magazine started?\":\nDoc 1 (Title: Arthur's Magazine) "
    )
    assert "Doc 2 (Title: " in blocks[0] and "Doc 3" not in blocks[0]
    assert blocks[1].splitlines()[1].startswith("Doc 1 (Title: Quokka)")


@pytest.mark.parametrize(
    "args",
    [
        {"query": "quokka island"},
        {"queries": ["quokka island"]},
        {"query_list": "quokka island"},
        "quokka island",
        ["quokka island"],
    ],
)
def test_aliases_and_bare_strings(tool, args):
    out = tool.invoke(args)
    assert out.startswith('Results for "quokka island":\nDoc 1 (Title: Quokka)')


@pytest.mark.parametrize(
    "args, expected",
    [
        ({}, 'needs "query_list"'),
        ({"query_list": []}, "is empty"),
        ({"query_list": ["  ", ""]}, "is empty"),
        ({"query_list": 42}, "must be a list of query strings, got int"),
        ({"query_list": [{"q": "x"}]}, "every query must be a string, got dict"),
        ({"q": "quokka"}, "got q"),
        (None, 'needs "query_list"'),
    ],
)
def test_bad_arguments_become_observations(tool, args, expected):
    out = tool.invoke(args)
    assert out.startswith("Error:") and expected in out
    assert '"query_list": [' in out  # tells the model the right shape


def test_native_tool_call_and_async(tool):
    message = tool.invoke({"type": "tool_call", "id": "call_1", "name": "search", "args": {"query_list": ["Perth"]}})
    assert message.tool_call_id == "call_1" and "Doc 1 (Title: Perth)" in message.content
    bad = tool.invoke({"type": "tool_call", "id": "call_2", "name": "search", "args": {"query_list": 3}})
    assert bad.content.startswith("Error:")


def test_a_tool_call_hands_over_the_titles_read_as_sources(tool):
    """The artifact names what the search read, once each, in rank order; `run_tool` (the graph's
    tools node) passes them on and a plain LangChain tool gives none."""
    from langchain_core.tools import tool as lc_tool
    from mia.graph.nodes.tools import run_tool

    message = tool.invoke(
        {"type": "tool_call", "id": "c", "name": "search", "args": {"query_list": ["quokka island", "quokka Rottnest"]}}
    )
    assert message.artifact["sources"][0] == "Quokka" and 2 <= len(message.artifact["sources"]) <= 4
    assert len(set(message.artifact["sources"])) == len(message.artifact["sources"])
    ran = run_tool([tool], "search", {"query_list": ["Perth city"]})
    assert ran.ok and ran.text.startswith('Results for "Perth city"') and ran.sources[0] == "Perth"
    assert run_tool([tool], "search", {"query_list": 3}).sources == ()

    @lc_tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    assert run_tool([lookup], "lookup", {"key": "k"}) == ("value of k", True, ())
    assert not run_tool([lookup], "nope", {}).ok


async def test_ainvoke(tool):
    out = await tool.ainvoke({"query_list": ["First for Women"]})
    assert "Doc 1 (Title: First for Women)" in out


def test_a_failing_corpus_is_an_observation():
    class Broken:
        def search(self, queries, k):
            raise OSError("disk gone")

    tool = SearchTool.model_construct(corpus=Broken(), top_k=3, max_chars=100)
    out = tool.invoke({"query_list": ["x"]})
    assert out.startswith("Error: the search tool failed (OSError: disk gone)")


def test_character_budget_is_split_between_queries():
    tool = SearchTool(corpus_from_paragraphs(PARAS), top_k=2, max_chars=240)
    out = tool.invoke({"query_list": ["Arthur's Magazine", "First for Women magazine"]})
    blocks = out.split("\n=======\n")
    assert len(blocks) == 2 and all(len(b) <= 120 for b in blocks)
    assert all("[truncated" in b for b in blocks)
    assert truncate("abcdef", 100) == "abcdef"


def test_schemas_for_text_prompt_and_native_calls(tool):
    schema = tool_schemas([tool])[0]
    assert schema["type"] == "function" and schema["function"]["name"] == "search"
    params = schema["function"]["parameters"]
    assert params["required"] == ["query_list"]
    assert params["properties"]["query_list"]["type"] == "array"
    line = render_tool_schemas([tool])
    assert json.loads(line) == schema
    assert tool.args["query_list"]["items"] == {"type": "string"}


def test_build_tools_configurations(monkeypatch, caplog):
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    tools = build_tools(PARAS, top_k=1)
    assert [t.name for t in tools] == ["search"] and tools[0].top_k == 1
    tools = build_tools(PARAS, web_search=True)
    assert [t.name for t in tools] == ["search"]
    assert "TAVILY_API_KEY is not set" in caplog.text
    with pytest.raises(ValueError, match="no tools configured"):
        build_tools(None, web_search=True)
    tools = build_tools(None, web_search=True, tavily_api_key="tvly-test")
    assert [t.name for t in tools] == ["web_search", "visit"]
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-env")
    assert [t.name for t in build_tools(PARAS, web_search=True, top_k=2)] == ["search", "web_search", "visit"]
