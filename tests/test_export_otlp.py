"""``pdx export RUN --format otlp``: a serving run's requests as spans and its server series as metrics,
OTLP's JSON file format (a line each), read back through OpenTelemetry's own protobuf definitions
(opentelemetry-proto), so a key, a type or a nesting the spec does not have fails the test."""

import base64
import json

import pytest

pytest.importorskip("opentelemetry.proto", reason="tox -e unit installs opentelemetry-proto")
from google.protobuf.json_format import ParseDict  # noqa: E402
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

from pdx.domain.synth import get_shape, write_gguf

from conftest import pdx_here, run_pdx, run_pdx_here


def _ids_as_proto_json(line: dict) -> dict:
    """OTLP JSON writes trace and span ids as hex, where protobuf's own JSON mapping takes base64: turned
    into base64 here, so the parser checks everything else as the .proto files say."""
    for resource in line["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return line


def read_otlp(path):
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    traces = ParseDict(_ids_as_proto_json(lines[0]), ExportTraceServiceRequest())  # unknown keys raise
    found_metrics = ParseDict(lines[1], ExportMetricsServiceRequest()) if len(lines) > 1 else None
    return lines, traces, found_metrics


def _attributes(proto) -> dict:
    out = {}
    for kv in proto.attributes:
        kind = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, kind)
    return out


def test_a_serving_run_exports_its_requests_as_otlp_spans(fake_server, tmp_path):
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    (run,) = json.loads(pdx_here("serve-bench", "--backend", "openai", "--url", fake_server, "-p", "16", "-n", "8",
                                 "--concurrency", "2", "--num-requests", "6", "--registry", url, "--json"))
    out = tmp_path / "run.otlp.jsonl"
    pdx_here("export", run["id"], "--format", "otlp", "-o", str(out), "--registry", url)
    lines, traces, found_metrics = read_otlp(out)
    assert found_metrics is None and len(lines) == 1  # the stand-in server exports no /metrics series
    (resource,) = traces.resource_spans
    about = _attributes(resource.resource)
    assert about["service.name"] == "pdx"
    assert about["pdx.run.id"] == run["id"]
    assert about["pdx.clock"] == "load_run_start"
    (scope,) = resource.scope_spans
    root, *spans = scope.spans
    (test,) = run["tests"]
    assert len(spans) == len(test["requests"]) == 6
    assert len(root.trace_id) == 16 and len(root.span_id) == 8 and not root.parent_span_id
    origin = test["samples"][0]["engine"]["origin_unix_ns"]
    for span, request in zip(spans, sorted(test["requests"], key=lambda r: r["idx"])):
        assert span.trace_id == root.trace_id and span.parent_span_id == root.span_id and len(span.span_id) == 8
        assert span.kind == 3 and span.status.code == 1  # CLIENT, OK
        assert span.start_time_unix_nano == origin + request["send_ns"]
        assert span.end_time_unix_nano == origin + request["send_ns"] + request["end_ns"]
        (first,) = span.events
        assert first.name == "first_token" and first.time_unix_nano == span.start_time_unix_nano + request["first_ns"]
        attributes = _attributes(span)
        assert attributes["gen_ai.usage.input_tokens"] == 16 and attributes["gen_ai.usage.output_tokens"] == 8
        assert root.start_time_unix_nano <= span.start_time_unix_nano
        assert span.start_time_unix_nano <= span.end_time_unix_nano <= root.end_time_unix_nano
    assert len({s.span_id for s in scope.spans}) == 7
    # the export is the same twice (ids drawn from the run, not at random)
    again = tmp_path / "again.jsonl"
    pdx_here("export", run["id"], "--format", "otlp", "-o", str(again), "--registry", url)
    assert again.read_text() == out.read_text()


def test_a_run_without_serving_tests_is_refused_in_one_line(fake_server, tmp_path):
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    (run,) = json.loads(pdx_here("bench", "--backend", "openai", "--url", fake_server, "-p", "16", "-n", "8", "-r", "1",
                                 "--registry", url, "--json"))
    result = run_pdx_here("export", run["id"], "--format", "otlp", "-o", str(tmp_path / "x.jsonl"), "--registry", url)
    assert result.returncode != 0 and "no serving requests to export" in result.stderr
    assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.llamacpp
def test_a_llama_server_run_exports_its_series_as_otlp_metrics(registry_url, tmp_path):
    model = str(write_gguf(get_shape("tiny"), "f16", tmp_path / "tiny-f16.gguf"))
    result = run_pdx("serve-bench", "--backend", "llamacpp-server", "-m", model, "--registry", registry_url, "--json",
                     "--server-args", "-c 1024 -np 2", "--concurrency", "2", "-p", "16", "-n", "32",
                     "--num-requests", "4", "-o", "series_interval_ms=20")
    assert result.returncode == 0, result.stderr
    (run,) = json.loads(result.stdout)
    out = tmp_path / "run.jsonl"
    pdx_here("export", run["id"], "--format", "otlp", "-o", str(out), "--registry", registry_url)
    _, traces, found = read_otlp(out)
    (resource,) = found.resource_metrics
    metrics = {m.name: m for m in resource.scope_metrics[0].metrics}
    assert {"pdx.server.running", "pdx.server.generation_tokens"} <= set(metrics)
    running, tokens = metrics["pdx.server.running"], metrics["pdx.server.generation_tokens"]
    assert running.WhichOneof("data") == "gauge" and tokens.WhichOneof("data") == "sum"
    assert tokens.sum.is_monotonic and tokens.sum.aggregation_temporality == 2  # CUMULATIVE
    series = run["tests"][0]["samples"][0]["engine"]["server_series"]
    assert len(running.gauge.data_points) == sum(v is not None for v in series["metrics"]["running"])
    # on the spans' clock: the readings span the requests
    spans = traces.resource_spans[0].scope_spans[0].spans[1:]
    times = [p.time_unix_nano for p in running.gauge.data_points]
    assert min(times) <= min(s.start_time_unix_nano for s in spans)
    assert max(times) >= max(s.end_time_unix_nano for s in spans)


def test_a_capacity_searchs_points_follow_one_another_on_the_spans_clock(fake_server, tmp_path):
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    (run,) = json.loads(pdx_here("serve-bench", "--backend", "openai", "--url", fake_server, "-p", "16", "-n", "4",
                                 "--scenario", "capacity", "--slo", "ttft=2s", "-c", "1", "--num-requests", "4",
                                 "--budget", "3", "--registry", url, "--json"))
    out = tmp_path / "run.jsonl"
    pdx_here("export", run["id"], "--format", "otlp", "-o", str(out), "--registry", url)
    _, traces, _ = read_otlp(out)
    root, *spans = traces.resource_spans[0].scope_spans[0].spans
    by_point: dict[str, list] = {}
    for span in spans:
        by_point.setdefault(_attributes(span)["pdx.request.role"], []).append(span)
    points = [p["role"] for p in run["tests"][0]["stats"]["capacity"]["points"]]
    assert len(points) >= 2 and set(points) <= set(by_point)
    for before, after in zip(points, points[1:]):  # each point's load run began after the one before ended
        ended = max(s.end_time_unix_nano for s in by_point[before])
        assert ended <= min(s.start_time_unix_nano for s in by_point[after])
    assert all(root.start_time_unix_nano <= s.start_time_unix_nano <= s.end_time_unix_nano <= root.end_time_unix_nano
               for s in spans)
