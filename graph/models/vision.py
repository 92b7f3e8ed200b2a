"""VisionChatModel: a local transformers vision-language model (`hf:<dir>` whose config has a
vision tower: Qwen2.5-VL, LLaVA, Idefics, ...) as a LangChain chat model, for the captioner role
or a multimodal executor on a GPU.

Images arrive as LangChain image content blocks (standard `{"type": "image", "base64": ...}` or
OpenAI `image_url` parts) and go to the model's own processor with its chat template. Remote
image URLs are refused: a local model gets the image bytes, mia never downloads them. One copy of
the weights per folder and device; generation holds its lock (roles sharing it take turns).
"""

from __future__ import annotations

import io
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel, ModelProfile
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from mia.graph.models.errors import BackendError
from mia.graph.models.text_model import truncate_at_stop

ROLE_OF = {"system": "system", "human": "user", "ai": "assistant", "tool": "user"}


def is_vision_model(path: str | Path) -> bool:
    """Whether a transformers folder holds a vision-language model (its config has a vision tower)."""
    try:
        config = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and "vision_config" in config


@dataclass
class _Loaded:
    processor: Any
    model: Any
    device: str
    lock: threading.Lock


_CACHE: dict[tuple[str, str], _Loaded] = {}
_CACHE_LOCK = threading.Lock()


def _load(path: str, device: str) -> _Loaded:
    key = (str(Path(path).resolve()), device)
    with _CACHE_LOCK:
        if key not in _CACHE:
            import torch
            from transformers import AutoModelForImageTextToText, AutoProcessor

            dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
            processor = AutoProcessor.from_pretrained(path)
            model = AutoModelForImageTextToText.from_pretrained(path, dtype=dtype).to(device).eval()  # type: ignore[arg-type]  # transformers stubs type .to as unbound
            _CACHE[key] = _Loaded(processor, model, device, threading.Lock())
        return _CACHE[key]


def _image(block: dict[str, Any]) -> Any:
    """A PIL image from a LangChain image block (standard or OpenAI form), checked once."""
    from PIL import Image

    from mia.graph.images import ImageError, load_image

    if block.get("type") == "image_url":
        url = block["image_url"]["url"] if isinstance(block.get("image_url"), dict) else block.get("image_url")
        value: Any = url
    elif block.get("base64"):
        value = f"data:{block.get('mime_type') or 'image/png'};base64,{block['base64']}"
    else:
        value = block.get("url") or block.get("path") or ""
    img = load_image(value)
    if img.is_remote:
        raise ImageError(
            "a local vision model needs the image itself: pass a path, bytes or a data URL, not a "
            "remote URL (mia does not download images)"
        )
    return Image.open(io.BytesIO(img.data)).convert("RGB")


def to_chat(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as the processor's chat: text and image parts per turn."""
    chat = []
    for message in messages:
        role = "system" if isinstance(message, SystemMessage) else ROLE_OF.get(message.type, "user")
        parts: list[dict[str, Any]] = []
        for block in [message.content] if isinstance(message.content, str) else message.content:
            if isinstance(block, str):
                parts.append({"type": "text", "text": block})
            elif block.get("type") == "text":
                parts.append({"type": "text", "text": str(block.get("text", ""))})
            elif block.get("type") in ("image", "image_url"):
                parts.append({"type": "image", "image": _image(block)})
        chat.append({"role": role, "content": parts})
    return chat


class VisionChatModel(BaseChatModel):
    """A local vision-language model (transformers) that reads images and text, writes text."""

    model_name: str = Field(default="hf-vision", description="The spec string this model was built from.")
    model_path: str = Field(description="transformers folder of a vision-language model")
    device: str = "cpu"
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    profile: ModelProfile | None = Field(default_factory=lambda: ModelProfile(image_inputs=True, text_inputs=True))

    @property
    def _llm_type(self) -> str:
        return "mia-local-vision"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_path": self.model_path, "device": self.device}

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        loaded = _load(self.model_path, self.device)
        chat = to_chat(messages)
        max_tokens = int(kwargs.get("max_tokens") or self.max_tokens)
        temperature = float(kwargs.get("temperature", self.temperature) or 0.0)
        try:
            inputs = loaded.processor.apply_chat_template(
                chat, add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt"
            )
        except (ValueError, TypeError, KeyError) as err:
            raise BackendError(
                f"{self.model_name}: its processor cannot read this chat ({type(err).__name__}: "
                f"{str(err).splitlines()[0] if str(err) else ''})"
            ) from err
        inputs = inputs.to(loaded.device)
        sampling = (
            {"do_sample": True, "temperature": temperature, "top_p": self.top_p}
            if temperature > 0
            else {"do_sample": False}
        )
        with loaded.lock:
            import torch

            with torch.inference_mode():
                out = loaded.model.generate(**inputs, max_new_tokens=max_tokens, **sampling)
        n_prompt = int(inputs["input_ids"].shape[1])
        new = out[0, n_prompt:]
        text = loaded.processor.batch_decode(new[None, :], skip_special_tokens=True)[0]
        text, cut = truncate_at_stop(text, [s for s in (stop or []) if s])
        message = AIMessage(
            content=text,
            usage_metadata={
                "input_tokens": n_prompt,
                "output_tokens": int(new.shape[0]),
                "total_tokens": n_prompt + int(new.shape[0]),
            },
            response_metadata={
                "finish_reason": "stop" if cut or int(new.shape[0]) < max_tokens else "length",
                "model_name": self.model_name,
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])
