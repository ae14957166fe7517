"""Write a random-weight model in Hugging Face layout (vLLM, MLX, transformers).

A directory with ``config.json`` (its family's: LlamaForCausalLM, MixtralForCausalLM
for a llama shape with experts, Gemma3ForCausalLM, GptOssForCausalLM; see
:mod:`pdx.domain.synth.families`), ``model.safetensors`` under the HF tensor names (MLX's
quantised types in mlx-lm's own layout, where the family's differs), a tokenizer
built with the ``tokenizers`` package (``tokenizer.json`` +
``tokenizer_config.json``) over exactly the model's
vocabulary, the one the synthetic GGUF has (:mod:`pdx.domain.synth.vocabulary`), so
a text is the same ids here and in llama.cpp, and ``generation_config.json``.
``tie_word_embeddings`` is always written out: mlx-lm defaults it to true and
then silently drops ``lm_head.weight``.

The tensor plan is public (:func:`hf_tensor_plan`) so other layouts of the
same shape (MLX quantised weights) can reuse it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from pdx.contract.errors import ModelError
from pdx.base.paths import cache_dir
from pdx.domain.synth import vocabulary
from pdx.domain.synth.mlx_quant import MLX_QUANT_TYPES, quantization_config, quantized_plan
from pdx.domain.synth.safetensors_writer import TensorPlan, write_safetensors
from pdx.domain.synth.shapes import Shape, get_shape
from pdx.domain.synth.vocabulary import BOS_ID, EOS_ID, SPECIAL_TOKENS
from pdx.domain.synth.weights import random_f16

# numpy is imported by the functions that make weights: finding a model already written needs none.
if TYPE_CHECKING:
    import numpy as np

# name -> (safetensors dtype, config torch_dtype)
HF_TYPES = {"float32": ("F32", "float32"), "float16": ("F16", "float16"), "bfloat16": ("BF16", "bfloat16")}
_ALIASES = {"f32": "float32", "fp32": "float32", "f16": "float16", "fp16": "float16", "bf16": "bfloat16",
            "q4": "mlx-q4", "q8": "mlx-q8"}


def hf_dtype(name: str) -> str:
    dtype = _ALIASES.get(name.lower(), name.lower())
    if dtype not in HF_TYPES and dtype not in MLX_QUANT_TYPES:
        choices = ", ".join([*HF_TYPES, *MLX_QUANT_TYPES])
        raise ModelError(f"unknown HF weight type {name!r}", f"choose one of: {choices} (mlx-q*: MLX only)")
    return dtype


def default_hf_path(shape: str, dtype: str, seed: int = 0) -> Path:
    suffix = "" if seed == 0 else f"-s{seed}"
    return cache_dir("models") / f"synth-{shape}-{hf_dtype(dtype)}{suffix}-hf"


def hf_tensor_shapes(shape: Shape, layout: str = "hf") -> list[tuple[str, tuple[int, ...]]]:
    """(HF name, torch shape) of every tensor, in file order, as the shape's family names them
    (:mod:`pdx.domain.synth.families`); ``layout="mlx"``: mlx-lm's own, where its family's differs."""
    return [(name, dims) for name, dims, _ in _named_tensors(shape, layout)]


def _named_tensors(shape: Shape, layout: str) -> list[tuple[str, tuple[int, ...], str]]:
    family = shape.family
    return (family.mlx_tensors if layout == "mlx" and family.mlx_tensors else family.hf_tensors)(shape)


def _values(rng: np.random.Generator, st_dtype: str, dims: tuple[int, ...], fill: float | None) -> np.ndarray:
    import numpy as np

    count = int(np.prod(dims))
    if fill is not None:  # norms that keep activations' scale; zero biases and sinks
        values = np.full(count, fill, dtype=np.float16)
    else:
        values = random_f16(rng, count)
    if st_dtype == "BF16":  # bfloat16 is float32's upper half
        return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return values if st_dtype == "F16" else values.astype(np.float32)


def hf_tensor_plan(shape: Shape, dtype: str, seed: int = 0, layout: str = "hf") -> list[TensorPlan]:
    """The tensors of ``shape`` as lazily produced random values of ``dtype``, in file order; MLX's
    quantised types in mlx-lm's own layout."""
    import numpy as np

    if bits := MLX_QUANT_TYPES.get(hf_dtype(dtype)):
        return quantized_plan(hf_tensor_plan(shape, "float16", seed, layout="mlx"), bits, seed)
    st_dtype = HF_TYPES[hf_dtype(dtype)][0]
    rng = np.random.default_rng(seed)  # consumed in plan order, so the bytes depend only on shape and seed
    family = shape.family
    return [TensorPlan(name, st_dtype, dims, lambda dims=dims, fill=family.fill(role, "hf"):
                       _values(rng, st_dtype, dims, fill))
            for name, dims, role in _named_tensors(shape, layout)]


def hf_config(shape: Shape, dtype: str, seed: int = 0) -> dict:
    bits = MLX_QUANT_TYPES.get(hf_dtype(dtype))
    torch_dtype = "float16" if bits else HF_TYPES[hf_dtype(dtype)][1]
    quantized = {"quantization": quantization_config(bits), "quantization_config": quantization_config(bits)} \
        if bits else {}  # mlx-lm reads the first; Hugging Face tools the second
    return quantized | {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": shape.n_embd,
        "intermediate_size": shape.n_ff,
        "num_hidden_layers": shape.n_layers,
        "num_attention_heads": shape.n_heads,
        "num_key_value_heads": shape.n_kv_heads,
        "head_dim": shape.head_dim,
        "hidden_act": "silu",
        "max_position_embeddings": shape.n_ctx,
        "rms_norm_eps": shape.family.rms_eps,
        "rope_theta": shape.rope_theta,
        "vocab_size": shape.n_vocab,
        "tie_word_embeddings": shape.tie_embeddings,
        "attention_bias": False,
        "mlp_bias": False,
        "bos_token_id": BOS_ID,
        "eos_token_id": EOS_ID,
        "torch_dtype": torch_dtype,
        "dtype": torch_dtype,  # transformers 5 reads this name
        "_name_or_path": f"pdx-synth-{shape.name}-{hf_dtype(dtype)}",
        "pdx_synthetic_shape": shape.name,
        "pdx_synthetic_seed": seed,
    } | shape.family.hf_config(shape)


def write_tokenizer(directory: Path, n_vocab: int, n_ctx: int) -> None:
    """The synthetic vocabulary as a byte-fallback BPE (the layout of Llama's own tokenizer.json): the
    same text gives the same ids as llama.cpp's SentencePiece over the GGUF's tokens."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers

    vocab = {token: i for i, token in enumerate(vocabulary.tokens(n_vocab))}
    tokenizer = Tokenizer(models.BPE(vocab, vocabulary.merges(n_vocab), unk_token="<unk>", byte_fallback=True,
                                     fuse_unk=True))
    space = vocabulary.SPACE
    tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend(space), normalizers.Replace(" ", space)])
    tokenizer.decoder = decoders.Sequence([decoders.Replace(space, " "), decoders.ByteFallback(), decoders.Fuse(),
                                           decoders.Strip(" ", 1, 0)])
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    tokenizer.save(str(directory / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>",
        "add_bos_token": False, "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": n_ctx,
    }
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    (directory / "special_tokens_map.json").write_text(
        json.dumps({"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"}, indent=2) + "\n")


def is_synthetic(directory: Path) -> bool:
    """Whether ``directory`` holds a synthetic model pdx wrote (its config says so)."""
    try:
        config = json.loads((Path(directory) / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and "pdx_synthetic_shape" in config


def write_hf(shape: Shape, dtype: str, directory: Path, seed: int = 0, replace: bool = False) -> Path:
    """Write ``shape`` with random ``dtype`` weights as an HF model directory (atomically). ``replace``:
    a synthetic model pdx wrote there before is replaced, as a GGUF file is (any other folder that is
    not empty is refused)."""
    directory = Path(directory)
    dtype = hf_dtype(dtype)
    replacing = directory.is_dir() and any(directory.iterdir())
    if replacing and not (replace and is_synthetic(directory)):
        raise ModelError(f"{directory} exists and is not empty" + (" and holds no synthetic model pdx wrote"
                                                                    if replace else ""), "give a new directory")
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = directory.with_name(f".{directory.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        config = hf_config(shape, dtype, seed)
        (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        generation = {"bos_token_id": BOS_ID, "eos_token_id": EOS_ID}
        (tmp / "generation_config.json").write_text(json.dumps(generation, indent=2) + "\n")
        write_tokenizer(tmp, shape.n_vocab, shape.n_ctx)
        write_safetensors(tmp / "model.safetensors", hf_tensor_plan(shape, dtype, seed), {"format": "pt"})
        if replacing:  # the old model moves aside, the new one takes its name, the old one goes
            old = directory.with_name(f".{directory.name}.{os.getpid()}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(directory, old)
            try:
                os.replace(tmp, directory)
            except BaseException:
                os.replace(old, directory)
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            if directory.exists():
                directory.rmdir()
            os.replace(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return directory


def ensure_hf(shape: str, dtype: str, seed: int = 0) -> Path:
    """The cached synthetic HF model of ``shape`` and ``dtype``, written on first use (again where an older
    pdx cached it in another architecture: Gemma 3 and gpt-oss shapes were once written as llama)."""
    path = default_hf_path(shape, dtype, seed)
    chosen = get_shape(shape)
    try:
        cached = json.loads((path / "config.json").read_text()).get("architectures")
    except (OSError, ValueError):
        cached = None
    if cached != hf_config(chosen, dtype, seed)["architectures"]:
        shutil.rmtree(path, ignore_errors=True)  # pdx's own cache folder
        write_hf(chosen, dtype, path, seed)
    return path
