"""Every export of the observer passes through the one redaction layer (issue 13): a key that
reached a span attribute, an event, an error message or a metric label does not leave."""
import io

from opentelemetry.sdk.trace import TracerProvider
from prometheus_client.parser import text_string_to_metric_families

from agentlab.observe import AgentObserver

KEY = "gsk_" + "Q7rT2xLm9KpW4vZs8NbY3cHd6FgJ1aUe"   # a Groq-shaped key


def observed() -> AgentObserver:
    obs = AgentObserver("run-1")
    with obs.span("turn", note=f"called with {KEY}") as span:
        obs.record_event("retry", header=f"Authorization: Bearer {KEY}")
        span.status, span.status_message = "error", f"401 for key {KEY}"
    obs.record_tool_call("fetch", 12.0, False, error_code="http_401", url=f"https://x/?key={KEY}")
    obs.record_metric("leaked_total", 1, who=KEY)
    return obs


def test_prometheus_otel_summary_and_json_hold_no_key_and_stay_valid():
    obs = observed()
    prom = obs.export_prometheus_metrics()
    assert KEY not in prom and list(text_string_to_metric_families(prom))
    spans = obs.export_otel(TracerProvider())
    otel_text = repr([(s.attributes, [(e.name, e.attributes) for e in s.events],
                       s.status.description) for s in spans])
    assert KEY not in otel_text and "REDACTED" in otel_text
    out = io.StringIO()
    obs.print_summary(file=out)
    assert KEY not in out.getvalue()
    assert KEY not in obs.export_json()
