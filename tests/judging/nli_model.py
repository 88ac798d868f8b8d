"""A tiny randomly initialised DeBERTa-v2 NLI model and tokenizer, built locally without any download.

The tokenizer is a `tokenizers` WordLevel model trained on the sentences given, wrapped in
PreTrainedTokenizerFast; the model is DebertaV2ForSequenceClassification with tiny sizes and "entailment"
at a non-zero index of `id2label` (in upper case), so the client must read the index from the config.
Both are saved with save_pretrained, and tests load them through the same code path as the real model.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

ID2LABEL = {0: "neutral", 1: "contradiction", 2: "ENTAILMENT"}

SENTENCES = [
    "The Eiffel Tower is in Paris and is 330 metres tall.",
    "Paris is the capital of France.",
    "A marathon is 42.195 kilometres long.",
    "Vegetarian diets can provide enough protein from lentils, beans and tofu.",
    "The user lives in Amsterdam and cycles to work every day.",
    "Running shoes should be replaced every 500 to 800 kilometres.",
    "Electric cars are cheaper to maintain than petrol cars.",
    "The museum opens at nine in the morning and closes at six.",
]


def build_tiny_nli_model(
    folder: Path, *, sentences: Iterable[str] = SENTENCES, seed: int = 0, hidden_size: int = 32
) -> Path:
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification, PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(
        list(sentences), trainers.WordLevelTrainer(special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"])
    )
    cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        model_max_length=256,
    )
    config = DebertaV2Config(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=hidden_size,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=2 * hidden_size,
        max_position_embeddings=256,
        type_vocab_size=0,  # like DeBERTa-v3: no token type embeddings
        pad_token_id=0,
        # A wide initialisation spreads the random logits so thresholds split the pairs.
        initializer_range=0.5,
        id2label=ID2LABEL,
        label2id={label: index for index, label in ID2LABEL.items()},
    )
    torch.manual_seed(seed)
    model = DebertaV2ForSequenceClassification(config).eval()
    folder.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(folder)
    model.save_pretrained(folder)
    return folder
