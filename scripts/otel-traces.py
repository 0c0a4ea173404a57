#!/usr/bin/env python3
"""Write N lines of OTLP JSON traces (the Collector's file exporter format) for measuring
`ctxconsole import traces`: each line is one trace with a chat span (a plan of two steps) and
one execute_tool span. Usage: python3 scripts/otel-traces.py big N > traces.jsonl"""
import json
import sys


def attr(k, v):
    if isinstance(v, str):
        return {"key": k, "value": {"stringValue": v}}
    return {"key": k, "value": {"intValue": str(v)}}


def chat(tid, sid, t, intent, tools):
    out = [{"role": "assistant", "finish_reason": "tool_call",
            "parts": [{"type": "tool_call", "id": f"c{i}", "name": n, "arguments": {}}
                      for i, n in enumerate(tools)]}]
    inp = [{"role": "user", "parts": [{"type": "text", "content": intent}]}]
    return {"traceId": tid, "spanId": sid, "name": "chat", "kind": 3,
            "startTimeUnixNano": str(t), "endTimeUnixNano": str(t + 10**9),
            "attributes": [attr("gen_ai.operation.name", "chat"),
                           attr("gen_ai.request.model", "gpt-4o"),
                           attr("gen_ai.input.messages", json.dumps(inp)),
                           attr("gen_ai.output.messages", json.dumps(out))],
            "status": {}}


def execute(tid, sid, t, tool):
    return {"traceId": tid, "spanId": sid, "name": "execute_tool", "kind": 3,
            "startTimeUnixNano": str(t), "endTimeUnixNano": str(t + 10**8),
            "attributes": [attr("gen_ai.operation.name", "execute_tool"),
                           attr("gen_ai.tool.name", tool)],
            "status": {"code": 1}}


def line(spans):
    return json.dumps({"resourceSpans": [{
        "resource": {"attributes": [attr("service.name", "trace-agent")]},
        "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]})


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "big":
        sys.exit(__doc__)
    t0 = 1795168800 * 10**9
    for i in range(int(sys.argv[2])):
        tid = "%032x" % (i + 1)
        print(line([chat(tid, "%016x" % (2 * i + 1), t0 + i * 10**9,
                         f"search the notes {i}", ["fs.search", "fs.read"]),
                    execute(tid, "%016x" % (2 * i + 2), t0 + i * 10**9 + 5 * 10**8,
                            "fs.search")]))


if __name__ == "__main__":
    main()
