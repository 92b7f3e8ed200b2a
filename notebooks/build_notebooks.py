"""Write notebooks 02 and 03 from their cell sources, executed, to be committed with their outputs:
`MIA_DATA_DIR=.cache/mia-test .venv/bin/python notebooks/build_notebooks.py --execute [NAME.ipynb ...]`
(naming 01_quickstart.ipynb re-executes that hand-written notebook in place). Why a script: cells stay
reviewable as Python, and re-executing after an API change is one command."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

SWAP = [
    new_markdown_cell("""# Swapping backends

Every role of MIA (planner, executor, memory manager, judge) takes a **model spec string**, and the graph
takes any LangGraph **checkpointer**. This notebook swaps them without changing the graph:

1. the embedded llama.cpp model (`llamacpp:qwen-coder-0.5b`, in this process);
2. the same model behind an OpenAI-compatible HTTP server (`mia serve-model`), reached as
   `openai-compatible:<name>@<url>`, exactly as a hosted API or vLLM/Ollama server would be;
3. checkpointers: SQLite by path, PostgreSQL by URL (`postgresql://...`, extra `postgres`);
4. hosted providers (`openai:`, `anthropic:`, `google_genai:`), which need a key and their extra.

It runs offline with the embedded Qwen2.5-Coder-0.5B and tiny budgets (after `mia models fetch qwen-coder-0.5b`)."""),
    new_code_cell("""import os, tempfile
from dataclasses import replace
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")            # no progress bars in the notebook's output
from mia import build_graph, Context

scratch = tempfile.mkdtemp(prefix="mia-backends-")
MODEL = "llamacpp:qwen-coder-0.5b"
context = Context(
    planner_model=MODEL, executor_model=MODEL, manager_model=MODEL, judge_model=MODEL,
    data_dir=scratch, namespace="backends", judge_mode="off", memorise=False,
    max_tool_calls=1, max_replans=0, planner_max_tokens=24, executor_max_tokens=24,
)
question = "Which magazine was started first, Arthur's Magazine or First for Women?"
paragraphs = [
    {"title": "Arthur's Magazine", "text": "Arthur's Magazine (1844-1846) was an American literary periodical."},
    {"title": "First for Women", "text": "First for Women is a woman's magazine started in 1989."},
]
graph = build_graph()
out = graph.invoke({"question": question, "paragraphs": paragraphs}, context=context)
print("llama.cpp answer:", repr(out["answer"]), "| executor calls:", out["usage"]["executor"]["calls"])"""),
    new_markdown_cell("""## The same model over HTTP

`mia serve-model` serves any spec over an OpenAI-compatible API (`/v1/chat/completions`). Port 0 picks a
free port; the URL is printed. Any role can then point at it (here the executor), like it would point at
a hosted model."""),
    new_code_cell("""import re, subprocess, sys
server = subprocess.Popen([sys.executable, "-m", "mia.app.cli", "serve-model", "--model", MODEL, "--port", "0"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
for line in server.stdout:
    if m := re.search(r"at (http://127\\.0\\.0\\.1:\\d+/v1)", line):
        url = m.group(1)
        break
# tool_protocol="text": the same <tool_call> text protocol as in process (under "auto" an HTTP model gets
# native tool calling, which hosted API models handle best). Over HTTP there is no prefilled turn or
# grammar, so the replies may differ from the in-process ones in their wording.
served = replace(context, executor_model=f"openai-compatible:qwen-coder-0.5b@{url}", tool_protocol="text")
served_out = graph.invoke({"question": question, "paragraphs": paragraphs}, context=served)
print("served answer:", repr(served_out["answer"]), "| executor calls:", served_out["usage"]["executor"]["calls"])
server.terminate()
_ = server.wait(timeout=60)"""),
    new_markdown_cell("""## Checkpointers

`build_graph(checkpointer=...)` takes a saver object, a SQLite path (`sqlite:///path`) or a PostgreSQL URL
(`postgresql://user@host:port/db`, with `pip install 'mia-agent[postgres]'`; the tables are created on first
use). A thread saved by one graph is resumed by another, in another process or on another machine.
`mia ask --checkpointer postgresql://...` does the same from the command line."""),
    new_code_cell("""target = os.environ.get("MIA_POSTGRES_URL") or f"sqlite:///{scratch}/threads.sqlite"
config = {"configurable": {"thread_id": "notebook-thread"}}
build_graph(checkpointer=target).invoke({"question": question, "paragraphs": paragraphs}, config, context=context)
state = build_graph(checkpointer=target).get_state(config)  # a new graph, a new connection
print("checkpointer:", target.split("://")[0], "| resumed thread: question =", repr(state.values["question"]),
      "| finished:", not state.next)"""),
    new_markdown_cell("""## Hosted providers

Any `provider:model` of LangChain's `init_chat_model` works per role. What a spec needs is checked before a
run: a missing key or package is one line saying what to set or install."""),
    new_code_cell("""from mia.graph.models import check_model_spec
for spec in ["openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5", "local:smollm2"]:
    try:
        check_model_spec(spec, env={})
        print(spec, "-> ready")
    except Exception as err:
        print(spec, "->", err)"""),
]

TRAIN = [
    new_markdown_cell("""# Training a planner adapter

MIA's planner is trained with GRPO: for each training question the planner samples a group of plans, the
**frozen executor** carries each plan out with the real tools, and the reward is the answer's F1 (plus a
format term). Only a LoRA adapter is trained, so the result is a small folder that any role can load.

This notebook runs the smallest real run (`training/configs/test-tiny.yaml`, shipped inside the package):
SmolLM2-135M on CPU, 1 question, 2 plans per group, 2 steps. It shows the mechanics, not a better planner;
`training/configs/cpu-smollm2.yaml` and `gpu-qwen.yaml` are the real configurations (`mia train planner -c ...`)."""),
    new_code_cell("""import os, tempfile
from pathlib import Path
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")            # no progress bars in the notebook's output
import mia.training, mia.app.evaluation.datasets as datasets
from mia.training.config import TrainConfig

config_file = Path(mia.training.__file__).parent / "configs" / "test-tiny.yaml"
scratch = Path(tempfile.mkdtemp(prefix="mia-train-"))
cfg = TrainConfig.from_yaml(config_file, {
    "output_dir": str(scratch / "planner"),
    "data.path": str(Path(datasets.__file__).parent / "hotpotqa.jsonl.gz"),
    "data.limit": 1,
})
print(cfg.name, "| base:", cfg.base_model, "| steps:", cfg.grpo["max_steps"], "| plans per question:", cfg.grpo["num_generations"])"""),
    new_code_cell("""from mia.training.planner_stage import train_planner
result = train_planner(cfg)
print("steps:", result.steps, "| final reward:", result.final_reward)
print("adapter files:", sorted(p.name for p in result.adapter_dir.iterdir()))"""),
    new_markdown_cell("""Every rollout is logged (the plan, the executor's answer, the reward), and so is the reward per step:"""),
    new_code_cell("""import json
for line in (result.metrics_path.parent / "rollouts.jsonl").read_text().splitlines():
    r = json.loads(line)
    print(f"reward {r['reward']:.2f} | plan: {r['plan'][:70]!r}")"""),
    new_markdown_cell("""## Using the adapter

The adapter is a model spec like any other: `<base>+<adapter folder>`. Here it plans for the graph while the
executor stays the base model."""),
    new_code_cell("""from mia import build_graph, Context
from mia.graph.models import load_chat_model

print("planner spec:", result.spec.replace(str(scratch), "<scratch>"))
planner = load_chat_model(result.spec, temperature=0.0, max_tokens=24)
reply = planner.invoke("Write a one-step plan: find who wrote the opera Maria Golovin.")
print("trained planner says:", repr(reply.content[:120]))"""),
]


def scrub(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Committed outputs hold what a reader needs: no stderr (warnings and progress bars, which
    name this machine's site-packages) and no path of this checkout or its data directory."""
    data_dir = os.environ.get("MIA_DATA_DIR")
    paths = [(str(HERE.parent), "<checkout>")]
    if data_dir:
        paths.insert(0, (str(Path(data_dir).resolve()), "$MIA_DATA_DIR"))
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                continue
            if "text" in out:
                for path, placeholder in paths:
                    out["text"] = out["text"].replace(path, placeholder)
            kept.append(out)
        cell["outputs"] = kept
    return nb


def main() -> None:
    meta = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
    books = {"02_swapping_backends.ipynb": SWAP, "03_training_a_planner_adapter.ipynb": TRAIN}
    wanted = [a for a in sys.argv[1:] if a.endswith(".ipynb")]
    for name, cells in books.items():
        if wanted and name not in wanted:
            continue
        nb = new_notebook(cells=cells, metadata=meta)
        if "--execute" in sys.argv:
            from nbclient import NotebookClient

            NotebookClient(nb, timeout=1800, kernel_name="python3").execute()
            scrub(nb)
        nbformat.write(nb, HERE / name)
        print("wrote", HERE / name)
    if "--execute" in sys.argv and "01_quickstart.ipynb" in wanted:  # hand-written: executed in place
        from nbclient import NotebookClient

        nb = nbformat.read(HERE / "01_quickstart.ipynb", as_version=4)
        NotebookClient(nb, timeout=1800, kernel_name="python3").execute()
        nbformat.write(scrub(nb), HERE / "01_quickstart.ipynb")
        print("executed", HERE / "01_quickstart.ipynb")


if __name__ == "__main__":
    main()
