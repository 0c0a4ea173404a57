"""Writes ../catalog.json, the sample workspace's routing guide, from the hand-written
entries below. Run it after editing them: python3 make_catalog.py"""
import json, os

def S(props, req=(), described=True):
    def prop(k, t, d):
        p = {"type": t}
        if described and k in req and len(d.split()) > 2:
            p["description"] = d
        return p
    schema = {"type": "object", "properties": {k: prop(k, t, d) for k, (t, d) in props.items()}}
    if req:
        schema["required"] = list(req)
    return schema

packs = []
def P(name, desc, accepts, produces, kw, use, lim, props, req=(), out=None):
    m = {"accepts": accepts, "produces": produces, "intent_keywords": kw, "typical_use": use,
         "limitations": lim, "input_schema": S(props, req)}
    packs.append({"name": name, "description": desc, "metadata": m})

# browser
P("browser.open", "Open a URL in a headless browser session and wait for the page to settle. Returns a session id for the other browser packs.",
  ["url"], ["browser_session"], ["open page", "browse", "visit site", "navigate"], "First step of any interactive web task.",
  ["no login flows with 2FA"], {"url": ("string", "Page address"), "wait_ms": ("integer", "Extra settle time")}, ["url"],
  {"session_id": ("string", "Browser session")})
P("browser.click", "Click an element by CSS selector or visible text in an open browser session.",
  ["browser_session", "selector"], ["browser_session"], ["click", "press button", "follow link"], "Drive a page step by step.",
  ["selectors inside iframes need the frame path"], {"session_id": ("string", "Session from browser.open"), "selector": ("string", "CSS selector or text")}, ["session_id", "selector"])
P("browser.fill_form", "Type values into form fields and optionally submit the form.",
  ["browser_session", "form_values"], ["browser_session"], ["fill form", "type into", "sign up", "submit"], "Search boxes, sign-up forms, filters.",
  ["no CAPTCHA solving"], {"session_id": ("string", "Session"), "fields": ("object", "selector -> value"), "submit": ("boolean", "Submit after filling")}, ["session_id", "fields"])
P("browser.screenshot", "Capture a screenshot of the current page or one element as PNG.",
  ["browser_session"], ["image_png"], ["screenshot", "capture page", "snapshot"], "Visual evidence of a page state.",
  ["full-page capture limited to 16k px height"], {"session_id": ("string", "Session"), "selector": ("string", "Element to capture"), "full_page": ("boolean", "Whole page")}, ["session_id"])
P("browser.extract", "Extract readable text, links and tables from the current page as Markdown.",
  ["browser_session"], ["markdown"], ["extract text", "scrape", "read page", "get content"], "Reading a rendered page after interaction.",
  ["drops canvas and video content"], {"session_id": ("string", "Session"), "selector": ("string", "Limit to this element")}, ["session_id"])
# desktop
P("desktop.run_app_and_screenshot", "Launch a desktop application in the virtual display and capture a screenshot once its window appears.",
  ["app_name"], ["image_png"], ["launch app", "open application", "desktop screenshot"], "Checking that a GUI app starts.",
  ["Linux apps only", "no GPU acceleration"], {"app": ("string", "Executable or .desktop name"), "args": ("array", "Arguments"), "wait_s": ("integer", "Seconds to wait")}, ["app"])
P("desktop.type_keys", "Send keystrokes or key chords to the focused window of the virtual desktop.",
  ["keys"], ["desktop_state"], ["type", "keyboard", "shortcut", "press keys"], "Drive GUI apps that have no API.",
  ["no IME input"], {"keys": ("string", "Text or chord like ctrl+s")}, ["keys"])
P("desktop.window_list", "List the open windows on the virtual desktop with titles, positions and sizes.",
  [], ["window_list"], ["windows", "which apps are open", "focus"], "Find the window to act on.",
  [], {})
# vision
P("vision.click_anywhere", "Find a UI element in a screenshot from a natural-language description and click it.",
  ["image_png", "description"], ["desktop_state"], ["click on", "find button", "visual click"], "GUI automation when selectors are unavailable.",
  ["needs a vision model", "slow: one model call per click"], {"description": ("string", "What to click"), "screenshot": ("string", "Optional screenshot ref")}, ["description"])
P("vision.describe_image", "Describe an image: objects, text, layout and notable details.",
  ["image"], ["text"], ["describe image", "what is in this picture", "caption", "alt text"], "Alt text, screenshot triage.",
  ["no face identification"], {"image": ("string", "Image ref or URL"), "detail": ("string", "low or high")}, ["image"])
P("vision.ocr", "Extract printed and handwritten text from an image or scanned PDF page.",
  ["image", "pdf"], ["text"], ["ocr", "read text from image", "scan", "transcribe document"], "Receipts, scans, slides as images.",
  ["handwriting accuracy varies"], {"image": ("string", "Image or PDF ref"), "language": ("string", "ISO language hint")}, ["image"])
# shell
P("cmd.run", "Run a shell command in the sandbox and return stdout, stderr and the exit code.",
  ["command"], ["text", "exit_code"], ["run command", "shell", "terminal", "execute", "bash"], "Anything a CLI tool can do.",
  ["sandboxed: no network unless allowed", "60 s default timeout"], {"command": ("string", "Command line"), "cwd": ("string", "Working directory"), "timeout_s": ("integer", "Timeout")}, ["command"],
  {"stdout": ("string", "Output"), "stderr": ("string", "Errors"), "exit_code": ("integer", "Exit status")})
P("cmd.process_list", "List running processes in the sandbox with CPU and memory use.",
  [], ["process_list"], ["processes", "what is running", "top", "cpu usage"], "Find a stuck or hungry process.",
  [], {"filter": ("string", "Name filter")})
P("sys.health", "Report host health: CPU, memory, disk, GPU and VRAM use, temperatures and uptime.",
  [], ["health_report"], ["status", "health", "gpu", "vram", "disk space", "uptime", "temperature"], "Monitoring and capacity checks.",
  ["GPU metrics need NVIDIA drivers"], {"include": ("array", "Sections: cpu, memory, disk, gpu")})
# files
P("fs.read", "Read a text file, whole or by line range.",
  ["path"], ["text"], ["read file", "open file", "show contents", "cat"], "Inspect code, configs and logs.",
  ["text files only", "10 MB limit"], {"path": ("string", "File path"), "lines": ("string", "Range like 46:200")}, ["path"])
P("fs.write", "Write or overwrite a text file, creating parent directories.",
  ["path", "text"], ["path"], ["write file", "save", "create file"], "Persist generated text.",
  ["refuses paths outside the workspace"], {"path": ("string", "File path"), "content": ("string", "Text to write")}, ["path", "content"])
P("fs.edit", "Apply a search-and-replace or unified diff edit to a text file.",
  ["path", "patch"], ["path"], ["edit file", "patch", "replace in file", "apply diff"], "Small precise code changes.",
  ["fails if the search text is not unique"], {"path": ("string", "File path"), "patch": ("string", "Unified diff or search/replace block")}, ["path", "patch"])
P("fs.search", "Search file names and contents with a regular expression across the workspace.",
  ["pattern"], ["match_list"], ["grep", "find in files", "search code", "where is"], "Locate definitions and usages.",
  ["binary files skipped"], {"pattern": ("string", "Regex"), "glob": ("string", "File filter")}, ["pattern"])
P("fs.convert_document", "Convert documents between formats: PDF, DOCX, HTML, Markdown and plain text.",
  ["document"], ["document"], ["convert", "pdf to markdown", "docx", "export"], "Normalise inputs before summarising.",
  ["complex tables may lose layout"], {"path": ("string", "Input document"), "to": ("string", "Target format")}, ["path", "to"])
# memory
P("memory.store", "Store a fact, note or document in long-term memory with tags so later conversations can recall it.",
  ["text"], ["memory_id"], ["remember", "save this", "note that", "keep in mind", "store fact"], "Persist what the user wants remembered.",
  ["max 32 KB per item"], {"text": ("string", "What to remember"), "tags": ("array", "Tags"), "namespace": ("string", "Caller namespace")}, ["text"],
  {"memory_id": ("string", "Stored item id")})
P("memory.search", "Search long-term memory by meaning and tags; returns the closest stored items.",
  ["query"], ["memory_items"], ["recall", "what did I say", "last time", "do you remember", "earlier"], "Bring back prior facts.",
  ["semantic match, may miss exact numbers"], {"query": ("string", "What to look for"), "limit": ("integer", "Max items"), "tags": ("array", "Tag filter")}, ["query"])
P("memory.get", "Fetch one memory item in full by id.",
  ["memory_id"], ["text"], ["get memory", "open note"], "Follow-up after memory.search.",
  [], {"memory_id": ("string", "Item id")}, ["memory_id"])
P("memory.forget", "Delete memory items by id or tag.",
  ["memory_id"], [], ["forget", "delete memory", "remove note"], "User asks to forget something.",
  ["irreversible"], {"memory_id": ("string", "Item id"), "tag": ("string", "Delete all with tag")})
# web research
P("web.search", "Search the web and return titles, URLs and snippets ranked by relevance.",
  ["query"], ["search_results"], ["search", "google", "look up", "find online", "latest news"], "Start of any research task.",
  ["results depend on the configured engine"], {"query": ("string", "Search query"), "count": ("integer", "Results"), "freshness": ("string", "day, week, month")}, ["query"])
P("web.fetch", "Fetch a URL over HTTP and return the body as readable Markdown.",
  ["url"], ["markdown"], ["fetch", "download page", "get url", "read article"], "Read a known page without a browser.",
  ["no JavaScript rendering", "5 MB limit"], {"url": ("string", "Address"), "raw": ("boolean", "Return raw HTML")}, ["url"])
P("research.summarize", "Summarise one or more documents into key points with citations.",
  ["markdown", "text"], ["summary"], ["summarize", "tl;dr", "key points", "digest"], "Condense sources before writing.",
  ["long inputs are chunked"], {"documents": ("array", "Texts or refs"), "length": ("string", "short, medium, long")}, ["documents"])
P("research.compare", "Compare several options across named criteria and produce a table with a recommendation.",
  ["text"], ["comparison_table"], ["compare", "versus", "pros and cons", "which is better"], "Product and vendor comparisons.",
  ["criteria must be given or inferred from the question"], {"items": ("array", "Things to compare"), "criteria": ("array", "Criteria")}, ["items"])
P("content.ground", "Check claims in a draft against sources and flag unsupported statements with suggested fixes.",
  ["text", "sources"], ["claim_report"], ["fact check", "verify claims", "ground", "citations"], "Before publishing anything factual.",
  ["needs sources passed in or fetched first"], {"draft": ("string", "Text to check"), "sources": ("array", "Source refs"), "mode": ("string", "check or rewrite")}, ["draft"])
# blog / content
P("blog.draft", "Draft a blog post from a brief, notes or source material in the house style.",
  ["brief", "text"], ["markdown"], ["blog", "write a post", "article", "draft"], "Launch posts, tutorials, announcements.",
  ["English and German only"], {"brief": ("string", "What the post is about"), "audience": ("string", "Who reads it"), "length_words": ("integer", "Target length")}, ["brief"])
P("blog.rewrite_for_audience", "Rewrite an existing post for a different audience, tone or reading level.",
  ["markdown"], ["markdown"], ["rewrite", "simplify", "make it more technical", "tone"], "Repurpose one post for several readers.",
  [], {"text": ("string", "Post"), "audience": ("string", "Target audience"), "tone": ("string", "Tone")}, ["text", "audience"])
P("blog.publish", "Publish a Markdown post to the configured CMS as draft or live.",
  ["markdown"], ["url"], ["publish", "post it", "go live", "cms"], "Last step of a blog pipeline.",
  ["needs CMS credentials configured"], {"markdown": ("string", "Post"), "title": ("string", "Title"), "status": ("string", "draft or live")}, ["markdown", "title"])
P("content.social_thread", "Turn a post or announcement into a social media thread with hooks and hashtags.",
  ["markdown", "text"], ["text"], ["tweet", "thread", "linkedin post", "social"], "Promote a post.",
  ["character limits per platform"], {"text": ("string", "Source"), "platform": ("string", "x, linkedin, mastodon")}, ["text"])
P("content.translate", "Translate text while keeping Markdown structure and code blocks intact.",
  ["text", "markdown"], ["text"], ["translate", "in spanish", "localize"], "Localise posts and docs.",
  [], {"text": ("string", "Source text"), "to": ("string", "Target language")}, ["text", "to"])
# slides
P("slides.outline", "Produce a slide-by-slide outline with titles, bullets and speaker notes from a topic or document.",
  ["text", "brief"], ["slide_outline"], ["slides", "deck", "presentation", "outline"], "First step of any deck.",
  ["max 40 slides"], {"source": ("string", "Topic or document"), "slides": ("integer", "Slide count")}, ["source"])
P("slides.render", "Render a slide outline to a PPTX or PDF deck with a chosen theme.",
  ["slide_outline"], ["pptx", "pdf"], ["make deck", "render slides", "powerpoint", "pptx"], "Turn an outline into a file.",
  ["themes from the configured set only"], {"outline": ("object", "Outline"), "theme": ("string", "Theme"), "format": ("string", "pptx or pdf")}, ["outline"])
P("slides.narrate", "Add voice narration to each slide and export a narrated video.",
  ["pptx"], ["video_mp4"], ["narrate slides", "voiceover deck", "presentation video"], "Async talks and course material.",
  ["narration length follows speaker notes"], {"deck": ("string", "Deck ref"), "voice": ("string", "Voice")}, ["deck"])
# podcast / audio
P("podcast.script", "Write a two-host podcast script from source material with intro, segments and outro.",
  ["text", "markdown"], ["script"], ["podcast", "episode", "script", "show"], "Audio versions of posts and reports.",
  [], {"source": ("string", "Material"), "minutes": ("integer", "Target length"), "hosts": ("array", "Host names")}, ["source"])
P("podcast.generate", "Synthesise a multi-voice podcast episode from a script.",
  ["script"], ["audio_mp3"], ["record podcast", "generate episode", "audio show"], "After podcast.script.",
  ["max 30 minutes"], {"script": ("string", "Script"), "voices": ("object", "host -> voice")}, ["script"])
P("audio.speak", "Convert text to speech in a chosen voice.",
  ["text"], ["audio_mp3"], ["say", "speak", "read aloud", "text to speech", "voice"], "Short spoken replies and narration.",
  ["5000 characters per call"], {"text": ("string", "Text"), "voice": ("string", "Voice name")}, ["text"])
P("audio.transcribe", "Transcribe speech from an audio or video file with timestamps and speakers.",
  ["audio", "video"], ["transcript"], ["transcribe", "speech to text", "what did they say", "listen"], "Meetings, interviews, voice notes.",
  ["speaker labels need 2+ minutes of audio"], {"file": ("string", "Audio or video ref"), "language": ("string", "Language hint")}, ["file"])
# image
P("image.generate", "Generate an image from a text prompt: illustrations, hero images, icons.",
  ["text"], ["image_png"], ["image", "illustration", "draw", "picture", "generate art", "hero image"], "Visuals for posts and slides.",
  ["no photorealistic people"], {"prompt": ("string", "What to draw"), "size": ("string", "WxH"), "style": ("string", "Style hint")}, ["prompt"],
  {"image": ("string", "Image ref")})
P("image.edit", "Edit an image from an instruction: remove, replace or restyle parts.",
  ["image_png", "text"], ["image_png"], ["edit image", "remove background", "retouch"], "Fix a generated image.",
  [], {"image": ("string", "Image ref"), "instruction": ("string", "What to change")}, ["image", "instruction"])
# video
P("video.render", "Render a video from a timeline of clips, images, captions and audio.",
  ["timeline"], ["video_mp4"], ["make video", "render video", "edit video"], "Short explainers and promos.",
  ["1080p max", "10 minutes max"], {"timeline": ("object", "Clips and tracks"), "resolution": ("string", "720p or 1080p")}, ["timeline"])
P("video.caption", "Burn in or export subtitles for a video from its transcript.",
  ["video_mp4", "transcript"], ["video_mp4", "srt"], ["subtitles", "captions", "srt"], "Accessibility and silent autoplay.",
  [], {"video": ("string", "Video ref"), "burn_in": ("boolean", "Burn into frames")}, ["video"])
P("av.validate", "Check an audio or video artifact for silence runs, loudness, duration mismatches and corrupt frames.",
  ["audio_mp3", "video_mp4"], ["validation_report"], ["check audio", "validate video", "loudness"], "Quality gate after rendering.",
  ["advisory unless strict is set"], {"file": ("string", "Artifact"), "strict": ("boolean", "Fail on fail-severity findings")}, ["file"])
# repo / code
P("repo.clone", "Clone a git repository into the workspace at a branch or commit.",
  ["repo_url"], ["path"], ["clone", "checkout", "git repo", "download repo"], "Start of any code task on a remote repo.",
  ["public repos or configured credentials"], {"url": ("string", "Repository URL"), "ref": ("string", "Branch or commit")}, ["url"])
P("repo.test", "Run a repository's test suite and report failures with file and line.",
  ["path"], ["test_report"], ["run tests", "test suite", "ci", "failing tests"], "Verify a change.",
  ["auto-detects cargo, npm, pytest, go"], {"path": ("string", "Repo path"), "filter": ("string", "Test filter")}, ["path"])
P("repo.commit", "Commit staged changes with a message and optionally push a branch.",
  ["path"], ["commit_sha"], ["commit", "push", "git commit"], "Record a finished change.",
  ["never force-pushes"], {"path": ("string", "Repo path"), "message": ("string", "Commit message"), "push": ("boolean", "Push after commit")}, ["path", "message"])
P("code.review", "Review a diff for bugs, style and risky changes; returns comments with line numbers.",
  ["diff"], ["review_comments"], ["review", "code review", "check my diff", "pull request"], "Before merging.",
  [], {"diff": ("string", "Unified diff"), "focus": ("string", "security, performance, style")}, ["diff"])
P("swe.solve", "Attempt a software issue end to end: read the code, edit, run tests, and return a patch.",
  ["issue_text", "path"], ["diff"], ["fix bug", "solve issue", "implement feature", "debug"], "Well-scoped bugs with a failing test.",
  ["large refactors out of scope", "needs a test command"], {"issue": ("string", "Issue text"), "path": ("string", "Repo path")}, ["issue", "path"])
# messaging
P("message.send", "Send a message to the user or a channel (chat, email or webhook).",
  ["text"], [], ["send", "notify", "message", "tell", "email"], "Deliver results.",
  ["attachments up to 25 MB"], {"to": ("string", "Recipient or channel"), "text": ("string", "Body"), "attachments": ("array", "File refs")}, ["text"])
P("crypto.wallet", "Check balances, token holdings and recent transfers for a wallet address.",
  ["wallet_address"], ["balance_report"], ["wallet", "balance", "eth", "sol", "btc", "token"], "Portfolio checks.",
  ["read only: never signs transactions"], {"address": ("string", "Wallet address"), "chain": ("string", "Chain name")}, ["address"])

def step(i, name, pack, body):
    return {"id": f"s{i}", "name": name, "pack": pack, "body": body}

pipelines = []
def L(pid, name, desc, accepts, produces, kw, use, lim, supersedes, steps, inputs, outputs):
    pipelines.append({"id": pid, "name": name, "description": desc, "metadata": {
        "accepts": accepts, "produces": produces, "intent_keywords": kw, "typical_use": use,
        "limitations": lim, "supersedes": supersedes,
        "steps": [step(i + 1, *s) for i, s in enumerate(steps)],
        "inputs": S(inputs, described=False)}})

L("builtin.brief-rewrite-blog", "Brief to blog", "Turn a brief or pasted announcement into a researched, grounded and illustrated blog post. Runs research, drafting, fact checking and an illustration in one pass.",
  ["brief", "text"], ["markdown", "image_png"], ["blog from brief", "write a post about", "launch post", "announcement blog"], "Launch announcements pasted from email.",
  ["one illustration per post"], ["blog.draft", "content.ground"],
  [("Research", "web.search", {"query": "{{brief.topic}}", "count": 5}), ("Draft", "blog.draft", {"brief": "{{brief}}", "sources": "{{s1.results}}"}),
   ("Ground", "content.ground", {"draft": "{{s2.markdown}}", "mode": "rewrite"}), ("Illustrate", "image.generate", {"prompt": "hero image for {{brief.topic}}", "size": "1536x1024"})],
  {"brief": ("string", "Brief or pasted source"), "audience": ("string", "Readers")}, {"markdown": ("string", "Post"), "image": ("string", "Hero image")})
L("builtin.remember-and-blog", "Remember, then blog", "Store pasted material in memory and draft a blog post from it with an illustration. The memory item is linked from the post's front matter.",
  ["text"], ["memory_id", "markdown", "image_png"], ["remember this and blog", "save and write post"], "The 'remember this, draft a blog, make an illustration' ask.",
  [], ["memory.store", "blog.draft", "image.generate"],
  [("Remember", "memory.store", {"text": "{{input}}", "tags": ["source"]}), ("Draft", "blog.draft", {"brief": "{{input}}"}),
   ("Illustrate", "image.generate", {"prompt": "illustration for {{s2.title}}"})],
  {"text": ("string", "Material to keep and write from")}, {"memory_id": ("string", "Stored item"), "markdown": ("string", "Post"), "image": ("string", "Image")})
L("builtin.research-report", "Research report", "Search, read and summarise sources into a cited report. Good for 'find out about X and write it up'.",
  ["query"], ["markdown"], ["research", "report on", "find out about", "write up"], "Market scans, technical backgrounders.",
  ["web sources only"], ["research.summarize"],
  [("Search", "web.search", {"query": "{{query}}", "count": 8}), ("Read", "web.fetch", {"url": "{{s1.results[*].url}}"}),
   ("Summarise", "research.summarize", {"documents": "{{s2}}", "length": "long"}), ("Ground", "content.ground", {"draft": "{{s3}}", "mode": "check"})],
  {"query": ("string", "Topic")}, {"markdown": ("string", "Report")})
L("builtin.compare-options", "Compare options", "Research several products or approaches and return a comparison table with a recommendation.",
  ["text"], ["comparison_table"], ["compare", "which should I pick", "versus", "alternatives"], "Vendor and tool choices.",
  [], ["research.compare"],
  [("Search each", "web.search", {"query": "{{item}} review", "count": 4}), ("Compare", "research.compare", {"items": "{{items}}", "criteria": "{{criteria}}"})],
  {"items": ("array", "Options"), "criteria": ("array", "Criteria")}, {"table": ("string", "Comparison")})
L("builtin.page-digest", "Page digest", "Fetch one page and summarise it in a few bullet points.",
  ["url"], ["summary"], ["summarize this link", "tl;dr url", "digest page"], "Links pasted into chat.",
  ["no JavaScript pages"], ["web.fetch"],
  [("Fetch", "web.fetch", {"url": "{{url}}"}), ("Summarise", "research.summarize", {"documents": ["{{s1}}"], "length": "short"})],
  {"url": ("string", "Page")}, {"summary": ("string", "Bullets")})
L("builtin.web-task", "Interactive web task", "Open a site, interact with it (click, fill forms) and capture the result as text and a screenshot.",
  ["url", "instructions"], ["markdown", "image_png"], ["on the website", "log in and", "fill out", "book on site"], "Tasks that need a real browser.",
  ["no 2FA", "no CAPTCHA"], ["browser.open", "browser.click", "browser.fill_form"],
  [("Open", "browser.open", {"url": "{{url}}"}), ("Act", "browser.fill_form", {"session_id": "{{s1.session_id}}", "fields": "{{fields}}", "submit": True}),
   ("Read", "browser.extract", {"session_id": "{{s1.session_id}}"}), ("Capture", "browser.screenshot", {"session_id": "{{s1.session_id}}"})],
  {"url": ("string", "Start page"), "fields": ("object", "Form values")}, {"markdown": ("string", "Result page"), "image": ("string", "Screenshot")})
L("builtin.deck-from-doc", "Document to deck", "Turn a document or topic into a rendered slide deck with speaker notes.",
  ["text", "document"], ["pptx"], ["make slides", "deck from", "presentation about"], "Talks from reports.",
  ["40 slides max"], ["slides.outline", "slides.render"],
  [("Outline", "slides.outline", {"source": "{{source}}", "slides": 12}), ("Render", "slides.render", {"outline": "{{s1}}", "theme": "default", "format": "pptx"})],
  {"source": ("string", "Document or topic")}, {"deck": ("string", "PPTX ref")})
L("builtin.narrated-deck", "Narrated deck", "Build a deck from a document, narrate it and export a validated video.",
  ["text", "document"], ["video_mp4"], ["narrated presentation", "video of slides", "recorded talk"], "Course material and async updates.",
  ["narration in one voice"], ["slides.narrate"],
  [("Outline", "slides.outline", {"source": "{{source}}"}), ("Render", "slides.render", {"outline": "{{s1}}"}),
   ("Narrate", "slides.narrate", {"deck": "{{s2}}", "voice": "alloy"}), ("Validate", "av.validate", {"file": "{{s3}}"})],
  {"source": ("string", "Document")}, {"video": ("string", "MP4 ref")})
L("builtin.post-to-podcast", "Post to podcast", "Turn an article or post into a two-host podcast episode and check the audio.",
  ["markdown", "text"], ["audio_mp3"], ["podcast from post", "audio version", "make an episode"], "Audio editions of blog posts.",
  ["30 minutes max"], ["podcast.script", "podcast.generate"],
  [("Script", "podcast.script", {"source": "{{source}}", "minutes": 10}), ("Record", "podcast.generate", {"script": "{{s1}}"}),
   ("Validate", "av.validate", {"file": "{{s2}}"})],
  {"source": ("string", "Article")}, {"audio": ("string", "MP3 ref")})
L("builtin.meeting-notes", "Meeting notes", "Transcribe a recording, summarise decisions and action items, and store them in memory.",
  ["audio", "video"], ["markdown", "memory_id"], ["meeting notes", "minutes", "action items from recording"], "After calls.",
  [], ["audio.transcribe"],
  [("Transcribe", "audio.transcribe", {"file": "{{file}}"}), ("Summarise", "research.summarize", {"documents": ["{{s1}}"], "length": "medium"}),
   ("Remember", "memory.store", {"text": "{{s2}}", "tags": ["meeting"]})],
  {"file": ("string", "Recording")}, {"notes": ("string", "Notes"), "memory_id": ("string", "Stored item")})
L("builtin.fix-and-test", "Fix and test", "Clone a repo, attempt a fix for an issue, run the tests and commit on a branch if they pass.",
  ["repo_url", "issue_text"], ["commit_sha"], ["fix this bug in", "solve issue", "make the tests pass"], "Small bugs with a reproduction.",
  ["tests must exist"], ["swe.solve", "repo.test", "repo.commit"],
  [("Clone", "repo.clone", {"url": "{{repo}}"}), ("Solve", "swe.solve", {"issue": "{{issue}}", "path": "{{s1}}"}),
   ("Test", "repo.test", {"path": "{{s1}}"}), ("Commit", "repo.commit", {"path": "{{s1}}", "message": "fix: {{issue.title}}", "push": True})],
  {"repo": ("string", "Repository"), "issue": ("string", "Issue text")}, {"sha": ("string", "Commit")})
L("builtin.review-pr", "Review a change", "Fetch a diff, run the tests and write review comments.",
  ["diff", "repo_url"], ["review_comments"], ["review my pr", "look at this diff", "code review"], "Second pair of eyes.",
  [], ["code.review"],
  [("Test", "repo.test", {"path": "{{path}}"}), ("Review", "code.review", {"diff": "{{diff}}", "focus": "bugs"})],
  {"diff": ("string", "Diff"), "path": ("string", "Repo path")}, {"comments": ("array", "Comments")})
L("builtin.illustrated-social", "Illustrated social post", "Write a social thread from a post and attach a generated image.",
  ["markdown"], ["text", "image_png"], ["share on social", "promote post", "tweet with image"], "Launch day promotion.",
  [], ["content.social_thread"],
  [("Thread", "content.social_thread", {"text": "{{source}}", "platform": "x"}), ("Image", "image.generate", {"prompt": "social card for {{source.title}}", "size": "1200x675"})],
  {"source": ("string", "Post")}, {"thread": ("string", "Thread"), "image": ("string", "Image")})
L("builtin.screenshot-to-text", "Screenshot to text", "Take a screenshot of a page or app and extract its text with OCR.",
  ["url", "app_name"], ["text"], ["read the screen", "text from screenshot"], "Apps without copyable text.",
  [], ["vision.ocr"],
  [("Capture", "browser.screenshot", {"session_id": "{{session}}"}), ("OCR", "vision.ocr", {"image": "{{s1}}"})],
  {"session": ("string", "Browser session")}, {"text": ("string", "Text")})
L("builtin.translate-post", "Translate and publish", "Translate a post and publish it as a draft in the target language.",
  ["markdown"], ["url"], ["translate and publish", "localized post"], "Multilingual blogs.",
  [], ["content.translate"],
  [("Translate", "content.translate", {"text": "{{post}}", "to": "{{lang}}"}), ("Publish", "blog.publish", {"markdown": "{{s1}}", "title": "{{title}}", "status": "draft"})],
  {"post": ("string", "Post"), "lang": ("string", "Language")}, {"url": ("string", "Draft URL")})
L("builtin.explainer-video", "Explainer video", "Script, narrate and render a short explainer video with captions.",
  ["text", "brief"], ["video_mp4"], ["explainer", "promo video", "short video about"], "Product explainers.",
  ["3 minutes max"], ["video.render"],
  [("Script", "podcast.script", {"source": "{{brief}}", "minutes": 2, "hosts": ["narrator"]}), ("Voice", "audio.speak", {"text": "{{s1}}"}),
   ("Render", "video.render", {"timeline": {"audio": "{{s2}}", "images": "auto"}}), ("Caption", "video.caption", {"video": "{{s3}}", "burn_in": True})],
  {"brief": ("string", "What to explain")}, {"video": ("string", "MP4 ref")})
L("builtin.health-report", "Health report", "Collect host health and running processes and send a short status message.",
  [], ["health_report"], ["system status", "is the server ok", "gpu status report"], "Daily checks.",
  [], ["sys.health"],
  [("Health", "sys.health", {"include": ["cpu", "memory", "disk", "gpu"]}), ("Processes", "cmd.process_list", {}),
   ("Notify", "message.send", {"text": "{{s1.summary}}"})],
  {}, {"report": ("string", "Status")})
L("builtin.doc-to-memory", "Document to memory", "Convert a document to text, summarise it and store both summary and source in memory.",
  ["document"], ["memory_id"], ["remember this document", "save this pdf", "add to knowledge base"], "Building a personal knowledge base.",
  [], [],
  [("Convert", "fs.convert_document", {"path": "{{path}}", "to": "markdown"}), ("Summarise", "research.summarize", {"documents": ["{{s1}}"]}),
   ("Remember", "memory.store", {"text": "{{s2}}", "tags": ["document"]})],
  {"path": ("string", "Document")}, {"memory_id": ("string", "Stored item")})
L("builtin.recall-and-answer", "Recall and answer", "Search memory for what the user said before and answer with citations to stored items.",
  ["query"], ["text"], ["what did I tell you", "remind me what", "from memory"], "Questions about earlier conversations.",
  [], ["memory.search"],
  [("Search", "memory.search", {"query": "{{query}}", "limit": 10}), ("Fetch", "memory.get", {"memory_id": "{{s1[0].id}}"})],
  {"query": ("string", "Question")}, {"answer": ("string", "Answer")})
L("builtin.gui-check", "GUI smoke check", "Launch a desktop app, describe what is on screen and report problems.",
  ["app_name"], ["text", "image_png"], ["does the app start", "check the gui", "desktop smoke test"], "Release checks of desktop builds.",
  ["Linux apps only"], ["desktop.run_app_and_screenshot"],
  [("Launch", "desktop.run_app_and_screenshot", {"app": "{{app}}", "wait_s": 10}), ("Describe", "vision.describe_image", {"image": "{{s1}}", "detail": "high"})],
  {"app": ("string", "Application")}, {"report": ("string", "Findings"), "image": ("string", "Screenshot")})

def drop_empty(entry):
    entry["metadata"] = {k: v for k, v in entry["metadata"].items() if v not in ([], "", None)}
    return entry

guide = {"packs": [drop_empty(p) for p in packs], "pipelines": [drop_empty(p) for p in pipelines]}
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "..", "catalog.json"), "w") as f:
    json.dump(guide, f, indent=1, ensure_ascii=False)
    f.write("\n")
compact = json.dumps(guide, separators=(",", ":"), ensure_ascii=False)
print(f"{len(packs)} packs, {len(pipelines)} pipelines, {len(compact.encode())} bytes compact")
