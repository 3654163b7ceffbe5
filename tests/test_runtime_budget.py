"""The runtime and the message budget (chapters 04 + 06): tool schemas are counted, and a request
that cannot fit is never sent."""
from agentlab import sim
from agentlab.messages import MessageManager
from agentlab.runtime import AgentRuntime, RunState
from agentlab.tools import ToolRegistry


def many_tools(n: int) -> ToolRegistry:
    reg = ToolRegistry()
    for i in range(n):
        def tool(query: str, limit: int = 5) -> str:
            return query
        reg.register(tool, name=f"search_corpus_{i}",
                     description="Search the offline corpus of pages about asyncio and agents "
                                 "for a query and return the best matching snippets.")
    return reg


def test_the_runtime_tells_the_manager_which_tool_schemas_it_sends():
    s = sim.Simulator([sim.text("ok")])
    reg = many_tools(40)
    rt = AgentRuntime(s.llm(), reg)
    assert rt.run("hi").state is RunState.FINISHED
    assert rt.messages.tools_tokens > 1000  # 40 schemas counted, not 0
    assert rt.messages.count_tokens() >= rt.messages.tools_tokens


def test_a_request_over_the_budget_is_never_sent_and_the_run_says_why():
    s = sim.Simulator([sim.text("never")])
    mm = MessageManager(system_prompt="You are terse.", max_tokens=600)
    rt = AgentRuntime(s.llm(), many_tools(40), messages=mm)  # the schemas alone exceed 600
    r = rt.run("hi")
    assert (r.state, r.stopped_reason) == (RunState.ERROR, "context_overflow")
    assert r.errors[-1]["code"] == "context_overflow" and s.requests == []


def test_a_prefilled_history_with_40_tools_is_compressed_before_the_first_request():
    """Issue 21: a chat app restores a conversation, then runs with 40 tools. The schemas join
    the budget before the first request and the history is compressed to fit, instead of a
    ``context_overflow`` with 0 requests sent."""
    from agentlab.messages import synthetic_history
    s = sim.Simulator([sim.text("ok")])
    mm = MessageManager(system_prompt="You are terse.", max_tokens=3000)
    history = synthetic_history(12, seed=1, result_words=(20, 60))
    mm.restore(history)
    rt = AgentRuntime(s.llm(), many_tools(40), messages=mm)
    r = rt.run("go on")
    assert (r.state, r.stopped_reason) == (RunState.FINISHED, "completed"), r.errors
    assert len(s.requests) == 1 and mm.compressions
    assert mm.count_tokens() <= mm.max_tokens


def test_set_tools_compresses_a_history_the_schemas_push_over_the_threshold():
    from agentlab.messages import synthetic_history
    mm = MessageManager(max_tokens=3000)
    mm.restore(synthetic_history(12, seed=1, result_words=(20, 60)))
    assert mm.count_tokens() <= mm.threshold_tokens and not mm.compressions
    mm.set_tools(many_tools(40).get_all_schemas())
    assert mm.compressions and not mm.over_budget  # 40 schemas alone take ~1,900 tokens
