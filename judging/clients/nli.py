"""The NLI client: the only module of Assay that imports transformers and torch.

A sequence-classification model (DeBERTa MNLI by default) scores whether a premise entails a hypothesis.
The entailment probability is the softmax over all of the model's labels, read at the index whose name in
the model's own `config.id2label` is "entailment" (case-insensitive), since models disagree on the order.
Models load lazily, once per (path, device), in float32 on the GPU when there is one and on the CPU
otherwise.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

if TYPE_CHECKING:  # heavy imports stay lazy: the web process never needs torch
    import torch

DEFAULT_MODEL = "MoritzLaurer/DeBERTa-v3-base-mnli-fever-anli"
MAX_LENGTH = 512


class NliError(Exception):
    """The model could not be loaded or does not look like an NLI classifier."""


def default_model() -> str:
    return str(getattr(settings, "NLI_MODEL", DEFAULT_MODEL) or DEFAULT_MODEL)


def default_threshold() -> float:
    return float(getattr(settings, "NLI_THRESHOLD", 0.5))


def default_batch_size() -> int:
    return int(getattr(settings, "NLI_BATCH_SIZE", 32))


def entailment_index(id2label: dict[Any, str]) -> int:
    """The class index named "entailment" (any case) in a model's `id2label`."""
    matches = [int(index) for index, label in id2label.items() if str(label).strip().lower() == "entailment"]
    if len(matches) != 1:
        raise NliError(f"the model's id2label {dict(id2label)!r} has no single 'entailment' label")
    return matches[0]


@dataclass
class NliModel:
    """A loaded NLI classifier; `entails` applies `threshold` to the entailment probability."""

    name: str
    tokenizer: Any
    model: Any
    device: str
    entailment_label: int
    threshold: float = 0.5
    batch_size: int = 32
    max_length: int = MAX_LENGTH
    calls: int = field(default=0, compare=False)

    def entailment_probs(
        self, pairs: Sequence[tuple[str, str]], *, batch_size: int | None = None
    ) -> list[float]:
        """P(entailment) of each (premise, hypothesis) pair, in the order given.

        Pairs are sorted by length before batching so each batch pads to similar lengths, then the
        results are put back in input order.
        """
        import torch

        size = max(1, batch_size or self.batch_size)
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        probs: list[float] = [0.0] * len(pairs)
        with torch.inference_mode():
            for begin in range(0, len(order), size):
                chunk = order[begin : begin + size]
                encoded = self.tokenizer(
                    [pairs[i][0] for i in chunk],
                    [pairs[i][1] for i in chunk],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                )
                encoded = {key: value.to(self.device) for key, value in encoded.items()}
                logits: torch.Tensor = self.model(**encoded).logits
                self.calls += 1
                chunk_probs = torch.softmax(logits.float(), dim=-1)[:, self.entailment_label].tolist()
                for index, prob in zip(chunk, chunk_probs, strict=True):
                    probs[index] = float(prob)
        return probs

    def entails(self, pairs: Sequence[tuple[str, str]], *, batch_size: int | None = None) -> list[bool]:
        return [prob >= self.threshold for prob in self.entailment_probs(pairs, batch_size=batch_size)]


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@functools.lru_cache(maxsize=4)
def _load(name: str, device: str) -> tuple[Any, Any, int]:
    try:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
    except ImportError as exc:  # the `nli` extra is not installed
        raise NliError(f"NLI judges need torch and transformers (pip install -e '.[nli]'): {exc}") from exc

    # A local directory never goes to the hub; a hub id may download unless HF_HUB_OFFLINE is set.
    local = Path(name).expanduser().is_dir()
    offline = local or os.environ.get("HF_HUB_OFFLINE", "") not in {"", "0"}
    try:
        tokenizer = AutoTokenizer.from_pretrained(name, local_files_only=offline)
        model = AutoModelForSequenceClassification.from_pretrained(
            name, local_files_only=offline, dtype=torch.float32
        )
    except (OSError, ValueError, KeyError) as exc:
        raise NliError(f"cannot load the NLI model {name!r}: {exc}") from exc
    label = entailment_index(model.config.id2label)
    model.to(device)
    model.eval()
    return tokenizer, model, label


def nli_model(
    name: str | None = None,
    *,
    threshold: float | None = None,
    batch_size: int | None = None,
    device: str | None = None,
) -> NliModel:
    """The NLI model at `name` (a local directory or a hub id; settings.NLI_MODEL by default).

    The weights are loaded once per process and shared; each call returns its own handle so callers may
    set their own threshold and batch size.
    """
    name = str(name or default_model())
    if Path(name).expanduser().is_dir():
        name = str(Path(name).expanduser().resolve())
    device = device or _device()
    tokenizer, model, label = _load(name, device)
    threshold = default_threshold() if threshold is None else float(threshold)
    if not 0.0 <= threshold <= 1.0:
        raise NliError(f"the threshold must be a probability in [0, 1], not {threshold}")
    return NliModel(
        name=name,
        tokenizer=tokenizer,
        model=model,
        device=device,
        entailment_label=label,
        threshold=threshold,
        batch_size=batch_size or default_batch_size(),
    )


def clear_cache() -> None:
    """Forget loaded models (tests that rebuild a model in the same folder need this)."""
    _load.cache_clear()
