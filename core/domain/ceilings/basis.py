"""A run's ceiling basis, made in one place for a run pdx measures and for an imported one: which
hardware figures judge it (handed in: this machine's probes are :mod:`pdx.measure.ceiling_sources`'s,
an imported file's chip :mod:`pdx.domain.ceilings.imported`'s), which model figures (the model and its
K/V cache types), where the model lives, the record stored with the run, and each test judged against
every set of figures (both bounds of each phase: :func:`pdx.domain.ceilings.judged`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from pdx.contract.record import Ceilings
from pdx.domain.ceilings import facts, judged, model_figures, predictions
from pdx.domain.ceilings.placement import Placement
from pdx.domain.ceilings.roofline import HardwareFigures, ModelFigures


@dataclass(frozen=True)
class RunBasis:
    """What a run's tests are judged by: ``figures``, every set (the first the one named or detected,
    whose facts the record gives; none: no test has ceilings, and ``record`` says why); ``model``, the
    model's figures; ``record``, the run's ``ceiling_basis``; ``ubatch``, the engine's prompt tokens
    per step; ``draft_bytes``, a speculating engine's draft model's size."""

    figures: tuple[HardwareFigures, ...]
    model: ModelFigures
    record: dict[str, Any]
    ubatch: int | None = None
    draft_bytes: int | None = None

    def judge(self, test: Mapping[str, Any], stats: dict | None) -> Ceilings | None:
        """One test's ceilings (``stats``: its statistics), None without figures."""
        if not self.figures:
            return None
        return judged(test, stats, self.model, list(self.figures), self.ubatch, self.draft_bytes)


def model_of(model: dict, settings: dict) -> ModelFigures:
    """The figures of ``model`` (``ModelInfo.to_dict()`` or a stored run's) under an engine's ``settings``:
    the K and V cache types they name (f16 where they name none)."""
    return model_figures(model, (settings.get("type_k") or "f16", settings.get("type_v") or "f16"))


def run_basis(model: ModelFigures, settings: dict, figures: list[HardwareFigures], record: dict[str, Any],
              place: Placement | None = None, left_out: str | None = None, about: dict[str, Any] | None = None,
              draft_bytes: int | None = None) -> RunBasis:
    """The basis of a run of ``model`` (:func:`model_of`) under an engine's ``settings``, judged by
    ``figures`` (``record``: their record, or why there are none). Where there are figures, the record
    gains what every reader of a ceiling is told (:func:`facts`: ``place``, where the weights live, and
    ``left_out``, what the bound leaves out) and ``about`` (how the figures were chosen); then the ridge
    point and knee batch (:func:`predictions`)."""
    first = figures[0] if figures else None
    if first is not None:
        record = record | facts(first, model, place, left_out) | (about or {})
    record = record | predictions(model, first)
    return RunBasis(tuple(figures), model, record, settings.get("n_ubatch"), draft_bytes)
