"""llama-bench's model type words, read for what people call the weights: "Q4_K - Medium" is Q4_K_M. The
names are llama.cpp's file-type names (llama_model_ftype_name) as real tables print them, 2023's "mostly"
prefix included (tests/data/real/11_*)."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from pdx.domain.models import words


@pytest.mark.parametrize("model_type, weight_type, quant", [
    ("llama 8B Q4_K - Medium", "q4_k", "Q4_K_M"),
    ("qwen3next 80B.A3B Q4_K - Medium", "q4_k", "Q4_K_M"),
    ("llama 8B Q3_K - Large", "q3_k", "Q3_K_L"),
    ("llama 8B Q2_K - Small", "q2_k", "Q2_K_S"),
    ("llama 8B IQ2_XS - 2.3125 bpw", "iq2_xs", "IQ2_XS"),
    ("gpt-oss 120B MXFP4 MoE", "mxfp4", "MXFP4"),
    ("LLaMA 7B mostly Q8_0", "q8_0", "Q8_0"),
    ("llama 7B all F32", "f32", "F32"),
    ("llama 1B Q4_K - Medium (guessed)", "?", "Q4_K_M (guessed)"),  # llama.cpp counted tensors, not bytes
    ("qwen3moe 30B.A3B all F32 (guessed)", "?", "F32 (guessed)"),
    ("gemma3 27B BF16", "bf16", "BF16"),
])
def test_the_file_type_reads_as_people_write_it(model_type, weight_type, quant):
    read = words.parse(model_type)
    assert (read.weight_type, read.quant) == (weight_type, quant)


def test_a_model_shows_the_quant_its_tool_printed_and_else_its_stored_type():
    assert words.quant_label({"dtype": "Medium", "extra": {"model_type": "llama 8B Q4_K - Medium"}}) == "Q4_K_M"
    assert words.quant_label({"dtype": "Q8_0", "extra": {}}) == "Q8_0"  # a model pdx read itself


_TYPE = st.from_regex(r"(I?Q[1-8]_(K|0|1|XS|XXS|S|M|NL)|F16|BF16|F32|MXFP4)", fullmatch=True)


@given(arch=st.from_regex(r"[a-z][a-z0-9]{1,10}", fullmatch=True),
       size=st.sampled_from(["7B", "?B", "30B.A3B", "8x7B"]), base=_TYPE,
       variant=st.sampled_from(["", " - Small", " - Medium", " - Large", " - 2.06 bpw", " MoE"]), mostly=st.booleans())
def test_any_printed_type_gives_one_word_whose_base_is_the_weight_type(arch, size, base, variant, mostly):
    read = words.parse(f"{arch} {size} {'mostly ' if mostly else ''}{base}{variant}")
    assert read.weight_type == base.lower() and read.quant.startswith(base) and " " not in read.quant
