"""Where a model's weights live, and the decode bandwidth that follows.

Most people run a model too big for their GPU by splitting it: ``-ngl N``
puts N of its layers on the GPU (the output layer too once N exceeds the
layers), ``--n-cpu-moe N`` keeps the experts of the first N layers in host
memory, ``-ot`` overrides place tensors by name. A decode step then reads
each device's share of the bytes at that device's bandwidth, one after the
other, so the step's time is the sum: bytes_gpu / bw_gpu + bytes_host /
bw_host. pdx folds that into one effective bandwidth for the roofline
(bytes / that time), the same for every test of the run.

Where the host's bandwidth is not known (a table from elsewhere, no
``--host-bandwidth``), only the GPU's share is counted: still an upper bound,
and the ceiling says so. A placement pdx cannot read (``-ot`` patterns other
than experts', a partial ``-ngl`` of a model whose layer count is unknown)
gives no decode ceiling, with the reason; prefill keeps its compute bound. On
a unified-memory SoC (Apple, Strix Halo, DGX Spark) both shares come from one
memory, so the split does not change the bound.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pdx.domain.ceilings.roofline import HardwareFigures, ModelFigures

ALL_LAYERS = 99  # llama-bench's default -ngl: every layer, whatever the model


@dataclass(frozen=True)
class Placement:
    gpu_layers: int | None = None  # -ngl; None: not said (a CPU build, or a tool that does not say)
    cpu_moe_layers: int = 0  # --n-cpu-moe
    overrides: str | None = None  # -ot patterns
    split_mode: str | None = None  # -sm: layer, row, none (several GPUs)
    n_layers: int | None = None  # the model's repeating layers, where known

    @property
    def partial(self) -> bool:
        """Whether some weights stay in host memory (the output head goes to the GPU only once -ngl
        exceeds the layers)."""
        if self.overrides or self.cpu_moe_layers > 0:
            return True
        if self.gpu_layers is None:
            return False
        return self.gpu_layers <= self.n_layers if self.n_layers else self.gpu_layers < ALL_LAYERS

    def describe(self) -> str:
        if self.gpu_layers is None and not (self.cpu_moe_layers or self.overrides):
            return "as the engine placed it (not recorded)"
        if not self.partial:
            return f"every layer on the device (ngl {self.gpu_layers})"
        parts = []
        if self.gpu_layers is not None:
            of = f" of {self.n_layers}" if self.n_layers else ""
            parts.append(f"{min(self.gpu_layers, self.n_layers or self.gpu_layers)}{of} layers on the device "
                         f"(ngl {self.gpu_layers})")
        if self.cpu_moe_layers:
            parts.append(f"experts of {self.cpu_moe_layers} layers in host memory (n_cpu_moe)")
        if self.overrides:
            parts.append(f"tensor overrides {self.overrides!r}")
        return "; ".join(parts)

    def to_dict(self) -> dict:
        return {"gpu_layers": self.gpu_layers, "cpu_moe_layers": self.cpu_moe_layers, "overrides": self.overrides,
                "split_mode": self.split_mode, "n_layers": self.n_layers, "partial": self.partial,
                "described": self.describe()}


def _int(value) -> int | None:
    try:
        return int(value) if value is not None and str(value).strip() not in ("", "-") else None
    except (TypeError, ValueError):
        return None


def from_settings(settings: dict, n_layers: int | None = None) -> Placement:
    """A run's placement from llama.cpp's settings (llama-bench's fields or pdx's own)."""
    overrides = settings.get("tensor_buft_overrides") or settings.get("ot")
    overrides = None if str(overrides).strip() in ("", "none", "None", "-") else str(overrides)
    return Placement(gpu_layers=_int(settings.get("n_gpu_layers")), cpu_moe_layers=_int(settings.get("n_cpu_moe")) or 0,
                     overrides=overrides, split_mode=settings.get("split_mode"), n_layers=n_layers or None)


_EXPERT_TENSORS = ("blk.{}.ffn_up_exps.weight", "blk.{}.ffn_gate_exps.weight", "blk.{}.ffn_down_exps.weight")
_OTHER_TENSORS = ("blk.{}.attn_q.weight", "blk.{}.attn_k.weight", "blk.{}.ffn_up.weight", "blk.{}.ffn_down.weight",
                  "blk.{}.ffn_up_shexp.weight", "output.weight", "token_embd.weight")
_PROBE_LAYERS = 256  # a pattern that matches this many layers matches every model's


def expert_layers_on_host(overrides: str, n_layers: int | None) -> int | None:
    """How many layers' experts ``-ot`` patterns move to host memory ("exps=CPU": all of them), or None
    where a pattern moves anything else, or cannot be read (llama.cpp's patterns are regular expressions)."""
    import re

    layers = n_layers or _PROBE_LAYERS
    moved: set[int] = set()
    for part in re.split(r"[;,]", overrides):
        pattern, _, buffer = part.strip().rpartition("=")
        if not pattern:
            return None
        try:
            regex = re.compile(pattern)
        except re.error:
            return None
        matched = {i for i in range(layers) if any(regex.search(t.format(i)) for t in _EXPERT_TENSORS)}
        if any(regex.search(t.format(i)) for t in _OTHER_TENSORS for i in range(layers)):
            return None
        if buffer.upper().startswith("CPU"):
            moved |= matched
        else:
            moved -= matched
    if n_layers is None and 0 < len(moved) < layers:
        return None  # some layers' experts, of a model whose layer count is unknown
    return min(len(moved), n_layers) if n_layers else (len(moved) and layers)


def host_share(place: Placement, model: ModelFigures) -> float | None:
    """The share of a decode step's weight bytes read from host memory (None: cannot be told)."""
    if not place.partial:
        return 0.0
    if place.overrides:
        moved = expert_layers_on_host(place.overrides, place.n_layers)
        if moved is None or not (model.is_moe and model.n_experts) or (place.gpu_layers is not None and place.n_layers
                                                 and place.gpu_layers <= place.n_layers):
            return None
        read = model.weight_bytes(1)
        experts_read = model.expert_bytes * model.expert_coverage(1)
        return min(1.0, experts_read * moved / (place.n_layers or _PROBE_LAYERS) / read) if read else None
    if not place.n_layers:
        return None
    n = place.n_layers
    read = model.weight_bytes(1)
    # the repeating layers hold the file less the embedding table and the output head (one row of the table is read)
    head = read * (model.output_params / model.params) if model.params and model.output_params else 0.0
    layers = read - head
    on_gpu = min(place.gpu_layers if place.gpu_layers is not None else n, n)
    host = layers * (n - on_gpu) / n + (head if (place.gpu_layers or 0) <= n else 0.0)
    if place.cpu_moe_layers and model.is_moe:
        experts_read = model.expert_bytes * model.expert_coverage(1)
        # the experts of the first layers that are on the GPU by -ngl move to the host
        host += experts_read / n * max(0, min(place.cpu_moe_layers, n) - (n - on_gpu))
    return min(1.0, host / read) if read else None


def placed(hw: HardwareFigures, model: ModelFigures, place: Placement, host_bandwidth: float | None,
           unified: bool) -> tuple[HardwareFigures, str | None]:
    """The figures with the effective bandwidth of the placement, and what the ceiling leaves out. Where
    the split cannot be told, or every weight is in host memory of unknown speed, there is no memory
    bound (so no decode ceiling); the compute bound stays, the most any device there could do."""
    share = host_share(place, model)
    if share == 0.0 or unified or not hw.bandwidth:
        return hw, None
    if share is None:
        return replace(hw, bandwidth=None), (
            f"partial offload ({place.describe()}) that pdx cannot split (it reads plain -ngl and --n-cpu-moe "
            "of a model whose layers it knows, and -ot patterns that move experts): no decode ceiling")
    if host_bandwidth:
        effective = 1.0 / ((1 - share) / hw.bandwidth + share / host_bandwidth)
        return replace(hw, bandwidth=effective, label=f"{hw.label}, {share:.0%} of weights in host memory "
                                                      f"({host_bandwidth / 1e9:.4g} GB/s)"), None
    if share >= 1.0:
        return replace(hw, bandwidth=None), ("every weight in host memory, whose bandwidth is unknown: no decode "
                                             "ceiling; give --host-bandwidth")
    return replace(hw, bandwidth=hw.bandwidth / (1 - share), label=f"{hw.label}, device share only"), (
        f"{share:.0%} of the weights read from host memory, whose bandwidth is unknown: only the device's share "
        "is counted (an upper bound); give --host-bandwidth")


def spilled(hw: HardwareFigures, model: ModelFigures, place: Placement, host_bandwidth: float | None,
            unified: bool) -> tuple[HardwareFigures, str | None]:
    """A model bigger than the device memory it was "fully offloaded" to (a 13.7 GiB model on a 12 GB
    card: the driver keeps the rest in host memory, as Windows' NVIDIA driver does) is placed: at least
    the excess is read from host memory each step, so the device share is at most memory / file (the
    whole of the memory taken for weights, an upper bound). With the host's bandwidth the step time
    adds both shares; without it only the device's share is counted and the ceiling says so. A MoE
    does not say which of its weights spill (its unread experts may), so its bound stays the device's."""
    memory, size = hw.memory_bytes, model.file_bytes
    if unified or place.partial or not (memory and size and hw.bandwidth) or size <= memory:
        return hw, None
    gib = f"the model's {size / 2**30:.1f} GiB exceed the device memory's {memory / 2**30:.1f} GiB"
    if model.is_moe:
        return hw, f"{gib}: which weights a MoE keeps in host memory is unknown, so only the device is counted"
    share = (size - memory) / size
    if host_bandwidth:
        effective = 1.0 / ((1 - share) / hw.bandwidth + share / host_bandwidth)
        return replace(hw, bandwidth=effective, label=f"{hw.label}, at least {share:.0%} of weights in host "
                                                      f"memory ({host_bandwidth / 1e9:.4g} GB/s)"), \
            f"{gib}: at least {share:.0%} of the weights are read from host memory"
    return replace(hw, bandwidth=hw.bandwidth / (1 - share), label=f"{hw.label}, device share only"), (
        f"{gib}: at least {share:.0%} of the weights are read from host memory, whose bandwidth is unknown: only "
        "the device's share is counted (an upper bound); give --host-bandwidth")


def across_devices(hw: HardwareFigures, count: int, split_mode: str | None) -> tuple[HardwareFigures, str | None]:
    """Figures for ``count`` alike GPUs. Prefill: each device computes its share at once (llama.cpp
    pipelines ubatches across a layer split; a row split divides each product), so FLOP/s add up. Decode:
    a layer split reads each device's layers one after the other, so the step takes as long as one
    device reading every weight; a row split reads them side by side, so bandwidths add up."""
    if count <= 1:
        return hw, None
    rows = (split_mode or "layer").lower() in ("row", "tensor")
    scaled = replace(hw, flops=hw.flops * count if hw.flops else None,
                     bandwidth=hw.bandwidth * count if hw.bandwidth and rows else hw.bandwidth,
                     prefill_bandwidth=hw.bandwidth * count if hw.bandwidth and not rows else None,
                     memory_bytes=hw.memory_bytes * count if hw.memory_bytes else None,
                     label=f"{count} x {hw.label} ({'row' if rows else 'layer'} split)")
    return scaled, (f"{count} devices: FLOP/s x {count}; bandwidth x {count if rows else 1} "
                    f"({'a row split reads side by side' if rows else 'a layer split reads one device after another'}"
                    f"{'' if rows else f'; prefill x {count}: its ubatches stream through the devices side by side'})")


GIB = 2**30
# macOS lets Metal keep at most this share of a Mac's memory in use (recommendedMaxWorkingSetSize, which
# llama.cpp's ggml_metal_init prints): 2/3 up to 32 GiB (8 GB: 5461.34 MiB, 16 GB: 10922.67 MiB, 32 GB:
# 21845.34 MiB), 3/4 from 64 GiB (64 GB: 49152 MiB, 96 GB: 73728 MiB), as recorded in llama.cpp issues
# #2011, #1870, #3213 and ollama #434. Between the two no log was found, so the larger share is taken: a
# test is called unfit only where no Mac of that memory could hold it.
_METAL_SHARES = ((32 * GIB, 2 / 3), (float("inf"), 3 / 4))


def metal_working_set(memory_bytes: float) -> float:
    """The bytes Metal may use on an Apple SoC of ``memory_bytes`` (macOS's recommended working set)."""
    return memory_bytes * next(share for limit, share in _METAL_SHARES if memory_bytes <= limit)


def unfit(model: ModelFigures, hw: HardwareFigures, vendor: str | None, test: dict) -> str | None:
    """Why a test cannot have run in an Apple GPU's memory, or None: the weights and the test's KV cache
    (llama-bench sizes the context to prompt + generated + depth tokens) above Metal's working set. Past it
    Metal's command buffers fail (llama.cpp issue #2011's log), and llama-bench then times work never done
    (an 8 GB M1 "reached" 1849 t/s at pp8192, its author marks the row out of memory). Compute buffers are
    left out, so the need is a lower bound. The limit is macOS's default: a user who raised it (sysctl
    iogpu.wired_limit_mb) could run more, which a pasted table does not say, so the reason names it. Other chips: None
    (a discrete GPU's driver spills to host memory, :func:`spilled`; other SoCs' limits are set by their
    drivers' settings)."""
    if vendor != "Apple" or not (hw.memory_bytes and model.file_bytes):
        return None
    context = (test.get("n_prompt") or 0) + (test.get("n_gen") or 0) + (test.get("depth") or 0)
    kv = model.kv_bytes_at(context) * max(1, test.get("batch") or 1)
    usable = metal_working_set(hw.memory_bytes)
    if model.file_bytes + kv <= usable:
        return None
    cache = f" and its KV cache at {context} tokens ({kv / GIB:.2f} GiB)" if kv else ""
    return (f"cannot fit: the model's {model.file_bytes / GIB:.2f} GiB{cache} exceed the "
            f"{usable / GIB:.2f} GiB Metal may use of {hw.memory_bytes / GIB:.0f} GiB (macOS's default working set, "
            "unless iogpu.wired_limit_mb was raised); past it Metal's work fails, so this figure is not a measurement")
