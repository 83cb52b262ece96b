"""How much accelerator memory a fine-tune needs per process, said before it launches.

The model is built on the meta device from its ``config.json`` (``accelerate``'s empty
weights: no memory, no download), so the parameter count is exact for any architecture
transformers knows; the trainable part follows what the trainer does (every parameter for
``full``; for ``lora`` ``rank * (in + out)`` per targeted linear layer, in float32 as PEFT
keeps adapters). Per process, with plain DDP (each process holds a whole copy):

- weights: the parameters in the model's own dtype (``config.json``'s, which is what
  ``from_pretrained`` loads); QLoRA: the targeted linear layers in 4 bits (8) plus their
  quantization constants, the rest in float32 (PEFT's k-bit preparation upcasts it);
- gradients and AdamW's two moments: 3 copies of the trainable parameters, in their dtype;
- activations: ``34 * batch * seq * hidden`` bytes per layer in 16-bit (Korthikanti et al.,
  2022, with fused attention; twice in float32), plus the float32 logits and their
  gradient, ``2 * 4 * batch * seq * vocab``;
- the CUDA context and allocator slack: a fixed 0.5 GiB.

It is an estimate: fragmentation, gradient checkpointing and kernel workspaces move the real
figure. No GPU ran here to compare it with.
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInput
from ..locale.messages import _t
from .config import FinetuneConfig

GIB = 1024**3
OVERHEAD = GIB // 2
BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}
QUANT_BYTES = {4: 0.5 + 0.5 / 64 + 4 / (64 * 256), 8: 1.0 + 4 / 64}  # NF4 + double quant; int8


def empty_model(folder: str, method: str = "sft") -> Any:
    """The model of ``folder`` on the meta device (its shapes, no weights)."""
    from accelerate import init_empty_weights
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSequenceClassification

    try:
        config = AutoConfig.from_pretrained(folder)
    except (OSError, ValueError) as exc:
        raise InvalidInput(
            _t("the model in {folder} has no readable config.json", folder=folder), str(exc)
        ) from None
    with init_empty_weights():
        if method == "rm":
            config.num_labels = 1
            return AutoModelForSequenceClassification.from_config(config), config
        return AutoModelForCausalLM.from_config(config), config


def _targets(model: Any, target: list[str] | str) -> list[Any]:
    """The linear layers LoRA adapts: every one but the output head (``all``), or those
    whose last name is listed."""
    import torch

    heads = {"lm_head", "score"}
    found = []
    for name, module in model.named_modules():
        leaf = name.rsplit(".", 1)[-1]
        if not isinstance(module, torch.nn.Linear) or leaf in heads:
            continue
        if target == "all" or leaf in target:
            found.append(module)
    return found


def estimate(config: FinetuneConfig) -> dict[str, Any]:
    """Bytes per process, by part, and the figures they come from."""
    model, hf_config = empty_model(config.model, config.method)
    params = sum(p.numel() for p in model.parameters())
    dtype = str(getattr(hf_config, "dtype", None) or "float32").replace("torch.", "")
    width = BYTES.get(dtype, 4)
    targets = _targets(model, config.lora.target) if config.finetuning_type == "lora" else []
    if config.finetuning_type == "lora":
        rank = config.lora.rank
        trainable = sum(rank * (m.in_features + m.out_features) for m in targets)
        trainable_width = 4
    else:
        trainable, trainable_width = params, width
    if config.quantization_bit:
        quantized = sum(m.weight.numel() for m in targets)
        weights = quantized * QUANT_BYTES[config.quantization_bit] + (params - quantized) * 4
    else:
        weights = params * width
    hidden = int(getattr(hf_config, "hidden_size", 0) or 0)
    layers = int(getattr(hf_config, "num_hidden_layers", 0) or 0)
    vocab = int(getattr(hf_config, "vocab_size", 0) or 0)
    tokens = config.per_device_train_batch_size * config.cutoff_len
    act_width = 1 if (config.bf16 or config.fp16 or width == 2) else 2
    activations = 34 * tokens * hidden * layers * act_width + 2 * 4 * tokens * vocab
    parts = {
        "weights": int(weights),
        "gradients": trainable * trainable_width,
        "optimizer": 2 * trainable * trainable_width,
        "activations": int(activations),
        "overhead": OVERHEAD,
    }
    total = sum(parts.values())
    return {
        "parameters": params,
        "trainable_parameters": trainable,
        "dtype": dtype,
        "quantization_bit": config.quantization_bit,
        "tokens_per_step": tokens,
        "bytes": parts,
        "total_bytes": total,
        "total_gib": round(total / GIB, 2),
        "per": "process (each of nproc holds all of it; DDP)",
    }


def table(found: dict[str, Any]) -> str:
    """The estimate as lines a person reads."""
    lines = [
        f"parameters {found['parameters']:,} ({found['dtype']}), "
        f"trainable {found['trainable_parameters']:,}",
    ]
    for part, size in [*found["bytes"].items(), ("total", found["total_bytes"])]:
        lines.append(f"  {part:<12} {_size(size):>10}")
    lines[-1] += " per process"
    return "\n".join(lines)


def _size(n: float) -> str:
    return f"{n / GIB:.2f} GiB" if n >= GIB / 10 else f"{n / 1024**2:.1f} MiB"
