#!/usr/bin/env python3
"""Write OTLP JSON traces (the Collector's file exporter format) for measuring
`ctxconsole import traces`. Usage: python3 scripts/otel-traces.py MODE N > traces.jsonl
  big N      N lines, each one trace: a chat span (a plan of two steps) and an execute_tool span
  oneline N  the same N traces as ONE line (one export batch)
  tools N    N execute_tool spans with 500-byte tool names, 1,000 a line, and one chat span per
             10,000 of them (tool spans waiting for their chats)"""
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


def trace(i, t0):
    tid = "%032x" % (i + 1)
    return [chat(tid, "%016x" % (2 * i + 1), t0 + i * 10**9,
                 f"search the notes {i}", ["fs.search", "fs.read"]),
            execute(tid, "%016x" % (2 * i + 2), t0 + i * 10**9 + 5 * 10**8, "fs.search")]


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("big", "oneline", "tools"):
        sys.exit(__doc__)
    mode, n = sys.argv[1], int(sys.argv[2])
    t0 = 1795168800 * 10**9
    if mode == "big":
        for i in range(n):
            print(line(trace(i, t0)))
    elif mode == "oneline":
        print(line([span for i in range(n) for span in trace(i, t0)]))
    else:
        chats = max(1, n // 10000)
        for c in range(chats):
            print(line([chat("%032x" % (c + 1), "%016x" % (10**9 + c), t0 + c * 10**9,
                             f"search the notes {c}", ["fs.search", "fs.read"])]))
        for start in range(0, n, 1000):
            print(line([execute("%032x" % (i % chats + 1), "%016x" % (i + 1),
                                t0 + (i % chats) * 10**9 + 5 * 10**8 + i, "t" * 500)
                        for i in range(start, min(n, start + 1000))]))


if __name__ == "__main__":
    main()
