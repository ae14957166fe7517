"""Model identity: what a model file is, read from its own metadata.

A GGUF file is read through the ``gguf`` package; a Hugging Face directory
(config.json + safetensors) through its JSON headers. Mixture-of-experts
models are told by their metadata (expert counts) and their tensor tables
(GGUF's ``*_exps`` tensors, HF's ``.experts.`` weights), which give the
exact bytes of the routed experts and of everything else; the ``extra``
dict keeps them (``experts``), and sliding-window attention
(``sliding_window``, ``sliding_layers``) beside them. The content hash is
what identifies a model across machines. What a file's read found is cached
(:mod:`pdx.domain.models.cache`): a 4 GB file is hashed once, and a GGUF file's
metadata and vocabulary are parsed once, until the file changes.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path
from typing import get_origin

from pdx.contract import record
from pdx.contract.errors import ModelError
# Declared in the contract (a backend loads one); kept importable here, where pdx 0.1 had it.
from pdx.contract.model import ModelInfo as ModelInfo
from pdx.domain.models import cache
from pdx.domain.models.cache import content_hash

GGUF_MAGIC = b"GGUF"


def identify(path: str | os.PathLike) -> ModelInfo:
    """Read a model's identity; raise :class:`ModelError` with the fix if it cannot be read."""
    p = Path(path).expanduser()
    if not p.exists():
        raise ModelError(f"model not found: {p}", "give the path of a .gguf file or model directory")
    if p.is_dir():
        if (p / "config.json").is_file():
            return _identify_hf(p)
        raise ModelError(f"{p} is a directory without "
                         f"config.json", "give a .gguf file or a Hugging Face model directory")
    with p.open("rb") as fh:
        magic = fh.read(4)
    if magic != GGUF_MAGIC:
        raise ModelError(f"{p} is not a GGUF file (it does not start with 'GGUF')", "give a .gguf model file")
    key = cache.file_key(p)
    known = _checked(cache.load_identity(key))
    if known is not None:
        return known
    info = _identify_gguf(p)
    cache.store_identity(key, info.to_dict())
    return info


# What a field of a ModelInfo may hold when read back from the cache, by its declared kind.
_FIELD_TYPES: dict[object, tuple[type, ...]] = {str: (str,), int: (int,), dict: (dict,)}


def _checked(data: dict | None) -> ModelInfo | None:
    """A cached identity as a ModelInfo, or None where any field is missing or of the wrong type."""
    if data is None:
        return None
    for spec in record.fields(record.Model)[1:]:  # its fields but the id the record adds
        kinds = _FIELD_TYPES[get_origin(spec.kind) or spec.kind] + ((type(None),) if spec.nullable else ())
        if spec.name not in data or not isinstance(data[spec.name], kinds) or isinstance(data[spec.name], bool):
            return None
    if len(data["sha256"]) != 64:
        return None
    return ModelInfo.from_dict(data)


def _identify_gguf(path: Path) -> ModelInfo:
    import gguf  # numpy-heavy; imported only when a model is read

    try:
        reader = gguf.GGUFReader(path)
    except Exception as exc:  # a truncated or corrupt file fails in many ways inside gguf
        raise ModelError(f"{path} cannot be read as GGUF: {exc}", "check the download is complete") from None

    def field_value(key: str, default=None):
        f = reader.get_field(key)
        return f.contents() if f is not None else default

    arch = field_value("general.architecture")
    if not arch:
        raise ModelError(f"{path} has no general.architecture in its metadata")
    n_embd = int(field_value(f"{arch}.embedding_length", 0))
    n_heads = int(field_value(f"{arch}.attention.head_count", 0) or 0)
    n_kv = field_value(f"{arch}.attention.head_count_kv", n_heads)
    head_dim = int(field_value(f"{arch}.attention.key_length", 0) or (n_embd // n_heads if n_heads else 0))
    tokens = reader.get_field("tokenizer.ggml.tokens")
    n_vocab = int(field_value(f"{arch}.vocab_size", 0) or (len(tokens.data) if tokens else 0))
    counts: dict[str, int] = {}
    type_bytes: dict[str, int] = {}  # bytes per weight type, from the tensor table, not the type's name
    for t in reader.tensors:
        if len(t.shape) > 1:
            counts[t.tensor_type.name] = counts.get(t.tensor_type.name, 0) + int(t.n_elements)
            type_bytes[t.tensor_type.name] = type_bytes.get(t.tensor_type.name, 0) + int(t.n_bytes)
    n_layers = int(field_value(f"{arch}.block_count", 0) or 0)
    file_type = field_value("general.file_type")
    dtype = (_file_type_name(file_type) if file_type is not None
             else max(counts, key=lambda name: counts[name], default="?"))
    stat = path.stat()
    return ModelInfo(
        path=str(path.resolve()),
        name=str(field_value("general.name") or path.stem),
        format="gguf",
        architecture=str(arch),
        n_params=sum(int(t.n_elements) for t in reader.tensors),
        dtype=dtype,
        n_layers=n_layers,
        n_heads=n_heads,
        n_kv_heads=int(n_kv if not isinstance(n_kv, list) else max(n_kv)),
        head_dim=head_dim,
        n_embd=n_embd,
        n_ff=int(field_value(f"{arch}.feed_forward_length", 0) or 0),
        n_vocab=n_vocab,
        n_ctx_train=int(field_value(f"{arch}.context_length", 0) or 0),
        file_bytes=stat.st_size,
        sha256=content_hash(path),
        synthetic=field_value("pdx.synthetic.shape"),
        extra={"tensor_types": counts, "tensor_type_bytes": type_bytes} | _gguf_embeddings(reader.tensors)
        | _gguf_experts(arch, field_value, reader.tensors) | _gguf_sliding(arch, field_value, n_layers),
    )


# Every n-th layer attends to the whole context, the others to a window, where the GGUF
# metadata gives the window but not the pattern (llama.cpp sets these per architecture).
_SLIDING_PATTERN = {"gpt-oss": 2, "gemma2": 2, "gemma3": 6}


def _gguf_sliding(arch: str, field_value, n_layers: int) -> dict:
    window = field_value(f"{arch}.attention.sliding_window")
    if not window or not n_layers:
        return {}
    pattern = field_value(f"{arch}.attention.sliding_window_pattern")
    if isinstance(pattern, list):  # one flag per layer
        sliding = sum(bool(p) for p in pattern)
    else:
        every = int(pattern) if pattern else _SLIDING_PATTERN.get(arch)
        sliding = n_layers - n_layers // every if every else n_layers
    return {"sliding_window": int(window), "sliding_layers": int(sliding)}


def _gguf_experts(arch: str, field_value, tensors) -> dict:
    """Routed experts (``ffn_*_exps``), shared experts (``*_shexp``) and the rest, from the tensor table."""
    routed = [t for t in tensors if "_exps." in t.name]
    count = int(field_value(f"{arch}.expert_count", 0) or 0)
    if not routed and not count:
        return {}
    shared = [t for t in tensors if "_shexp." in t.name]
    return {"experts": expert_summary(
        count=count, used=int(field_value(f"{arch}.expert_used_count", 0) or 0),
        shared=int(field_value(f"{arch}.expert_shared_count", 0) or 0),
        total_params=sum(int(t.n_elements) for t in tensors), total_bytes=sum(int(t.n_bytes) for t in tensors),
        expert_params=sum(int(t.n_elements) for t in routed), expert_bytes=sum(int(t.n_bytes) for t in routed),
        shared_params=sum(int(t.n_elements) for t in shared), shared_bytes=sum(int(t.n_bytes) for t in shared),
    )}


def expert_summary(count: int, used: int, shared: int, total_params: int, total_bytes: int, expert_params: int,
                   expert_bytes: int, shared_params: int = 0, shared_bytes: int = 0) -> dict:
    """The ``experts`` entry of a model's extra: counts, exact bytes and parameters of the routed
    experts and of the rest (shared experts are always active, so they count with the rest),
    and the active parameters (the rest + used/count of the routed experts)."""
    active = total_params - expert_params * (count - used) / count if count and used else None
    return {"count": count, "used": used, "shared": shared,
            "expert_params": expert_params, "expert_bytes": expert_bytes,
            "shared_expert_params": shared_params, "shared_expert_bytes": shared_bytes,
            "non_expert_params": total_params - expert_params, "non_expert_bytes": total_bytes - expert_bytes,
            "total_params": total_params, "active_params": round(active) if active is not None else None}


def _gguf_embeddings(tensors) -> dict:
    """The token-embedding table and logits head, which ceilings treat apart
    (the table is a lookup, not a matrix product; a tied head reuses it)."""
    by_name = {t.name: t for t in tensors}
    embd, out = by_name.get("token_embd.weight"), by_name.get("output.weight")
    if embd is None:
        return {}
    head = out or embd
    return {"embedding_params": int(embd.n_elements), "embedding_bytes": int(embd.n_bytes),
            "output_params": int(head.n_elements), "tied_embeddings": out is None}


def _file_type_name(value: int) -> str:
    import gguf

    try:
        name = gguf.LlamaFileType(int(value)).name
    except ValueError:
        return f"ftype{value}"
    return name.removeprefix("MOSTLY_").removeprefix("ALL_")


_SAFETENSORS_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "U32": 4, "I16": 2, "I8": 1, "U8": 1,
                      "BOOL": 1}


def _identify_hf(path: Path) -> ModelInfo:
    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, ValueError) as exc:
        raise ModelError(f"{path / 'config.json'} cannot be read: {exc}") from None
    dtypes: dict[str, int] = {}
    n_params, embedding_bytes, has_head = 0, 0, False
    total_bytes, expert_params, expert_bytes, shared_params, shared_bytes = 0, 0, 0, 0, 0
    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise ModelError(f"{path} has no .safetensors weights", "give a Hugging Face model directory")
    tensors = {name: meta for f in files for name, meta in _safetensors_header(f).items() if name != "__metadata__"}
    quant = config.get("quantization") or config.get("quantization_config")
    quant = quant if isinstance(quant, dict) and "bits" in quant else None
    for name, meta in tensors.items():
        count = 1
        for dim in meta["shape"]:
            count *= dim
        params = _mlx_logical_params(name, tensors, quant) if quant else count
        n_params += params
        dtypes[meta["dtype"]] = dtypes.get(meta["dtype"], 0) + count
        nbytes = count * _SAFETENSORS_BYTES.get(meta["dtype"], 2)
        total_bytes += nbytes
        if "embed_tokens." in name:  # weight, and scales/biases when quantised
            embedding_bytes += nbytes
        if ".experts." in name:  # Mixtral's experts.{j}.w1, Qwen's experts.{j}.gate_proj, gpt-oss's fused ones
            expert_params, expert_bytes = expert_params + params, expert_bytes + nbytes
        elif ".shared_expert" in name:
            shared_params, shared_bytes = shared_params + params, shared_bytes + nbytes
        has_head = has_head or name.startswith("lm_head.")
    dtype = f"q{quant['bits']}" if quant else max(dtypes, key=lambda name: dtypes[name])
    n_heads = int(config.get("num_attention_heads", 0))
    n_embd = int(config.get("hidden_size", 0))
    table = int(config.get("vocab_size", 0)) * n_embd
    total = sum(f.stat().st_size for f in path.iterdir() if f.is_file())
    return ModelInfo(
        path=str(path.resolve()),
        name=str(config.get("_name_or_path") or path.name),
        format="hf",
        architecture=str(config.get("model_type", "?")),
        n_params=n_params,
        dtype=str(dtype).lower(),
        n_layers=int(config.get("num_hidden_layers", 0)),
        n_heads=n_heads,
        n_kv_heads=int(config.get("num_key_value_heads", n_heads)),
        head_dim=int(config.get("head_dim") or (n_embd // n_heads if n_heads else 0)),
        n_embd=n_embd,
        n_ff=int(config.get("intermediate_size", 0)),
        n_vocab=int(config.get("vocab_size", 0)),
        n_ctx_train=int(config.get("max_position_embeddings", 0)),
        file_bytes=total,
        sha256=_directory_hash(path),
        synthetic=config.get("pdx_synthetic_shape"),
        extra={"tensor_dtypes": dtypes, "embedding_params": table, "embedding_bytes": embedding_bytes,
               "output_params": table, "tied_embeddings": not has_head}
        | _hf_experts(config, n_params, total_bytes, expert_params, expert_bytes, shared_params, shared_bytes)
        | _hf_sliding(config),
    )


def _hf_experts(config: dict, n_params: int, total_bytes: int, expert_params: int, expert_bytes: int,
                shared_params: int, shared_bytes: int) -> dict:
    count = int(config.get("num_local_experts") or config.get("num_experts") or config.get("n_routed_experts") or 0)
    if not count and not expert_params:
        return {}
    used = int(config.get("num_experts_per_tok") or config.get("experts_per_token") or 0)
    shared = int(config.get("n_shared_experts") or (1 if config.get("shared_expert_intermediate_size") else 0))
    return {"experts": expert_summary(count, used, shared, n_params, total_bytes, expert_params, expert_bytes,
                                      shared_params, shared_bytes)}


def _hf_sliding(config: dict) -> dict:
    from pdx.domain.models.kvcache import config_sliding_layers

    window, sliding = config_sliding_layers(config)
    return {"sliding_window": window, "sliding_layers": sliding} if window and sliding else {}


def _mlx_logical_params(name: str, tensors: dict, quant: dict) -> int:
    """The parameters a tensor of an MLX-quantised model holds: a packed ``weight`` (uint32 words) as many
    as its groups hold (one scale each, ``group_size`` weights a group; a layer may have a size of its own),
    its ``scales`` and ``biases`` none; any other tensor its elements."""
    base, _, kind = name.rpartition(".")
    scales = tensors.get(f"{base}.scales")
    packed = tensors.get(f"{base}.weight", {}).get("dtype") == "U32" and scales is not None
    if packed and kind in ("scales", "biases"):
        return 0
    if scales is not None and packed and kind == "weight":
        layer = quant.get(base)
        group = int((layer if isinstance(layer, dict) else quant).get("group_size", 64))
        groups = 1
        for dim in scales["shape"]:
            groups *= dim
        return groups * group
    count = 1
    for dim in tensors[name]["shape"]:
        count *= dim
    return count


def hf_tensor_names(directory: str | os.PathLike) -> list[str]:
    """The tensor names of a Hugging Face directory's safetensors files, from their headers."""
    return [name for f in sorted(Path(directory).glob("*.safetensors")) for name in _safetensors_header(f)
            if name != "__metadata__"]


def _safetensors_header(path: Path) -> dict:
    try:
        with path.open("rb") as fh:
            (length,) = struct.unpack("<Q", fh.read(8))
            return json.loads(fh.read(length))
    except (OSError, ValueError, struct.error) as exc:
        raise ModelError(f"{path} is not a readable safetensors file: {exc}") from None


def _directory_hash(path: Path) -> str:
    digest = hashlib.sha256()
    for f in sorted(p for p in path.iterdir() if p.is_file()):
        digest.update(f.name.encode() + b"\0" + content_hash(f).encode())
    return digest.hexdigest()
