"""pdx.base.typed_values: a dataclass built from untyped values checks each against its field's type, and
the catalog shapes and llama.cpp's settings are built through it."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pdx.base.typed_values import dataclass_from
from pdx.contract.errors import ModelError, PdxError
from pdx.domain.synth import get_shape
from pdx.domain.synth.shapes import _shape


@dataclass(frozen=True)
class Row:
    name: str
    count: int
    rate: float = 1.0
    on: bool = False
    size: int | None = None
    tags: tuple[str, ...] = ()


def test_values_of_their_fields_types_build_it_a_json_list_as_a_tuple():
    row = dataclass_from(Row, {"name": "a", "count": 3, "rate": 2, "on": True, "size": None, "tags": ["x"]}, "row")
    assert row == Row("a", 3, 2, True, None, ("x",))
    assert dataclass_from(Row, {"name": "b", "count": 1}, "row") == Row("b", 1)  # defaults where left out


@pytest.mark.parametrize("values, said", [
    ({"name": "a", "count": "3"}, "row: count must be int, not '3'"),
    ({"name": "a", "count": True}, "row: count must be int, not True"),  # a bool is no count
    ({"name": "a", "count": 1, "on": 1}, "row: on must be bool, not 1"),
    ({"name": "a", "count": 1, "tags": "xy"}, "row: tags must be"),
    ({"name": "a", "count": 1, "tags": [1]}, "row: tags must be"),
    ({"name": "a"}, "row: count is missing"),
    ({"name": "a", "count": 1, "colour": "red"}, "row: unknown fields colour"),
])
def test_a_wrong_missing_or_unknown_value_is_one_line_naming_the_field(values, said):
    with pytest.raises(PdxError, match="^" + said.replace("(", r"\(").replace(")", r"\)")):
        dataclass_from(Row, values, "row")


def test_a_catalog_entry_of_a_wrong_type_is_a_model_error_naming_it():
    entry = {"name": "odd", "n_embd": "64", "n_layers": 2, "n_heads": 2, "n_kv_heads": 2, "n_ff": 128,
             "n_vocab": 512}
    with pytest.raises(ModelError, match="model catalog: odd: n_embd must be int, not '64'"):
        _shape(entry)
    assert _shape(entry | {"n_embd": 64, "head_dim": 16}).head_dim == 16


def test_with_dims_changes_the_dims_given_and_checks_them():
    tiny = get_shape("tiny")
    wider = tiny.with_dims(n_embd=tiny.n_embd * 2, n_ff=None)
    assert (wider.name, wider.n_embd, wider.n_ff, wider.aliases) == (f"{tiny.name}-custom", tiny.n_embd * 2,
                                                                     tiny.n_ff, tiny.aliases)
    assert tiny.with_dims(n_ff=None) is tiny
    with pytest.raises(ModelError, match="n_layers must be int"):
        tiny.with_dims(n_layers=2.5)


def test_llama_cpp_settings_are_the_option_values_read_typed():
    from pdx.contract.backend import BackendConfig, read_options
    from pdx.plugins.llamacpp.settings import OPTIONS, parse_settings

    given = {"n_gpu_layers": "0", "n_batch": "512", "flash_attn": "1", "repack": "0", "type_k": "q8_0"}
    settings = parse_settings(BackendConfig(threads=3, options=given), read_options(OPTIONS, given))
    assert settings.to_dict() == {"threads": 3, "n_batch": 512, "n_ubatch": 512, "flash_attn": "on",
                                  "n_gpu_layers": 0, "n_cpu_moe": 0, "type_k": "q8_0", "type_v": "f16",
                                  "repack": False}
