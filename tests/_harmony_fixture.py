"""A gpt-oss-format tokenizer for tests (the real one is o200k_harmony, 200k tokens, not downloadable
here): a small byte-level BPE (tokenizers' library, trained on a few sentences, so any text encodes)
with harmony's special tokens as added tokens, ``<|return|>`` as eos, ``<|endoftext|>`` as padding,
and gpt-oss's own chat template (tests/data/gpt_oss_chat_template.jinja: the chat_template.jinja of
openai/gpt-oss-20b's model card, as shipped in trl 1.16.0 ``trl/chat_templates/gptoss.jinja``).

``harmony_tokenizer_dir(path)`` saves it as an HF folder (tokenizer.json, tokenizer_config.json,
chat_template.jinja, a config.json) that ``AutoTokenizer`` and evalkit's hf backend read.
"""
from __future__ import annotations

import json
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent / "data" / "gpt_oss_chat_template.jinja"
SPECIAL = ["<|startoftext|>", "<|endoftext|>", "<|return|>", "<|constrain|>", "<|channel|>", "<|start|>",
           "<|end|>", "<|message|>", "<|call|>"]
CORPUS = ["User asks: What is 2 + 2? Simple arithmetic. Provide answer.", "The answer is 42. #### 42",
          "Janet has 16 eggs and bakes muffins every day.", "Question: how many are left?\nAnswer:",
          "analysis commentary final assistant system developer user functions.get_weather json"]


def build_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|startoftext|>", eos_token="<|return|>",
                                   pad_token="<|endoftext|>")
    fast.add_special_tokens({"additional_special_tokens": [t for t in SPECIAL if t not in
                                                           ("<|startoftext|>", "<|return|>", "<|endoftext|>")]})
    fast.chat_template = TEMPLATE.read_text(encoding="utf-8")
    return fast


def harmony_tokenizer_dir(path) -> str:
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    build_tokenizer().save_pretrained(str(path))
    (path / "config.json").write_text(json.dumps({"model_type": "gpt_oss", "max_position_embeddings": 4096,
                                                  "eos_token_id": [200002, 199999, 200012]}))
    return str(path)
