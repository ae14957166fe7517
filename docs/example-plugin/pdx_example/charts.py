"""A chart for report and site pages: every raw decode sample, so a reader sees how steady a run was."""


def decode_samples(view):
    points = [{"run": view.namer(run), "test": test["name"], "rate": sample["n_gen"] * 1e9 / sample["ns"]}
              for run in view.runs for test in run.get("tests") or []
              if test.get("kind") == "tg" for sample in test.get("samples") or [] if sample.get("ns")]
    if not points:
        return None
    return {"name": "decode-samples", "title": "Every decode sample",
            "note": "one dot per repetition, tokens/s",
            "vega_lite": {"$schema": "https://vega.github.io/schema/vega-lite/v5.json",
                          "data": {"values": points}, "mark": "point",
                          "encoding": {"x": {"field": "rate", "type": "quantitative", "title": "tokens/s"},
                                       "y": {"field": "run", "type": "nominal", "title": None},
                                       "color": {"field": "test", "type": "nominal"}}}}
