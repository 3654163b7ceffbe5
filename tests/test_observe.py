"""Observer: spans that really nest and are stored, report numbers, prices from the table,
valid Prometheus text, JSON round trip, OpenTelemetry export."""
from __future__ import annotations

import io
import json
import random
import sys
import threading
import warnings

import numpy as np
import pytest

from agentlab import sim
from agentlab.errors import ConfigError, ToolError
from agentlab.naive.observe import NaiveObserver
from agentlab.observe import PRICING_PATH, AgentObserver, PricingWarning, load_pricing, percentile
from agentlab.runtime import AgentRuntime
from agentlab.tools import ToolRegistry

PRICES = load_pricing(PRICING_PATH)


def research_run(obs: AgentObserver, turns: int = 3) -> AgentObserver:
    """A small run shaped like the research agent: each turn one model call and two tools."""
    with obs.span("run", task="report on x"):
        for t in range(1, turns + 1):
            with obs.span("turn", turn=t):
                obs.record_llm_call(prompt_tokens=1000 * t, completion_tokens=100, duration_ms=50.0 * t,
                                    turn=t)
                obs.record_tool_call("web_search", 10.0 * t, True, turn=t, tool_call_id=f"a{t}")
                obs.record_tool_call("read_url", 5.0, t != 2, None if t != 2 else "tool_timeout", turn=t)
    obs.finish("completed")
    return obs


def test_spans_nest_run_turn_call_with_right_parents():
    obs = research_run(AgentObserver("run-1", seed=0))
    by_id = {s.span_id: s for s in obs.spans}
    names = lambda s: (s.name, by_id[s.parent_id].name if s.parent_id else None)
    assert [names(s) for s in obs.spans][:5] == [
        ("run", None), ("turn", "run"), ("chat gpt-4o", "turn"),
        ("execute_tool web_search", "turn"), ("execute_tool read_url", "turn")]
    assert len(obs.spans) == 1 + 3 * 4 and all(s.ended for s in obs.spans)
    assert {s.trace_id for s in obs.spans} == {obs.trace_id}
    assert len({s.span_id for s in obs.spans}) == len(obs.spans)
    failed = [s for s in obs.spans if s.status == "error"]
    assert [s.attributes["error.type"] for s in failed] == ["tool_timeout"]
    assert failed[0].attributes["agentlab.turn"] == 2
    assert obs.current_span() is None


def test_start_span_really_stores_and_end_span_restores_the_parent():
    obs = AgentObserver("r", seed=1)
    run = obs.start_span("run")
    turn = obs.start_span("turn", turn=1)
    assert obs.spans == [run, turn] and turn.parent_id == run.span_id
    assert obs.current_span() is turn
    obs.end_span(turn, "error", "model refused", error_code="bad_request")
    assert obs.current_span() is run
    assert (turn.status, turn.attributes["error.type"]) == ("error", "bad_request")
    assert turn.duration_ms >= 0 and turn.end_time >= turn.start_time
    naive = NaiveObserver("r")
    naive.start_span("s1", "run")
    naive.end_span("s1")
    assert naive.traces == []  # the article's bug: nothing was ever stored


def test_exception_inside_a_span_marks_it_error_and_propagates():
    obs = AgentObserver("r")
    with pytest.raises(ToolError):
        with obs.span("run"):
            with obs.span("turn", turn=1):
                raise ToolError("tool_timeout", "slow")
    assert [(s.name, s.status, s.attributes.get("error.type")) for s in obs.spans] == [
        ("run", "error", "tool_timeout"), ("turn", "error", "tool_timeout")]


def test_threads_keep_their_own_current_span():
    obs = AgentObserver("r")
    barrier = threading.Barrier(2)

    def worker(i):
        with obs.span(f"outer{i}"):
            barrier.wait()
            with obs.span(f"inner{i}"):
                barrier.wait()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    by_name = {s.name: s for s in obs.spans}
    for i in range(2):
        assert by_name[f"inner{i}"].parent_id == by_name[f"outer{i}"].span_id
        assert by_name[f"outer{i}"].parent_id is None


def test_report_numbers():
    report = research_run(AgentObserver("run-1")).generate_report()
    price = PRICES["gpt-4o"]
    assert (report.turns, report.llm_calls, report.tool_calls) == (3, 3, 6)
    assert (report.total_prompt_tokens, report.total_completion_tokens) == (6000, 300)
    assert report.cost_usd == pytest.approx((6000 * price["input"] + 300 * price["output"]) / 1e6)
    assert report.tools_called == {"web_search": 3, "read_url": 3}
    assert report.tool_failures == {"read_url": 1} and report.errors == {"tool_timeout": 1}
    assert report.tool_success_rate == pytest.approx(5 / 6)
    ws = report.tool_latency_ms["web_search"]
    for q in (50, 95, 99):
        assert ws[f"p{q}"] == pytest.approx(np.percentile([10.0, 20.0, 30.0], q))
    assert report.final_status == "completed" and report.duration_ms > 0


def test_percentile_matches_numpy():
    rng = random.Random(4)
    for n in (1, 2, 7, 100):
        xs = [rng.expovariate(0.1) for _ in range(n)]
        for q in (0, 50, 95, 99, 100):
            assert percentile(xs, q) == pytest.approx(np.percentile(xs, q))
    assert percentile([], 95) is None


def test_unknown_model_has_unknown_cost_and_warns_once():
    obs = AgentObserver("r", model="gpt-4o")
    obs.record_llm_call(prompt_tokens=100, completion_tokens=10)
    with pytest.warns(PricingWarning, match="'my-local-model'"):
        obs.record_llm_call(model="my-local-model", prompt_tokens=100, completion_tokens=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        obs.record_llm_call(model="my-local-model", prompt_tokens=1, completion_tokens=1)
    report = obs.generate_report()
    assert report.cost_usd is None and report.unpriced_models == ["my-local-model"]
    assert "unknown (no price for my-local-model)" in obs.summary_text()
    naive = NaiveObserver("r", model="my-local-model")
    naive.record_llm_call(100, 10)
    assert naive.total_cost() > 0  # the article charged it as gpt-4o


def test_prices_come_from_the_table_or_the_caller():
    assert AgentObserver("r").pricing == PRICES
    obs = AgentObserver("r", model="tiny", pricing={"tiny": {"input": 1.0, "output": 2.0}})
    obs.record_llm_call(prompt_tokens=1_000_000, completion_tokens=500_000)
    assert obs.generate_report().cost_usd == pytest.approx(2.0)


def test_prometheus_text_parses_with_escaped_labels():
    text_string_to_metric_families = pytest.importorskip(
        "prometheus_client.parser").text_string_to_metric_families
    obs = research_run(AgentObserver("run-1"))
    weird = 'we"ird\\tool\nname'
    obs.record_tool_call(weird, 3.0, False, "tool_failed")
    obs.record_metric("queue.depth-now", 4, tool="web_search")
    fams = {f.name: f for f in text_string_to_metric_families(obs.export_prometheus_metrics())}
    calls = {(s.labels["tool"], s.labels["status"]): s.value for s in fams["agentlab_tool_calls"].samples}
    assert calls[("web_search", "success")] == 3 and calls[(weird, "failure")] == 1
    assert fams["agentlab_tool_calls"].type == "counter"
    dur = fams["agentlab_tool_duration_seconds"]
    assert dur.type == "summary"
    p95 = [s.value for s in dur.samples if s.labels == {"tool": "web_search", "quantile": "0.95"}]
    assert p95 == [pytest.approx(np.percentile([0.01, 0.02, 0.03], 95))]
    depth = [f for n, f in fams.items() if n.startswith("agentlab_queue_depth_now_")]
    assert len(depth) == 1 and depth[0].samples[0].value == 4  # sanitised: a hash keeps it unique
    text = obs.export_prometheus_metrics()
    assert "# HELP agentlab_llm_tokens_total" in text and "# TYPE agentlab_llm_tokens_total counter" in text
    naive = NaiveObserver("r")
    naive.record_llm_call(10, 2)
    with pytest.raises(ValueError):  # the article-style export is not valid text format
        list(text_string_to_metric_families(naive.export_prometheus_metrics()))


def test_prometheus_export_stays_valid_when_names_collide():
    parse = pytest.importorskip("prometheus_client.parser").text_string_to_metric_families
    obs = research_run(AgentObserver("run-1"))
    obs.record_metric("run_turns", 5)  # the export's own family name
    obs.record_metric("agentlab_run_turns", 6)
    obs.record_metric("延迟", 1.5)  # two non-ASCII names: both sanitise to nothing
    obs.record_metric("遅延", 2.5)
    obs.record_metric("tool_duration_seconds_count", 7)  # a sample name of a built-in summary
    obs.record_metric("llm_calls", 8)  # the family name a parser gives counter ..._calls_total
    obs.record_metric("agentlab_run", 9)  # ... and gauge agentlab_run_info
    obs.record_metric("lat", 3, **{"a.b": "dot", "a_b": "underscore", "__x": "r", "9": "n"})
    text = obs.export_prometheus_metrics()
    fams = list(parse(text))
    names = [f.name for f in fams]
    assert len(names) == len(set(names)) and text.count("# TYPE agentlab_run_turns ") == 1
    turns = next(f for f in fams if f.name == "agentlab_run_turns")
    assert [s.value for s in turns.samples] == [3]
    recorded = {f.name: f.samples for f in fams if f.documentation.startswith("Recorded")}
    assert sorted(s[0].value for s in recorded.values()) == [1.5, 2.5, 3, 5, 6, 7, 8, 9]
    (lat,) = [s for s in recorded.values() if s[0].value == 3]
    assert sorted(lat[0].labels.values()) == ["dot", "n", "r", "underscore"]
    assert "a_b" in lat[0].labels and all(not k.startswith("__") for k in lat[0].labels)


def test_json_export_round_trips():
    obs = research_run(AgentObserver("run-1", seed=3))
    obs.record_event("compression", removed=4)
    text = obs.export_json()
    doc = json.loads(text)
    assert doc["report"] == obs.generate_report().to_dict()
    back = AgentObserver.from_json(text)
    assert back.generate_report() == obs.generate_report()
    assert [(s.span_id, s.parent_id, s.name) for s in back.spans] == \
        [(s.span_id, s.parent_id, s.name) for s in obs.spans]


def test_observers_are_per_run():
    a, b = AgentObserver("a"), AgentObserver("b")
    research_run(a)
    assert b.spans == [] and b.llm_calls == [] and b.generate_report().tool_calls == 0


def test_print_summary_to_a_file():
    buf = io.StringIO()
    research_run(AgentObserver("run-42")).print_summary(file=buf)
    text = buf.getvalue()
    assert "Agent run run-42" in text and "6,000 in + 300 out = 6,300" in text
    assert "$0.0180" in text and "read_url" in text and "tool_timeout x1" in text


def test_export_otel_with_the_in_memory_exporter():
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    obs = research_run(AgentObserver("run-1"))
    obs.export_otel(provider)
    spans = exporter.get_finished_spans()
    assert len(spans) == len(obs.spans)
    by_ours = {s.attributes["agentlab.span_id"]: s for s in spans}
    for ours in obs.spans:
        theirs = by_ours[ours.span_id]
        parent = by_ours[ours.parent_id].context.span_id if ours.parent_id else None
        assert (theirs.parent.span_id if theirs.parent else None) == parent
    chat = next(s for s in spans if s.name == "chat gpt-4o" and s.attributes["agentlab.turn"] == 1)
    assert chat.attributes["gen_ai.request.model"] == "gpt-4o"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 1000
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    failed = [s for s in spans if s.status.status_code.name == "ERROR"]
    assert [s.attributes["gen_ai.tool.name"] for s in failed] == ["read_url"]
    assert len({s.context.trace_id for s in spans}) == 1


def test_export_otel_without_the_sdk_is_a_config_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(ConfigError, match=r"agentlab\[otel\]"):
        AgentObserver("r").export_otel()


def test_fresh_gives_an_empty_observer_with_the_same_prices():
    obs = research_run(AgentObserver("a", model="gpt-4o-mini", pricing={"gpt-4o-mini": {"input": 1, "output": 2}}, seed=5))
    assert obs.used and not AgentObserver("b").used
    new = obs.fresh("b")
    assert (new.run_id, new.model, new.pricing, new.used) == ("b", "gpt-4o-mini", obs.pricing, False)
    assert new.trace_id != obs.trace_id and new.trace_id == obs.fresh("c").trace_id  # seeded


# ------------------------------------------------------------------ misuse and attach (issue #10)
def test_a_missing_token_count_is_zero_and_bad_arguments_are_config_errors():
    obs = AgentObserver("r")
    obs.record_llm_call(prompt_tokens=None, completion_tokens=None, duration_ms=3.0)  # no usage
    assert (obs.llm_calls[0].prompt_tokens, obs.llm_calls[0].completion_tokens) == (0, 0)
    assert obs.generate_report().cost_usd == 0.0
    for bad in (dict(prompt_tokens=-1), dict(completion_tokens="12"), dict(prompt_tokens=1.5),
                dict(duration_ms=None), dict(duration_ms=-2.0)):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            obs.record_llm_call(**bad)
    with pytest.raises(ConfigError, match="duration_ms"):
        obs.record_tool_call("search", -1.0)
    with pytest.raises(ConfigError, match="status"):
        obs.end_span(obs.start_span("run"), "bogus")
    with pytest.raises(ConfigError, match="queue_depth"):
        obs.record_metric("queue_depth", "three")
    assert len(obs.llm_calls) == 1 and not obs.tool_calls  # nothing half-recorded


def test_an_observer_attaches_to_a_runtime_from_outside():
    reg = ToolRegistry()
    reg.register(lambda key: f"v{key}", name="lookup", description="Look up.")
    rt = AgentRuntime(sim.Simulator(sim.Script([sim.call("lookup", {"key": "a"}),
                                                sim.text("done")])).llm(), reg)
    obs = AgentObserver("x", seed=1)
    obs.attach(rt)
    obs.attach(rt)  # one tracer per runtime: nothing is recorded twice
    r = rt.run("go")
    assert rt.observer is obs and obs.run_id == r.run_id and obs.final_status == "completed"
    assert [s.kind for s in obs.spans] == ["run", "turn", "llm", "tool", "turn", "llm"]


def test_the_run_duration_counts_from_the_run_span_like_the_result():
    rt = AgentRuntime(sim.Simulator(["done"], latency=sim.Latency(
        first_token_ms=100, tokens_per_second=0, jitter=0)).llm(), ToolRegistry())
    obs = AgentObserver("x")
    obs.attach(rt)
    threading.Event().wait(0.4)  # the observer was made well before the run
    r = rt.run("go")
    assert obs.duration_ms() == pytest.approx(r.duration_ms, abs=30)
    assert obs.generate_report().duration_ms == pytest.approx(r.duration_ms, abs=30)
