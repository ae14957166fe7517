"""The base of every backend that measures an OpenAI-compatible server.

A subclass names its server (command, environment, metric names); this class
does the rest for all of them: starting and stopping a managed server (or
using ``-o url=`` / ``--url``), the pp/tg matrix over HTTP, the serving
scenarios, and ``/metrics`` scraped before and after every sample and test so
the server's own figures sit beside pdx's client-side ones.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import time
from pathlib import Path
from typing import ClassVar, Iterator, Mapping

from pdx.base import plugin_manager
from pdx.contract.backend import Availability, Backend, BackendConfig, EngineInfo, Sample
from pdx.contract.errors import ModelError, PdxError
from pdx.domain.models import ModelInfo, identify
from pdx.contract.numbers import parse_float
from pdx.base.paths import data_dir
from pdx.domain.prompt_stream import PromptStream
from pdx.base.secrets import is_secret_name, scrub_text, secret_values
from pdx.domain.serving import prometheus
from pdx.domain.serving.grid import GridKey
from pdx.measure.serving.managed import ManagedServer, free_port
from pdx.measure.serving.openai import TIMEOUT_RULE, CompletionsClient, Dialect, OpenAICompletions, auth_headers
from pdx.domain.serving.overhead import overhead_sample
from pdx.domain.serving.prompts import PromptMaker
from pdx.domain.serving.records import RequestsFailed, TokensInOneBurst
from pdx.measure.serving.runs import matrix_sample, scenario_sample
from pdx.domain.serving.server_series import DEFAULT_INTERVAL_MS, MIN_INTERVAL_MS, SeriesRecorder
from pdx.domain.speculation import draft_identity
from pdx.domain.workload import TestSpec

# A pp/tg sample whose tokens all arrived in one read is sent again this many times, on fresh prompts,
# before the test is refused: on a 2-core machine the server's threads can starve the client for a
# whole 20 ms decode now and then.
BURST_RETRIES = 4

SERVER_OPTIONS = {
    "url": "base URL of a running server to measure (no server is started)",
    "server_args": "extra flags for the server pdx starts, as one quoted string",
    "port": "port of the server pdx starts (default: a free one)",
    "startup_timeout": "seconds to wait for the started server's /health (default 900)",
    "request_timeout": f"seconds one request may take (default: {TIMEOUT_RULE})",
    "model_name": "model name to send (default: the server's first /v1/models entry)",
    "in_process_options": "--scenario overhead: the in-process engine's -o options, as a JSON object",
    "series_interval_ms": f"serving tests: read the server's /metrics every this many ms as a time series "
                          f"(default {DEFAULT_INTERVAL_MS}; 0: not)",
}


def public_url(url: str) -> str:
    """A URL without any user:password part (or secret query value), for storing and showing."""
    return scrub_text(url)


def _number(options: Mapping[str, str], key: str, default: float) -> float:
    return parse_float(options.get(key, default), f"-o {key}", 0.0, min_open=True)  # nan/inf: refused


# What leads urllib3's messages: "HTTPConnection(host='h', port=9): " or "<... object at 0x...>: ".
_OBJECT_PREFIX = re.compile(r"^(?:<[^>]*>|\w+\([^()]*\)):\s*")


def network_reason(exc: BaseException) -> str:
    """Why a request failed, in the operating system's words where it gave some ("Connection refused",
    "Name or service not known"), not requests' nesting of urllib3's reprs (which ends in ``"))``)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while isinstance(current, BaseException) and all(current is not e for e in chain) and len(chain) < 16:
        chain.append(current)
        current = (getattr(current, "reason", None) or next((a for a in current.args if isinstance(a, BaseException)),
                                                             None) or current.__cause__ or current.__context__)
    for error in reversed(chain):
        if isinstance(error, OSError) and isinstance(error.strerror, str) and error.strerror:
            return error.strerror
    text = " ".join(str(chain[-1]).split()) or type(chain[-1]).__name__
    return _OBJECT_PREFIX.sub("", text)[:160]


def served_models(url: str, api_key: str | None, seen: dict | None = None) -> list[dict]:
    """``GET /v1/models``; one-line errors for an unreachable server or a refused key. ``seen``, if
    given, receives the server's name for itself (its ``Server`` header) as ``server_header``."""
    import requests  # here, not at the top: every start of pdx registers the server backends

    shown = public_url(url)
    try:
        response = requests.get(f"{url.rstrip('/')}/v1/models", headers=auth_headers(api_key), timeout=30)
    except requests.RequestException as exc:
        reason = network_reason(exc)
        raise PdxError(f"cannot reach a server at {shown}: {reason}", "check --url, and that the server runs") from None
    if response.status_code in (401, 403):
        raise PdxError(f"the server at {shown} refused the request (HTTP {response.status_code})",
                       "give its API key with --api-key or PDX_API_KEY")
    if response.status_code != 200:
        raise PdxError(f"{shown}/v1/models answered HTTP "
                       f"{response.status_code}", "is this an OpenAI-compatible server?")
    if seen is not None:
        seen["server_header"] = response.headers.get("Server")
    try:
        return response.json().get("data") or []
    except ValueError:
        raise PdxError(f"{shown}/v1/models did not answer JSON", "is this an OpenAI-compatible server?") from None


# Where servers say what they are: (path, JSON key holding the version).
VERSION_ENDPOINTS = (("/version", "version"),  # vLLM
                     ("/props", "build_info"),  # llama-server
                     ("/info", "version"),  # TGI
                     ("/api/version", "version"),  # Ollama
                     ("/get_server_info", "version"))  # SGLang


def server_identity(url: str, api_key: str | None, server_header: str | None) -> dict:
    """The server's own name for itself (its ``Server`` header) and version, as far as it tells."""
    import requests  # see served_models

    found: dict = {"server_header": server_header}
    headers = auth_headers(api_key)
    for path, key in VERSION_ENDPOINTS:
        try:
            response = requests.get(f"{url}{path}", headers=headers, timeout=5)
            version = response.json().get(key) if response.status_code == 200 else None
        except (requests.RequestException, ValueError, AttributeError):
            continue
        if isinstance(version, str) and version:
            return found | {"version": version, "version_from": path}
    return found


class ServerBackend(Backend):
    serves = True
    options = SERVER_OPTIONS
    #: shown in messages and log names
    server_name: ClassVar[str] = "server"
    #: pdx name -> Prometheus histogram / counter of the server's /metrics
    metric_histograms: ClassVar[Mapping[str, str]] = {}
    metric_counters: ClassVar[Mapping[str, str]] = {}
    #: pdx name -> the Prometheus gauges or counters read as a time series during serving tests, the first
    #: the server exports (names changed between versions); see pdx.domain.serving.server_series
    metric_series: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    #: extra fields of every completions request
    extra_body: ClassVar[Mapping] = {}
    #: the completions protocol the server speaks
    dialect: ClassVar[Dialect] = OpenAICompletions()
    #: the environment variable a started server reads its API key from (None: it takes none)
    api_key_variable: ClassVar[str | None] = None
    #: the backend that runs the server's engine in pdx's own process (--scenario overhead)
    in_process: ClassVar[str | None] = None
    #: the keys of ``--server-grid``: a short name -> the server flag it sets (pdx.domain.serving.grid)
    grid_keys: ClassVar[Mapping[str, GridKey]] = {}

    # -- what a subclass provides --------------------------------------------

    def server_command(self, model: ModelInfo, port: int) -> list[str]:
        raise NotImplementedError

    def server_env(self) -> dict | None:
        """The started server's environment (None: pdx's own); the API key goes here, by
        ``api_key_variable``, so it shows on no command line."""
        if self.api_key_variable is None:
            return None
        env = {k: v for k, v in os.environ.items() if k != self.api_key_variable}
        if self.config.api_key:
            env[self.api_key_variable] = self.config.api_key
        return env

    def server_version(self) -> str | None:
        return None

    def engine_threads(self) -> int | None:
        """The threads the server's engine runs with, as far as pdx set them (the in-process engine gets
        the same)."""
        return self.config.threads

    def reported_prefill_s(self, figures: dict) -> float | None:
        """The server's own prefill time over a sample, from its scraped figures (None: it says none)."""
        return None

    # -- the contract --------------------------------------------------------

    @classmethod
    def availability(cls, options: Mapping[str, str] | None = None) -> Availability:
        if (options or {}).get("url"):
            return Availability(True, version="(a running server)")
        return cls.server_availability()

    @classmethod
    def server_availability(cls) -> Availability:
        return Availability(False, "no way to start a server", "give -o url=URL of a running server")

    @classmethod
    def served_model(cls, config: BackendConfig) -> ModelInfo | None:
        """With ``url``: the model the server serves (identified from its files when they are here)."""
        url = config.options.get("url")
        if not url:
            return None
        models = served_models(url, config.api_key)
        name = config.options.get("model_name") or (models[0]["id"] if models else "unknown")
        entry = next((m for m in models if m.get("id") == name), {})
        for candidate in (entry.get("root"), name):
            # A server on this machine names its model by path (vLLM a directory, llama-server a file).
            if candidate and ((Path(candidate) / "config.json").is_file() or Path(candidate).is_file()):
                try:
                    return identify(candidate)
                except ModelError:
                    continue
        return ModelInfo(path=public_url(url), name=name, format=cls.model_formats[0], architecture="?",
                         n_params=0, dtype="?", n_layers=0, n_heads=0, n_kv_heads=0, head_dim=0, n_embd=0,
                         n_ff=0, n_vocab=0, n_ctx_train=int(entry.get("max_model_len") or 0), file_bytes=0,
                         sha256=hashlib.sha256(f"served:{name}".encode()).hexdigest(),
                         extra={"served_by": public_url(url)})

    def __init__(self, config: BackendConfig) -> None:
        super().__init__(config)
        options = config.options
        self.startup_timeout = _number(options, "startup_timeout", 900)
        # None: each request's limit follows its length (pdx.measure.serving.openai.default_timeout_s)
        self.request_timeout = _number(options, "request_timeout", 0) if "request_timeout" in options else None
        try:
            self.server_args = shlex.split(options.get("server_args", ""))
        except ValueError as exc:
            raise PdxError(f"-o server_args: cannot split {options['server_args']!r}: {exc}") from None
        self.server: ManagedServer | None = None
        self.url = options.get("url")
        self.client: CompletionsClient | None = None
        self.prompts = PromptStream(config.seed)
        self._test_info: dict = {}
        self.model: ModelInfo | None = None
        self._engine: Backend | None = None  # the in-process sibling, loaded for the first overhead test
        self._engine_info: EngineInfo | None = None

    def load(self, model: ModelInfo) -> EngineInfo:
        self.model = model
        settings: dict = {"mode": "server"}
        details: dict = {}
        if self.url:
            settings["url"] = public_url(self.url)
        else:
            port = int(_number(self.config.options, "port", free_port()))
            stamp = time.strftime("%Y%m%d-%H%M%S")
            log = data_dir() / "server-logs" / f"{stamp}-{self.name}-{port}.log"
            command = self.server_command(model, port) + self.server_args
            env = self.server_env()
            self.server = ManagedServer(self.server_name, command, port, log, env,
                                        self.startup_timeout,
                                        secrets=[self.config.api_key or "", *secret_values(self.server_args)])
            self.server.start()
            self.url = self.server.url
            # What pdx set in the server's environment (never a secret): part of what was measured.
            added = {k: v for k, v in (env or {}).items() if os.environ.get(k) != v and not is_secret_name(k)}
            settings |= {"managed": True, "server_args": shlex.join(self.server_args), "env": added}
            details |= {"server_log": str(log), "server_command": shlex.join(command)}
            spec = self.speculation(command)
            if spec:
                settings["speculation"] = spec
        seen: dict = {}
        models = served_models(self.url, self.config.api_key, seen)
        name = self.config.options.get("model_name") or (models[0]["id"] if models else model.name)
        self.client = CompletionsClient(self.url, name, self.config.api_key, self.request_timeout,
                                        dict(self.extra_body), self.dialect)
        self.prompts = PromptStream(self.config.seed, model.n_vocab or None)
        details["served_model"] = name
        version = self.server_version()
        if version is None:  # a server given by URL: ask it
            identity = server_identity(self.url, self.config.api_key, seen["server_header"])
            version = identity.pop("version", None)
            details |= identity
        return EngineInfo(engine=self.engine, version=version, settings=settings, details=details)

    def speculation(self, command: list[str]) -> dict | None:
        """What the started server's command sets of speculative decoding (method, draft model's
        identity, draft length), recorded with the run; None where it does not speculate. A server
        that speculates says, per request, what it drafted and accepted in its engine figures
        (:mod:`pdx.domain.speculation` reads them)."""
        return None

    def speculation_counts(self, figures: dict) -> dict | None:
        """What the server drafted and accepted over one sample (``{"drafted", "accepted", "tokens"}``),
        from its scraped figures, for a server that counts speculation in /metrics rather than per
        request; None where it says nothing of it."""
        return None

    def request_speculation(self, requests: list) -> dict | None:
        """What a speculating server drafted and accepted over one sample, summed from its requests' own
        figures where a request that drafted nothing says nothing (llama-server); None where the requests'
        figures stand as they are (:mod:`pdx.domain.speculation` reads them)."""
        return None

    @staticmethod
    def draft_identity(path: str) -> dict:
        """A draft model as a run records it (:func:`pdx.domain.speculation.draft_identity`)."""
        return draft_identity(path)

    def scrape(self) -> prometheus.Series | None:
        import requests  # see served_models

        if not self.metric_histograms and not self.metric_counters:
            return None
        try:
            response = requests.get(f"{self.url}/metrics", headers=auth_headers(self.config.api_key), timeout=30)
        except requests.RequestException:
            return None
        return prometheus.parse(response.text) if response.status_code == 200 else None

    def server_figures(self, before: prometheus.Series | None, after: prometheus.Series | None) -> dict:
        if before is None or after is None:
            return {}
        delta = prometheus.difference(before, after)
        return prometheus.summarize(delta, self.metric_histograms, self.metric_counters)

    def _with_server_figures(self, make) -> tuple[Sample, str | None]:
        """``make()``'s sample with the server's own figures over that one try."""
        before = self.scrape()
        sample, failed = make()
        sample.engine |= self.server_figures(before, self.scrape())
        counts = self.speculation_counts(sample.engine) or self.request_speculation(sample.requests)
        if counts:
            sample.engine["speculation"] = counts
        return sample, failed

    def series_interval_ms(self) -> float:
        if not self.metric_series:
            return 0.0
        interval = parse_float(self.config.options.get("series_interval_ms", DEFAULT_INTERVAL_MS),
                               "-o series_interval_ms", 0.0)
        if 0 < interval < MIN_INTERVAL_MS:
            raise PdxError(f"-o series_interval_ms={interval:g}: under {MIN_INTERVAL_MS} ms the reading is most of "
                           "what the server does", f"give {MIN_INTERVAL_MS} or more, or 0 for no series")
        return interval

    def _loaded(self) -> tuple[str, CompletionsClient, ModelInfo]:
        """The server's URL, the client and the model of :meth:`load`, which a test needs first."""
        if self.url is None or self.client is None or self.model is None:
            raise PdxError(f"{self.name}: a test ran before the backend was loaded")
        return self.url, self.client, self.model

    def _with_series(self, make) -> tuple[Sample, str | None]:
        """``make()``'s sample with the server's time series over it (:mod:`pdx.domain.serving.server_series`),
        and the wall-clock time of its load run's start (``origin_unix_ns``: an export's timestamps)."""
        interval = self.series_interval_ms()
        recorder = None
        if interval:
            recorder = SeriesRecorder(self._loaded()[0], auth_headers(self.config.api_key), self.metric_series,
                                      interval).start()
        try:
            sample, failed = make()
        except BaseException:
            if recorder is not None:
                recorder.stop(None)
            raise
        if sample.origin_ns is not None:
            sample.engine["origin_unix_ns"] = time.time_ns() - (time.perf_counter_ns() - sample.origin_ns)
        series = recorder.stop(sample.origin_ns) if recorder is not None else None
        if series and sample.origin_ns is not None:  # a sample without its run's clock keeps none
            sample.engine["server_series"] = series
        return sample, failed

    def unsupported(self, test) -> str | None:
        if getattr(test, "scenario", None) == "overhead":
            if self.in_process is None:
                return f"{self.name} has no in-process engine to set its server against (llamacpp-server and " \
                       "vllm-server have)"
            if self.model is None or not Path(self.model.path).exists():
                return "the in-process engine needs the served model's files here: give -m PATH"
        return super().unsupported(test)

    def _in_process_engine(self) -> Backend:
        if self._engine is None:
            if self.in_process is None:  # unsupported() refuses the overhead scenario first
                raise PdxError(f"{self.name} has no in-process engine to set its server against")
            import json

            try:
                options = json.loads(self.config.options.get("in_process_options") or "{}")
            except ValueError as exc:
                raise PdxError(f"-o in_process_options: not JSON ({exc})") from None
            if not isinstance(options, dict):
                raise PdxError("-o in_process_options: give a JSON object of the in-process engine's options")
            cls = plugin_manager.require_available(self.in_process, options)
            engine = cls(BackendConfig(threads=self.engine_threads(), seed=self.config.seed,
                                       options={str(k): v if isinstance(v, str) else json.dumps(v)
                                                for k, v in options.items()}))
            self._engine_info = engine.load(self._loaded()[2])
            self._engine = engine
        return self._engine

    def _overhead(self, test) -> tuple[Sample, None]:
        def server(pp: TestSpec, prompts) -> Sample:
            return self._with_server_figures(lambda: (matrix_sample(self._loaded()[1], pp, prompts), None))[0]

        return overhead_sample(test, server, self.prompts.next, self._in_process_engine(),
                               self.reported_prefill_s), None

    def _one(self, test) -> tuple[Sample, str | None]:
        if test.kind == "serve" and test.scenario == "overhead":
            return self._overhead(test)
        if test.kind == "serve":
            return self._with_server_figures(lambda: self._with_series(
                lambda: scenario_sample(self._loaded()[1], test, PromptMaker(self.prompts, test.name))))
        prompts = self.prompts.next(test)
        for retry in range(BURST_RETRIES + 1):
            try:
                result = self._with_server_figures(lambda: (matrix_sample(self._loaded()[1], test, prompts), None))
            except TokensInOneBurst as exc:
                if retry == BURST_RETRIES:
                    raise TokensInOneBurst(f"{exc} in {retry + 1} tries (a server too busy to stream, or this client "
                                           "starved of CPU by the server's threads: where the server shares this "
                                           "machine, fewer --threads leave the client a core)", exc.requests) from None
                # Fresh prompts (the sent ones are in the prefix cache now), drawn apart from the
                # repetitions so that a retry shifts no later sample's ids.
                prompts = self.prompts.next(test, f"{test.name}/burst-retry")
            else:
                self._burst_retries += retry
                return result
        raise AssertionError("the last try returns or raises")

    def run(self, test: TestSpec, repetitions: int, warmup: int) -> Iterator[Sample]:
        if self.client is None:
            raise PdxError(f"{self.name}: load() must come before run()")
        self._test_info = {}
        self._burst_retries = 0  # samples sent again, warm-up ones included (the server counted their tokens)
        first = self.scrape()
        try:
            for i in range(warmup + repetitions):
                try:
                    sample, failed = self._one(test)
                except RequestsFailed as exc:
                    raise RequestsFailed(self._explain(str(exc)), exc.requests) from None
                self.check_cache(test, sample)
                if i >= warmup:
                    yield sample
                if failed:
                    raise PdxError(self._explain(failed))
        finally:
            figures = self.server_figures(first, self.scrape())
            self._test_info = ({"server": figures} if figures else {}) | (
                {"burst_retries": self._burst_retries} if self._burst_retries else {}) | (
                {"in_process": self._engine_info.to_dict()} if self._engine_info else {})

    def check_cache(self, test, sample: Sample) -> None:
        """A cold test must not hit the prefix cache, a warm one must (where the server counts hits)."""
        hits = sample.engine.get("prefix_cache_hits")
        scenario = getattr(test, "scenario", None)
        if scenario is None:  # pp/tg: only the depth may come from the cache (one token more: chance)
            found = [r.cached_tokens for r in sample.requests if r.cached_tokens is not None]
            held = max(found) if found else (hits / test.batch if hits is not None else 0)
            if held > test.depth + 1:
                raise PdxError(f"{test.name}: the server's prefix cache already held {held:.0f} tokens of a prompt "
                               f"(depth {test.depth}): it has seen these prompts before",
                               "give another --seed, or restart the server")
            return
        if hits is None or scenario not in ("cache-cold", "cache-warm"):
            return
        if scenario == "cache-cold" and hits > 0:
            raise PdxError(f"{test.name}: the cold test hit the server's prefix cache ({hits:.0f} tokens)")
        if scenario == "cache-warm" and hits == 0:
            raise PdxError(f"{test.name}: the warm test never hit the prefix cache", "is prefix caching on?")

    def _explain(self, message: str) -> str:
        if self.server is not None and self.server.proc is not None and not self.server.alive():
            code = self.server.proc.returncode
            return f"{message}; {self.server_name} exited with code {code} (log {self.server.log})"
        return message

    def test_info(self) -> dict:
        return self._test_info

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None
        if self.server is not None:
            self.server.stop()
            self.server = None
