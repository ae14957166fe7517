"""A model's identity, declared once: :class:`ModelInfo`, what a backend loads and what pdx reads of a
model file (:mod:`pdx.domain.models`), and :data:`Model`, the same fields as a run record's ``model``
entry (:mod:`pdx.contract.record`), which the registry's model table, its field list and the bundle
schema's checks read.

Why the dataclass is the declaration and the record's type is generated from it, not the reverse: the
dataclass is what code reads field by field (``model.n_params`` in backends, ceilings, plugins), so a
type checker must see its fields as they are written; the record's entry is a dict that readers index
by name and the registry walks field by field (:func:`pdx.contract.record.fields`), which the generated
``TypedDict`` serves at run time. A checker sees :data:`Model` as a plain JSON object (a ``TypedDict``
built from a computed list of fields is none it can read), so no field is declared twice for its sake.
The model table (:class:`pdx.registry.schema.Model`) is laid out for storage and typed for its queries
(its id is the sha256); a test holds it to these fields.
"""

# No postponed annotations: the record's type is built from the evaluated ones.
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Optional, get_type_hints

from typing_extensions import TypedDict


@dataclass
class ModelInfo:
    """A model as pdx read it: its file (or directory), its shape and its content hash, its identity."""

    path: str  # where it was last seen
    name: str
    format: str  # "gguf" or "hf"
    architecture: str
    n_params: int
    dtype: str  # F16, Q4_0, float32...
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    n_embd: int
    n_ff: int
    n_vocab: int
    n_ctx_train: int
    file_bytes: int
    sha256: str  # of the file's content: the model's identity
    synthetic: Optional[str] = None  # the pdx shape it was made from, if any
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.sha256

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_record(self) -> "Model":
        """This model as a run record's ``model`` entry: its fields and its id."""
        return record_of(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ModelInfo":
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


def record_of(fields: dict[str, Any]) -> "Model":
    """A model's fields (:meth:`ModelInfo.to_dict`'s, or an importer's) as a record's entry, in the
    record's order: its id (the sha256) first."""
    return {"id": fields["sha256"], **{name: fields[name] for name in MODEL_FIELD_NAMES}}


# The record's entry: the id it is known by, then the dataclass's fields; every one required (a record
# made before a field existed is read back from the table, which has all of them).
MODEL_FIELD_NAMES = ("sha256", *(name for name in ModelInfo.__dataclass_fields__ if name != "sha256"))
if TYPE_CHECKING:
    Model = dict[str, Any]
else:
    _hints = get_type_hints(ModelInfo, include_extras=True)
    Model = TypedDict("Model", {"id": str, **{name: _hints[name] for name in MODEL_FIELD_NAMES}})
