"""A tiny, randomly initialised LLaVA (CLIP vision tower + Llama text model, 49k parameters) with
its processor, built offline: the plumbing of local vision models tested without any download."""

from __future__ import annotations

from pathlib import Path

WORDS = [
    "<unk>",
    "<pad>",
    "<s>",
    "</s>",
    "<image>",
    "user",
    "assistant",
    "system",
    ":",
    "\n",
    *[f"w{i}" for i in range(200)],
]
TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }} :"
    "{% if m['content'] is string %} {{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %} <image>{% elif c['type'] == 'text' %} {{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %} \n{% endfor %}{% if add_generation_prompt %}assistant :{% endif %}"
)


def make_tiny_llava(folder: Path) -> Path:
    """Write the model and its processor to `folder` (save_pretrained layout) and return it."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    vocab = {w: i for i, w in enumerate(WORDS)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        unk_token="<unk>",
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        extra_special_tokens={"image_token": "<image>"},
    )
    tokenizer.chat_template = TEMPLATE
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": 30}, crop_size={"height": 30, "width": 30}),
        tokenizer=tokenizer,
        patch_size=6,
        vision_feature_select_strategy="default",
        chat_template=TEMPLATE,
        num_additional_image_tokens=1,
    )
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=32,
            intermediate_size=37,
            num_hidden_layers=2,
            num_attention_heads=4,
            image_size=30,
            patch_size=6,
            projection_dim=32,
        ),
        text_config=LlamaConfig(
            vocab_size=len(WORDS),
            hidden_size=32,
            intermediate_size=37,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=4,
            max_position_embeddings=256,
        ),
        image_token_index=vocab["<image>"],
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    torch.manual_seed(0)
    model = LlavaForConditionalGeneration(config)
    model.generation_config.pad_token_id = vocab["<pad>"]
    model.generation_config.eos_token_id = vocab["</s>"]
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder
