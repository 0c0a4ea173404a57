"""Writes ../history-plans.jsonl and ../history-executions.jsonl: seven weeks of a gateway's
plan history over the sample catalog. Six callers, nine models of all three tiers, every
drift class and every failure class (with the raw responses the models really sent back).

Deterministic: run it again and the files are byte-identical. python3 make_history.py"""
import json, os, random
from datetime import datetime, timedelta, timezone

rng = random.Random(20261001)
START = datetime(2026, 10, 1, 7, 0, tzinfo=timezone.utc)
DAYS = 48

# (intent templates, topics, steps). {t} is filled from the topics so similar asks group.
TEMPLATES = [
    (["Remember this launch note and draft a blog from it: {t}",
      "remember the {t} announcement, then write a blog post from it"],
     ["MiniMax M3 launch", "Qwen 4 release", "our v2.3 pricing change"],
     ["builtin.remember-and-blog"]),
    (["draft a blog post about {t}", "write a post about {t} for the blog"],
     ["the MiniMax M3 launch", "our Q4 roadmap", "the new Rust edition"],
     ["builtin.brief-rewrite-blog"]),
    (["rewrite the {t} post for a non-technical audience and publish it as a draft"],
     ["pricing", "onboarding", "security"],
     ["blog.rewrite_for_audience", "blog.publish"]),
    (["turn the {t} post into a thread for social"],
     ["launch", "roadmap", "hiring"],
     ["content.social_thread"]),
    (["make an illustrated social post from the {t} article"],
     ["launch", "benchmark", "case study"],
     ["builtin.illustrated-social"]),
    (["find out about {t} and write a short report with sources"],
     ["vector databases", "small reasoning models", "EU AI act obligations"],
     ["builtin.research-report"]),
    (["compare {t} and recommend one"],
     ["Postgres vs SQLite for the edge", "three TTS vendors", "ollama vs vllm for serving"],
     ["builtin.compare-options"]),
    (["summarise this page for me: {t}"],
     ["https://example.com/changelog", "https://example.org/blog/launch", "https://docs.example.net/limits"],
     ["builtin.page-digest"]),
    (["search the web for {t}, then summarise the top results"],
     ["llama.cpp release notes", "prefix caching benchmarks", "openrouter free tier limits"],
     ["web.search", "research.summarize"]),
    (["log into the {t} dashboard and grab a screenshot of the usage page"],
     ["billing", "analytics", "status"],
     ["browser.open", "browser.fill_form", "browser.screenshot"]),
    (["standup recording from {t}: get me the decisions and action items"],
     ["monday", "the planning call", "the design review"],
     ["builtin.meeting-notes"]),
    (["transcribe the {t} recording"],
     ["customer interview", "podcast draft", "all-hands"],
     ["audio.transcribe"]),
    (["turn the {t} doc into a slide deck"],
     ["architecture", "quarterly review", "onboarding"],
     ["builtin.deck-from-doc"]),
    (["make a narrated video deck from the {t} doc"],
     ["architecture", "release", "training"],
     ["builtin.narrated-deck"]),
    (["turn the {t} post into a podcast episode"],
     ["launch", "interview", "retrospective"],
     ["builtin.post-to-podcast"]),
    (["fix the failing test in {t} and commit on a branch"],
     ["the parser crate", "the billing service", "the CLI"],
     ["builtin.fix-and-test"]),
    (["review {t} and leave comments"],
     ["PR 412", "the auth change", "the migration diff"],
     ["builtin.review-pr"]),
    (["clone {t} and run its tests"],
     ["the gateway repo", "the sdk", "the docs site"],
     ["repo.clone", "repo.test"]),
    (["is the box ok? check {t} and ping me"],
     ["gpu memory", "disk space", "the inference host"],
     ["builtin.health-report"]),
    (["what's eating {t} on the server"],
     ["cpu", "memory", "vram"],
     ["cmd.process_list"]),
    (["what did we decide about {t}? check your notes"],
     ["the pricing change", "the launch date", "the vendor choice"],
     ["builtin.recall-and-answer"]),
    (["remember that {t}"],
     ["the launch moved to Thursday", "Ana owns the docs", "we use vLLM in prod"],
     ["memory.store"]),
    (["forget everything tagged {t}"],
     ["draft-2", "old-pricing", "test"],
     ["memory.forget"]),
    (["file the {t} pdf into memory with a summary"],
     ["contract", "spec", "research"],
     ["builtin.doc-to-memory"]),
    (["what text is on {t}? grab it as text"],
     ["the settings screen", "the error dialog", "the login page"],
     ["builtin.screenshot-to-text"]),
    (["open {t} and tell me if anything looks broken"],
     ["the desktop app", "the installer", "the editor"],
     ["builtin.gui-check"]),
    (["translate the {t} post into German and publish a draft"],
     ["launch", "pricing", "release"],
     ["builtin.translate-post"]),
    (["make a short explainer video about {t}"],
     ["prefix caching", "the planner", "token budgets"],
     ["builtin.explainer-video"]),
    (["make a hero image for the {t} post"],
     ["launch", "roadmap", "benchmark"],
     ["image.generate"]),
    (["convert {t} to markdown and save it to the docs folder"],
     ["the spec docx", "the contract pdf", "the handbook html"],
     ["fs.convert_document", "fs.write"]),
    (["find where {t} is configured in the repo"],
     ["the retry policy", "the drift window", "the rate limit"],
     ["fs.search", "fs.read"]),
    (["what's the balance of {t}"],
     ["the treasury wallet", "wallet 0x9f3", "the ops wallet"],
     ["crypto.wallet"]),
    (["remember this launch note, draft a blog from it and make an illustration: {t}"],
     ["MiniMax M3", "Kimi K3", "GLM 5"],
     ["memory.store", "blog.draft", "image.generate"]),
    (["research {t}, write it up and post the summary to the team channel"],
     ["competitor pricing", "the outage root cause", "GPU spot prices"],
     ["web.search", "research.summarize", "message.send"]),
]

# What an agent ran instead, when it ignored the plan and went its own way.
DIVERGE_WITH = {
    "builtin.remember-and-blog": ["image.generate"],
    "builtin.brief-rewrite-blog": ["blog.draft"],
    "builtin.research-report": ["web.fetch"],
    "builtin.meeting-notes": ["audio.transcribe"],
    "builtin.recall-and-answer": ["memory.get"],
    "builtin.health-report": ["sys.health"],
    "cmd.process_list": ["cmd.run"],
    "memory.store": ["fs.write"],
}

CALLERS = ["openclaw-desk", "blog-studio", "research-agent", "ci-runner", "ops-bot", "support-chat"]

# model, tier, weight, failure rate, followed share of returned plans, reasoning tags
MODELS = [
    ("anthropic/claude-sonnet-4-5", "A", 10, 0.00, 0.88, False),
    ("openai/gpt-4o", "A", 7, 0.03, 0.82, False),
    ("google/gemini-2.5-flash", "A", 5, 0.04, 0.78, False),
    ("openai/gpt-4o-mini", "B", 8, 0.10, 0.66, False),
    ("deepseek/deepseek-chat", "B", 6, 0.12, 0.60, False),
    ("ollama/qwen3:30b-a3b", "B", 5, 0.18, 0.55, True),
    ("openrouter/openrouter/free", "C", 9, 0.30, 0.45, True),
    ("openrouter/nvidia/nemotron-3-super-120b-a12b:free", "C", 6, 0.35, 0.40, True),
    ("ollama/llama3.2:3b", "C", 4, 0.45, 0.30, False),
]

FAILURES = ["safety_filtered", "length_truncated", "constrained_deadlock", "likely_timeout",
            "reasoning_only", "http_error", "transport", "protocol"]

HALLUCINATED = {"blog.draft": "blog.write", "image.generate": "image.create",
                "memory.store": "memory.save", "web.search": "google.search",
                "message.send": "slack.post"}

def steps_json(tools, intent):
    return [{"order": i + 1, "tool": t, "args": args_for(t, intent),
             "rationale": rationale_for(t)} for i, t in enumerate(tools)]

def args_for(tool, intent):
    if tool.startswith("builtin."):
        return {"input": intent}
    if tool in ("web.search", "memory.search"):
        return {"query": intent[:60]}
    if tool in ("memory.store",):
        return {"text": intent[:80], "tags": ["sample"]}
    return {}

def rationale_for(tool):
    if tool.startswith("builtin."):
        return "a pipeline covers the whole ask"
    return "needed for this part of the ask"

def plan_answer(steps):
    return json.dumps({"steps": steps}, separators=(",", ":"))

def raw_for_failure(cls, steps, intent):
    body = plan_answer(steps)
    if cls == "safety_filtered":
        if rng.random() < 0.5:
            return "", "content_filter"
        return "I'm sorry, but I can't help with that request.", "stop"
    if cls == "length_truncated":
        return body[: max(20, len(body) * 2 // 3)], "length"
    if cls == "constrained_deadlock":
        # Some of these were only ever prose or fences around good JSON: a better decoder
        # recovers them. Others are JSON-shaped and truly broken.
        kind = rng.choice(["prose", "fence", "broken", "broken"])
        if kind == "prose":
            return body + "\n\nI picked these tools because the user asked for them in order.", "stop"
        if kind == "fence":
            return "Here is the plan:\n```json\n" + json.dumps({"steps": steps}, indent=2) + "\n```", "stop"
        return '{"steps": [{"order": 1, "tool": "' + steps[0]["tool"] + '", "args": {"input": {"input": {"input": {', "stop"
    if cls == "likely_timeout":
        return "", None
    if cls == "reasoning_only":
        return ("<think>\nThe user wants: " + intent + "\nFirst I should decide whether a pipeline "
                "covers this. Let me look at the catalog again. The memory packs store facts, the blog "
                "packs draft posts. Maybe " + steps[0]["tool"] + " fits, but I should double check the "
                "accepts field before"), "length"
    if cls == "http_error":
        if rng.random() < 0.5:
            return '{"error":{"message":"Rate limit exceeded: free-models-per-min","code":429,"metadata":{"retry_after":"23"}}}', None
        return '{"error":{"message":"Internal server error","code":500}}', None
    if cls == "transport":
        return None, None
    if cls == "protocol":
        return "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center></body></html>", None
    raise ValueError(cls)

def raw_for_ok(steps, reasoning):
    body = plan_answer(steps)
    if reasoning:
        return "<think>\nThe ask maps onto the catalog; a pipeline wins when one fits.\n</think>\n" + body
    return body

def iso(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")

def main():
    plans, executions = [], []
    # Per caller, plans at least 40 minutes apart, so a plan's window holds only its own work.
    times = []
    for caller in CALLERS:
        t = START + timedelta(minutes=rng.randint(0, 600))
        while t < START + timedelta(days=DAYS):
            times.append((t, caller))
            t += timedelta(minutes=rng.choice([40, 55, 90, 180, 300, 720, 1440, 2000]))
    times.sort()
    weights = [m[2] for m in MODELS]
    # Make sure every failure class and every drift class appears at least twice.
    forced = [("fail", c) for c in FAILURES for _ in range(2)] + \
             [("drift", d) for d in ["followed", "partial", "ignored", "diverged"] for _ in range(2)]
    rng.shuffle(forced)
    for n, (at, caller) in enumerate(times):
        force = forced.pop() if forced and n % 9 == 4 else None
        pool = TEMPLATES
        if force == ("drift", "partial"):
            pool = [t for t in TEMPLATES if len(t[2]) > 1]
        tpl_intents, topics, tools = rng.choice(pool)
        intent = rng.choice(tpl_intents).format(t=rng.choice(topics))
        model, tier, _, fail_rate, follow_share, reasoning = rng.choices(MODELS, weights)[0]
        pid = "pl-%04d" % (n + 1)
        steps = steps_json(tools, intent)
        failed = (force is not None and force[0] == "fail") or (force is None and rng.random() < fail_rate)
        duration = rng.randint(600, 4000) if tier == "A" else rng.randint(1500, 14000)
        plan = {"id": pid, "at": iso(at), "caller": caller, "model": model, "intent": intent}
        if failed:
            cls = force[1] if force and force[0] == "fail" else rng.choice(FAILURES)
            raw, finish = raw_for_failure(cls, steps, intent)
            if cls in ("likely_timeout", "transport"):
                duration = 60000
            plan.update({"steps": [], "outcome": "failed", "failure_class": cls,
                         "finish_reason": finish, "raw_response": raw})
            # The agent did something anyway: not evidence about a plan that never came.
            if rng.random() < 0.5:
                executions.append({"at": iso(at + timedelta(seconds=40)), "caller": caller,
                                   "session": "s-%04d" % n, "tool": "image.generate", "ok": True})
        else:
            outcome = "ok"
            shown = steps
            if tier == "C" and rng.random() < 0.12:
                # The model named a tool that does not exist; the guard demoted the step.
                i = next((i for i, s in enumerate(steps) if s["tool"] in HALLUCINATED), None)
                if i is not None:
                    fake = HALLUCINATED[steps[i]["tool"]]
                    shown = [dict(s) for s in steps]
                    shown[i] = {"order": i + 1, "tool": "unknown", "args": {},
                                "rationale": "gap: the model named '%s', which is not a registered pack or pipeline" % fake}
                    raw_steps = [dict(s) for s in steps]
                    raw_steps[i] = dict(steps[i], tool=fake)
                    outcome = "guarded"
            raw = raw_for_ok(raw_steps if outcome == "guarded" else steps, reasoning)
            plan.update({"steps": shown, "outcome": outcome, "failure_class": None,
                         "finish_reason": "stop", "raw_response": raw})
            # What the agent then ran.
            if force and force[0] == "drift":
                drift = force[1]
            else:
                r = rng.random()
                drift = ("followed" if r < follow_share else
                         "partial" if r < follow_share + (1 - follow_share) * 0.35 else
                         "ignored" if r < follow_share + (1 - follow_share) * 0.7 else "diverged")
            runnable = [s["tool"] for s in shown if s["tool"] != "unknown"]
            if drift == "diverged" or not runnable:
                ran = DIVERGE_WITH.get(runnable[0] if runnable else "", ["image.generate"])
                if drift != "diverged" and not runnable:
                    ran = []
            elif drift == "followed":
                ran = runnable
            elif drift == "partial" and len(runnable) > 1:
                # Some steps, or all of them out of order.
                ran = runnable[:-1] if rng.random() < 0.6 else runnable[::-1]
            else:
                ran = []
            link = rng.random() < 0.5
            for k, tool in enumerate(ran):
                e = {"at": iso(at + timedelta(seconds=25 + 35 * k)), "caller": caller,
                     "session": "s-%04d" % n, "tool": tool, "ok": rng.random() > 0.05}
                if link:
                    e["plan_id"] = pid
                executions.append(e)
            if drift == "ignored" and rng.random() < 0.4:
                # Work long after the window is not evidence about this plan.
                executions.append({"at": iso(at + timedelta(hours=3)), "caller": caller,
                                   "session": "s-%04d-later" % n, "tool": "fs.read", "ok": True})
        plan["duration_ms"] = duration
        if tier == "C" and not failed:
            plan["trim_record"] = {"catalog_bytes_before": 39769, "catalog_bytes_after": rng.randint(8800, 9990),
                                   "entries_kept": rng.randint(28, 40), "entries_total": 72}
        plans.append(plan)
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "history-plans.jsonl"), "w") as f:
        for p in plans:
            f.write(json.dumps(p, ensure_ascii=False) + "\n")
    with open(os.path.join(here, "..", "history-executions.jsonl"), "w") as f:
        for e in sorted(executions, key=lambda e: e["at"]):
            f.write(json.dumps(e, ensure_ascii=False) + "\n")
    print(len(plans), "plans,", len(executions), "executions")

main()
