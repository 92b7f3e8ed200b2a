"""CLI commands of the agent: `mia ask`, `mia chat` and `mia studio`.

`ask` and `chat` run the MIA graph with a SQLite checkpointer ($MIA_DATA_DIR/checkpoints.sqlite),
so a thread can be resumed with `--thread ID`, and stream each node's events and the executor's
tokens (without the protocol's tags) to the terminal.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import typer

from mia.graph.models.defaults import OPTIONAL_ROLES, ROLES

if TYPE_CHECKING:  # pragma: no cover - imported where used: `mia --help` stays fast
    from langchain_core.runnables import RunnableConfig

    from mia.graph.result import RunResult

EXIT_CONFIG = 2

# ---------------------------------------------------------------------------------- options

_planner = typer.Option(
    None,
    "--planner-model",
    help="Planner model spec, e.g. llamacpp:qwen-coder-1.5b, openai:gpt-4.1-mini, ollama:llama3 (env MIA_PLANNER_MODEL).",
)
_executor = typer.Option(None, "--executor-model", help="Executor model spec (env MIA_EXECUTOR_MODEL).")
_manager = typer.Option(None, "--manager-model", help="Memory-manager model spec (env MIA_MANAGER_MODEL).")
_judge = typer.Option(None, "--judge-model", help="Judge model spec (env MIA_JUDGE_MODEL).")
_namespace = typer.Option(
    None, "--namespace", "-n", help="Memory namespace (env MIA_MEMORY_NAMESPACE, default 'default')."
)
_max_tools = typer.Option(None, "--max-tool-calls", help="Most tool calls per question (default 30).")
_min_tools = typer.Option(
    None,
    "--min-tool-calls",
    min=0,
    help="Searches required before an answer is accepted (default 1; 0: may answer at once).",
)
_max_replans = typer.Option(
    None, "--max-replans", help="Most reflect-and-replan rounds (default 1; 0 skips reflection)."
)
_max_tokens = typer.Option(None, "--max-tokens", help="Most new tokens per model call, every role (default: per role).")
_corpus = typer.Option(None, "--corpus", help="'demo' (default) or a path to a corpus to search.")
_mode = typer.Option(None, "--memory-mode", help="mia (default) | none | trajectory-rag.")
_judge_mode = typer.Option(None, "--judge-mode", help="auto (default) | ground_truth | reviewers | off.")
_judge_arbiter = typer.Option(
    None, "--judge-arbiter", help="Reviewer verdicts: weighted (default, the numeric rule) | llm (an arbiter call)."
)
_judge_contradiction = typer.Option(
    None,
    "--judge-contradiction",
    help="When the grader model's grade contradicts the metrics: metrics (default, trust "
    "the metrics) | llm (trust the grader: 'JFK' for 'John F. Kennedy') | unknown.",
)
_paper = typer.Option(
    False,
    "--paper",
    help="The MIA paper's settings (free-form plans, the planner's yes/no "
    "reflection after every attempt, every replan followed, every search run, memories shown as "
    "stored whatever their similarity); options given beside it win. See results/ladder/README.md.",
)
_drop_repeated = typer.Option(
    None,
    "--drop-repeated-replan/--follow-repeated-replan",
    help="Do not follow a replan that only repeats the plan or its searches (default: drop; --paper: follow).",
)
_evidence_search = typer.Option(
    None,
    "--evidence-search/--no-evidence-search",
    help="Before accepting an answer to a dated comparison or a same-country question, search the names "
    "whose own article the results lack (default: off, not yet measured on the final split).",
)
_plan_when = typer.Option(
    None,
    "--plan-when",
    help="failure (default: the executor answers alone first; the planner plans, with the memories "
    "and the failed attempt, only after a failure the trace shows) or start (a plan before the first "
    "turn, as the paper; --paper sets it).",
)
_no_mem = typer.Option(False, "--no-memorise", help="Do not store this episode in memory.")
_json = typer.Option(False, "--json", help="Print only the final result as JSON (no progress).")
_thread = typer.Option(None, "--thread", "-t", help="Thread id: resume it, or continue it with a new question.")
_data_dir = typer.Option(None, "--data-dir", help="Data directory (memory, checkpoints) (env MIA_DATA_DIR).")
_web = typer.Option(False, "--web-search", help="Also offer Tavily web search to the executor (needs TAVILY_API_KEY).")
_checkpointer = typer.Option(
    None,
    "--checkpointer",
    help="Where threads are saved: postgresql://USER@HOST:PORT/DB (extra 'postgres'), sqlite:///PATH or a path (default: DATA_DIR/checkpoints.sqlite).",
)
_learn = typer.Option(
    False,
    "--learn",
    help="Test-time learning: the planner's LoRA keeps learning from answered questions (GRPO every 4; reviewers judge when no --gold). See docs/test_time_learning.md.",
)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("ask")(ask)
    app.command("chat")(chat)
    app.command("studio")(studio)


# ---------------------------------------------------------------------------------- commands


def ask(
    question: str = typer.Argument(None, help="The question. Leave it out with --thread to resume that thread."),
    gold: list[str] = typer.Option(None, "--gold", help="A gold answer (repeatable): enables the ground-truth judge."),
    paragraphs: Path = typer.Option(None, "--paragraphs", help="JSON/JSONL file of {title, text}: search only these."),
    plan: str = typer.Option(None, "--plan", help="A preset plan (skips the planner)."),
    image: Path = typer.Option(
        None, "--image", help="An image the question is about (PNG, JPEG, GIF, WebP; at most 20 MB)."
    ),
    caption: str = typer.Option(None, "--caption", help="A caption of the image (else --captioner-model writes one)."),
    captioner_model: str = typer.Option(
        None, "--captioner-model", help="Vision model that captions --image (env MIA_CAPTIONER_MODEL)."
    ),
    planner_model: str = _planner,
    executor_model: str = _executor,
    manager_model: str = _manager,
    judge_model: str = _judge,
    namespace: str = _namespace,
    max_tool_calls: int = _max_tools,
    min_tool_calls: int = _min_tools,
    max_replans: int = _max_replans,
    max_tokens: int = _max_tokens,
    corpus: str = _corpus,
    memory_mode: str = _mode,
    judge_mode: str = _judge_mode,
    judge_arbiter: str = _judge_arbiter,
    judge_contradiction: str = _judge_contradiction,
    paper: bool = _paper,
    plan_when: str = _plan_when,
    drop_repeated_replan: bool = _drop_repeated,
    evidence_search: bool = _evidence_search,
    no_memorise: bool = _no_mem,
    as_json: bool = _json,
    thread: str = _thread,
    data_dir: Path = _data_dir,
    web_search: bool = _web,
    learn: bool = _learn,
    checkpointer: str = _checkpointer,
) -> None:
    """Answer one question with the MIA agent: memories -> plan -> search/answer -> reflect -> judge -> memorise."""
    context = _context(locals())
    inputs = None
    if question is not None and not question.strip():
        _fail("the question is empty: give a question, or leave it out with --thread ID to resume a thread")
    if question:
        inputs = {
            "question": question.strip(),
            "gold_answers": list(gold or []) or None,
            "plan": plan,
            "caption": caption or None,
            "image": _checked_image(image, caption, context) if image else None,
            "paragraphs": _read_paragraphs(paragraphs) if paragraphs else None,
        }
    elif not thread:
        _fail("give a question, or --thread ID to resume a thread")
    session = _learning(context, bool(gold), as_json, start=False) if learn else None
    thread_id = thread or uuid.uuid4().hex
    result = _run(context, inputs, thread_id, quiet=as_json, session=session, checkpointer=checkpointer)
    if session is not None:
        from mia.training.online.cli import finish_learning

        finish_learning(session, echo=lambda m: typer.echo(m, err=True))
    if as_json:
        typer.echo(json.dumps(json_output(result, thread_id), ensure_ascii=False, default=str))


def chat(
    planner_model: str = _planner,
    executor_model: str = _executor,
    manager_model: str = _manager,
    judge_model: str = _judge,
    namespace: str = _namespace,
    max_tool_calls: int = _max_tools,
    min_tool_calls: int = _min_tools,
    max_replans: int = _max_replans,
    max_tokens: int = _max_tokens,
    corpus: str = _corpus,
    memory_mode: str = _mode,
    judge_mode: str = _judge_mode,
    judge_arbiter: str = _judge_arbiter,
    paper: bool = _paper,
    plan_when: str = _plan_when,
    drop_repeated_replan: bool = _drop_repeated,
    evidence_search: bool = _evidence_search,
    no_memorise: bool = _no_mem,
    thread: str = _thread,
    data_dir: Path = _data_dir,
    web_search: bool = _web,
    learn: bool = _learn,
    checkpointer: str = _checkpointer,
) -> None:
    """Ask questions one after another in one thread (empty line, 'exit' or Ctrl-D to stop)."""
    from rich.console import Console

    console = Console()
    context = _context(locals())
    thread = thread or uuid.uuid4().hex
    console.print(f"[dim]thread {thread} - memory namespace '{context.namespace}' - 'exit' to stop[/]")
    session = _learning(context, False, False) if learn else None
    while True:
        try:
            question = console.input("[bold cyan]question> [/]").strip()
        except (EOFError, KeyboardInterrupt):
            break
        if not question or question.lower() in ("exit", "quit", ":q"):
            break
        inputs = {
            "question": question,
            "gold_answers": None,
            "plan": None,
            "caption": None,
            "image": None,
            "paragraphs": None,
        }
        _run(context, inputs, thread, quiet=False, session=session, checkpointer=checkpointer)
    if session is not None:
        from mia.training.online.cli import finish_learning

        finish_learning(session, echo=console.print, wait=False)


def studio(
    port: int = typer.Option(0, "--port", help="Port (0: a free one; 2024 is often taken)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on."),
    reload: bool = typer.Option(False, "--reload/--no-reload", help="Restart the server when files change."),
    config: Path = typer.Option(
        None, "--config", help="langgraph.json (default: ./langgraph.json, else the one in the mia package)."
    ),
) -> None:
    """Serve the graph to LangGraph Studio with `langgraph dev` (offline-safe: no analytics or version check; LangSmith tracing only when LANGSMITH_TRACING is on)."""
    config = config or find_langgraph_json()
    cmd = studio_command(config, host, port or free_port(host), reload)
    typer.echo(f"Starting: {' '.join(cmd)}")
    typer.echo("Open Studio with the URL the server prints (the Studio web app itself needs a network).")
    try:
        raise typer.Exit(subprocess.call(cmd, env=studio_env(Path.cwd())))  # cwd kept: its .env is the user's
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


# ---------------------------------------------------------------------------------- helpers


def find_langgraph_json() -> Path:
    """langgraph.json of the working directory, else the one shipped inside the `mia` package."""
    import mia

    for folder in (Path.cwd(), Path(mia.__file__).resolve().parent):
        if (folder / "langgraph.json").is_file():
            return folder / "langgraph.json"
    _fail("langgraph.json not found: run `mia studio` from a checkout of the mia repository (or pass --config)")
    raise AssertionError  # unreachable


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def studio_env(folder: Path | None = None) -> dict[str, str]:
    """The environment for `langgraph dev`: no analytics, no PyPI version check, and no LangSmith
    tracing unless the user turned it on (LANGSMITH_TRACING in the environment or in the `.env`
    of `folder`, which the server loads through langgraph.json)."""
    from mia.app.tracing import langsmith_values, tracing_on

    env = dict(os.environ)
    env.update(
        LANGGRAPH_NO_VERSION_CHECK="1",
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        ANONYMIZED_TELEMETRY="False",
        HF_HUB_OFFLINE=env.get("HF_HUB_OFFLINE", "1"),
    )
    if not tracing_on(langsmith_values(folder)):
        env.update(LANGSMITH_TRACING="false", LANGCHAIN_TRACING_V2="false")
    return env


def studio_command(config: Path, host: str, port: int, reload: bool = False) -> list[str]:
    """The `langgraph dev` command line (the executable next to this Python, else on PATH)."""
    exe = Path(sys.executable).with_name("langgraph")
    binary = str(exe) if exe.exists() else shutil.which("langgraph")
    if not binary:
        _fail("langgraph-cli is not installed: pip install 'mia-agent[studio]'")
    cmd = [str(binary), "dev", "--no-browser", "--host", host, "--port", str(port), "--config", str(config)]
    return cmd + ([] if reload else ["--no-reload"])


def _checked_image(path: Path, caption: str | None, context: Any) -> str:
    """--image: readable, a real image, within bounds, and captionable; else a one-line error
    before any model loads."""
    from mia.graph.images import ImageError, load_image

    try:
        load_image(path)
    except ImageError as exc:
        _fail(str(exc))
    if not caption and not context.captioner_model:
        _fail("--image needs --caption or a vision model to caption it (--captioner-model or MIA_CAPTIONER_MODEL)")
    return str(path)


def _fail(message: str, code: int = EXIT_CONFIG) -> None:
    line = " ".join(part.strip() for part in str(message).splitlines() if part.strip())
    typer.echo(f"Error: {line}", err=True)
    raise typer.Exit(code)


def _read_paragraphs(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
        data = (
            json.loads(text)
            if text.lstrip().startswith("[")
            else [json.loads(x) for x in text.splitlines() if x.strip()]
        )
    except (OSError, ValueError) as exc:
        _fail(f"cannot read paragraphs from {path}: {exc}")
    if isinstance(data, list) and len(data) == 1 and isinstance(data[0], dict) and "paragraphs" in data[0]:
        data = data[0]["paragraphs"]  # one dataset record
    if not all(isinstance(p, dict) and "text" in p for p in data):
        _fail(f"{path}: expected a list of {{title, text}} objects")
    return data


def _context(options: dict[str, Any]) -> Any:
    """A Context from the command-line options, env defaults, and checked model specs."""
    from mia.app.commands.context_options import context_overrides
    from mia.graph.context import Context  # its blank fields default to MIA_* (environment or .env)
    from mia.graph.models import BackendError, check_model_spec

    overrides: dict[str, Any] = {f"{r}_model": options.get(f"{r}_model") for r in ROLES + OPTIONAL_ROLES}
    overrides.update(
        namespace=options.get("namespace"),
        max_tool_calls=options.get("max_tool_calls"),
        min_tool_calls=options.get("min_tool_calls"),
        max_replans=options.get("max_replans"),
        corpus=options.get("corpus"),
        memory_mode=options.get("memory_mode"),
        judge_mode=options.get("judge_mode"),
        judge_arbiter=options.get("judge_arbiter"),
        judge_contradiction=options.get("judge_contradiction"),
        data_dir=str(options["data_dir"]) if options.get("data_dir") else None,
    )
    if options.get("no_memorise"):
        overrides["memorise"] = False
    if options.get("web_search"):
        if not _tavily_key():
            _fail("--web-search needs TAVILY_API_KEY (in the environment or .env; see .env.example)")
        overrides["web_search"] = True
    if options.get("max_tokens"):
        overrides.update({f"{r}_max_tokens": options["max_tokens"] for r in ROLES})
    overrides["drop_repeated_replan"] = options.get("drop_repeated_replan")
    overrides["evidence_search"] = options.get("evidence_search")
    overrides["plan_when"] = options.get("plan_when")
    try:  # the paper's values (min_similarity None among them) where no option was given
        context = Context(**context_overrides(overrides, paper=bool(options.get("paper"))))
    except ValueError as err:  # an OptionError, or a value Context's own check refuses
        _fail(str(err))
    for role in ROLES + OPTIONAL_ROLES:
        spec = getattr(context, f"{role}_model")
        if not spec:
            continue
        try:
            check_model_spec(spec)
        except BackendError as exc:
            _fail(f"{role} model {spec!r}: {exc}")
    return context


def _tavily_key() -> str:
    """TAVILY_API_KEY from the environment, else from the settings (.env)."""
    key = os.environ.get("TAVILY_API_KEY", "").strip()
    if key:
        return key
    try:
        from mia.app.settings import get_settings

        secret = get_settings().tavily_api_key
    except Exception:  # noqa: BLE001 - an unreadable .env is reported by the settings elsewhere
        return ""
    return secret.get_secret_value().strip() if secret is not None else ""


def _learning(context: Any, ground_truth: bool, quiet: bool, start: bool = True) -> Any:
    """--learn: a test-time learning session (mia.training.online) beside the graph."""
    from mia.training.online.cli import start_learning

    return start_learning(context, ground_truth, echo=lambda m: typer.echo(m, err=quiet), start=start)


def json_output(result: RunResult, thread_id: str) -> dict[str, Any]:
    """`mia ask --json`: the run's output state (`RunResult.to_output`) and the thread id."""
    return {**result.to_output(), "thread_id": thread_id}


def _run(
    context: Any,
    inputs: dict[str, Any] | None,
    thread: str,
    quiet: bool,
    session: Any = None,
    checkpointer: str | None = None,
) -> RunResult:
    """Run (or resume) one thread with the checkpointer (SQLite by default), streaming node events."""
    from contextlib import ExitStack

    from rich.console import Console

    from mia.graph.builder import build_graph, recursion_limit
    from mia.graph.models import BackendError
    from mia.graph.persistence import PersistenceError, open_checkpointer, redact
    from mia.graph.result import RunResult

    console = Console(stderr=quiet, quiet=quiet)
    data_dir = context.resolved_data_dir()
    data_dir.mkdir(parents=True, exist_ok=True)
    config: RunnableConfig = {"configurable": {"thread_id": thread}, "recursion_limit": recursion_limit(context)}
    target = checkpointer or data_dir / "checkpoints.sqlite"
    with ExitStack() as stack:
        try:
            saver = stack.enter_context(open_checkpointer(target))
        except PersistenceError as exc:
            _fail(str(exc))
        graph = session.graph(checkpointer=saver) if session is not None else build_graph(checkpointer=saver)
        if inputs is None:
            snapshot = graph.get_state(config)
            if not snapshot.values:
                _fail(f"thread {thread} does not exist in {redact(str(target)) if checkpointer else target}")
            if not snapshot.next:
                console.print(f"[dim]thread {thread} is complete; its last result:[/]")
        _quiet_weight_loading()
        if session is not None:  # --learn: the learner waits while this question is answered
            stack.enter_context(session.answering())
        try:
            with console.status("[dim]working (local models are slow on CPU)...[/]") as status:
                live = LiveReply(console, status)
                for part in graph.stream(inputs, config, context=context, stream_mode=["updates", "messages"]):
                    mode, payload = cast("tuple[str, Any]", part)  # a list of modes: (mode, payload) pairs
                    if mode == "messages":
                        live.token(*payload)
                        continue
                    live.end()
                    for node, values in payload.items():
                        status.update(f"[dim]{node} done; working...[/]")
                        show_event(console, node, values or {})
                live.end()
        except BackendError as exc:
            _fail(str(exc) or type(exc).__name__)
        except Exception as exc:  # noqa: BLE001 - the checkpoint keeps the finished steps
            _fail(
                f"the run stopped ({type(exc).__name__}: {exc}). Its progress is saved: resume it with "
                f"`mia ask --thread {thread}`",
                code=1,
            )
        result = RunResult.from_output(graph.get_state(config).values)
    show_result(console, result, thread)
    if session is not None and inputs:  # --learn: hand the answered question to the learner
        session.submit(inputs, result)
    return result


#: Nodes whose model replies are streamed token by token (the plan is shown whole, as a panel).
STREAMED_NODES = ("execute",)


class LiveReply:
    """Prints the executor's reply as its tokens arrive (tags removed, tool-call JSON hidden),
    pausing the spinner meanwhile; `end` closes the line before the node's summary."""

    def __init__(self, console: Any, status: Any) -> None:
        from mia.app.commands.live_text import VisibleText

        self._console, self._status, self._new = console, status, VisibleText
        self._view: Any = None
        self._message: str | None = None
        self._started = False
        self._streaming = False  # the backend streams tokens: whole "ai" messages are repeats

    def token(self, chunk: Any, metadata: dict[str, Any]) -> None:
        kind = getattr(chunk, "type", "")
        if metadata.get("langgraph_node") not in STREAMED_NODES or kind not in ("AIMessageChunk", "ai"):
            return
        if kind == "AIMessageChunk":
            self._streaming = True
        elif self._streaming:  # a whole message (the node's state update) of a reply already shown token by token
            return
        if chunk.id != self._message:
            self.end()
            self._message, self._view = chunk.id, self._new()
        self._write(self._view.feed(_text(chunk.content)))

    def end(self) -> None:
        if self._view is not None:
            self._write(self._view.flush())
            if self._started:
                self._console.print()
                self._status.start()
        self._view, self._message, self._started = None, None, False

    def _write(self, text: str) -> None:
        if not text:
            return
        if not self._started:
            text = text.lstrip()
            if not text:
                return
            self._status.stop()
            self._started = True
        self._console.print(text, end="", style="dim", markup=False, highlight=False)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content or [])


def _quiet_weight_loading() -> None:
    """No tqdm bars from huggingface_hub / transformers while weights load (MiniLM, local:
    models): they would cut through the streamed reply. Our own bars are not affected."""
    from huggingface_hub.utils import disable_progress_bars

    disable_progress_bars()


def show_event(console: Any, node: str, v: dict[str, Any]) -> None:
    """One line (or panel) per node update: what a user wants to follow. Updates are read with
    the output's own types (`TrajectoryStep`, `MemoryShown`, the verdict's channel codec)."""
    from rich.markup import escape
    from rich.panel import Panel

    from mia.graph.judge.verdict import verdict_from_channel
    from mia.graph.result import MemoryShown
    from mia.memory.trajectory import TrajectoryStep

    steps = (
        [TrajectoryStep.model_validate(step) for step in v.get("steps") or []]
        if node in ("execute", "tools", "reflect")
        else []
    )
    if node == "prepare":
        if caption := (v.get("inputs") or {}).get("caption"):
            console.print(f"[bold]image caption[/] {caption}", highlight=False)
    elif node == "retrieve_memory":
        used = [MemoryShown.model_validate(m) for m in v.get("memories") or []]
        console.print(f"[bold]memory[/] {len(used)} memories used")
        for m in used:
            console.print(f"  [dim]{m.id[:8]}[/] {m.outcome:<9} {m.question[:80]}", markup=True, highlight=False)
    elif node == "plan" and v.get("plan"):
        console.print(Panel(v["plan"], title="plan", border_style="cyan"))
    elif node == "execute":
        for step in steps:
            if step.kind == "tool_call":
                console.print(f"[yellow]tool[/] {step.tool}({json.dumps(step.args, ensure_ascii=False)})")
            elif step.kind == "answer":
                console.print(f"[green]answer[/] {step.content}")
        for w in v.get("warnings") or []:
            console.print(f"[red]![/] {w}")
    elif node == "tools":
        for step in steps:
            text = " ".join(step.content.split())
            console.print(f"[dim]  -> {text[:160]}{'...' if len(text) > 160 else ''}[/]")
    elif node == "reflect":
        console.print(f"[bold]reflection[/] replan? {steps[0].content if steps else '?'}")
    elif node == "replan" and v.get("replan"):
        console.print(Panel(v["replan"], title="revised plan", border_style="magenta"))
    elif node == "replan" and steps and steps[0].dropped:
        console.print(f"[bold]revised plan[/] not followed ({(steps[0].args or {})['dropped']}): the answer stands")
    elif node == "judge":
        verdict = verdict_from_channel(v.get("judgement"))
        said = f"{verdict.outcome} (score {verdict.score:.2f})" if verdict is not None else "failed (score -)"
        why = f": {escape(verdict.why)}" if verdict is not None and verdict.why else ""
        console.print(f"[bold]judge[/] {said}{why}", markup=True, highlight=False)
    elif node == "memorise":
        if v.get("memory_id"):
            console.print(f"[bold]memorised[/] as {v['memory_id']}")
        for w in v.get("warnings") or []:
            console.print(f"[red]![/] {w}")


def show_result(console: Any, result: RunResult, thread: str) -> None:
    """The final answer, the thread id (to resume), and the cost per role."""
    from rich.panel import Panel
    from rich.table import Table

    console.print(Panel(result.answer or "(no answer)", title="final answer", border_style="green"))
    table = Table(
        "role",
        "calls",
        "input tokens",
        "of which cached",
        "output tokens",
        "model s",
        title="usage",
        title_justify="left",
    )
    for role, usage in result.usage.items():
        table.add_row(
            role,
            str(usage.calls),
            str(usage.input_tokens),
            str(usage.cached_tokens),
            str(usage.output_tokens),
            f"{usage.ms / 1000:.1f}",
        )
    console.print(table)
    console.print(f"[dim]thread {thread} (resume or continue with --thread)[/]")
