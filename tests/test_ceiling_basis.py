"""A run's ceiling basis in one function (pdx.domain.ceilings.basis.run_basis), which the runner's use case
(through pdx.measure.ceiling_sources.measured_basis) and the importers call: the record it stores and the
ceilings it sets are those of the figures it is handed."""

from pdx.domain import ceilings
from pdx.domain.ceilings.basis import model_of, run_basis
from pdx.domain.hardware import catalog
from pdx.measure import ceiling_sources as sources

MODEL = {"name": "dense-8b", "file_bytes": 4.9e9, "n_params": 8.0e9, "n_layers": 32, "n_heads": 32, "n_kv_heads": 8,
         "head_dim": 128, "n_embd": 4096, "n_vocab": 128256, "extra": {}}
TEST = {"n_prompt": 512, "n_gen": 128, "depth": 0, "batch": 1}


def test_a_basis_with_figures_records_their_facts_and_predictions_and_judges_each_test():
    chip = catalog.lookup("H100 SXM5")
    figures = ceilings.chip_figures(chip, "fp16")
    settings = {"type_k": "q8_0", "n_ubatch": 256}
    basis = run_basis(model_of(MODEL, settings), settings, [figures], ceilings.basis_record(figures, "fp16"),
                      about={"imported": True})
    assert basis.model.kv_element_bytes == (1.0625 + 2) / 2  # q8_0 keys, f16 values
    assert basis.record["figures_from"] and basis.record["kv_counted"] and basis.record["imported"]
    assert basis.record["knee_batch"] == ceilings.predictions(basis.model, figures)["knee_batch"]
    assert basis.judge(TEST, None) == ceilings.judged(TEST, None, basis.model, [figures], 256)


def test_a_basis_without_figures_keeps_its_reason_and_judges_nothing():
    why = {"version": ceilings.CEILINGS_VERSION, "source": "none", "reason": "chip unknown"}
    basis = run_basis(model_of(MODEL, {}), {}, [], why)
    assert basis.record == why and basis.judge(TEST, None) is None


def test_a_run_measured_here_has_no_figures_for_a_server_elsewhere_or_a_model_known_by_name():
    machine = {"id": "m", "name": "a machine", "kind": "cpu"}
    remote = sources.measured_basis(machine, MODEL, 4, {}, {}, remote=True)
    assert not remote.figures and "the server runs elsewhere" in remote.record["reason"]
    named = sources.measured_basis(machine, MODEL | {"n_params": 0}, 4, {}, {}, name="H100 SXM5")
    assert not named.figures and named.record["reason"] == "the model's dimensions are unknown"
