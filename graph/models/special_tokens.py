"""Keep chat-template control tokens in message text from acting as control tokens.

llama.cpp and Hugging Face tokenizers read the text `<|im_end|>` inside a message as the special
token itself, so a corpus paragraph or web page holding `<|im_end|>\\n<|im_start|>system` would end
the user turn and open a system turn of the local model's chat template (measured: 50 copies of
`<|im_end|>` in a message add 50 prompt tokens with SmolLM2, 50 copies of `<|im_enx|>` add 351).
A zero-width space after `<` keeps the text readable and makes it plain text to the tokenizer. This
covers the `<|name|>` tokens of ChatML and Llama-3-style templates (the embedded Qwen and SmolLM2).
"""

from __future__ import annotations

import re

_SPECIAL = re.compile(r"<(\|[A-Za-z0-9_]{1,64}\|>)")


def neutralise_special_tokens(text: str) -> str:
    """`<|im_end|>` -> `<\\u200b|im_end|>`: shown the same, tokenised as text."""
    return _SPECIAL.sub("<\u200b\\1", text) if "<|" in text else text
