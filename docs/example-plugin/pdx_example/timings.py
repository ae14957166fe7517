"""An importer for llama-server's own timings: a JSON list of the ``timings``
objects its ``/completion`` answers carry, one per repetition of one request
shape. Each becomes a sample of a ``pp+tg`` test, its phase times llama-server's."""

from datetime import datetime, timezone

from pdx.registry.importers.kit import Importer, fail, file_facts, imported_run, integer, make_test, number, sample
from pdx.registry.importers.kit import described_hardware, described_model
from pdx.domain.workload import TestSpec


def looks_like(text, document):
    return isinstance(document, list) and bool(document) and all(
        isinstance(t, dict) and {"prompt_n", "prompt_ms", "predicted_n", "predicted_ms"} <= set(t) for t in document)


def read(path, text, document, hardware):
    if not looks_like(text, document):
        raise fail(path, "not a list of llama-server timings (prompt_n, prompt_ms, predicted_n, predicted_ms)")
    samples = []
    for i, t in enumerate(document):
        n_prompt = integer(t["prompt_n"], f"timing {i}: prompt_n", path, 1)
        n_gen = integer(t["predicted_n"], f"timing {i}: predicted_n", path, 1)
        prompt_ns = number(t["prompt_ms"], f"timing {i}: prompt_ms", path, positive=True) * 1e6
        gen_ns = number(t["predicted_ms"], f"timing {i}: predicted_ms", path, positive=True) * 1e6
        samples.append(sample(prompt_ns + gen_ns, n_prompt, n_gen, prompt_ns, gen_ns, engine=t))
    spec = TestSpec(samples[0]["n_prompt"], samples[0]["n_gen"])
    if any((s["n_prompt"], s["n_gen"]) != (spec.n_prompt, spec.n_gen) for s in samples):
        raise fail(path, "the timings are of different request shapes; give one file per shape")
    when = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).replace(microsecond=0).isoformat()
    test = make_test(0, spec, samples, {"timing": "llama-server's own"}, when)
    model = described_model("?", "unknown (llama-server timings name no model)", "gguf")
    return [imported_run("llama-server-timings", "example-llama-server", {"name": "llama.cpp"}, model,
                         described_hardware(chip=hardware), [test], file_facts(path, text, "llama-server-timings"),
                         created_at=when, repetitions=len(samples))]


IMPORTER = Importer("llama-server-timings", "llama-server /completion timings (a JSON list)", read, looks_like,
                    priority=60)
