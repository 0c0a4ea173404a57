//! End to end in a real terminal: tmux runs the console, send-keys types, capture-pane reads.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(width: u16, height: u16) -> Tmux {
        let present = Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            present,
            "tmux is required for this test (.ci/run installs it: apt-get install -y tmux)"
        );
        // One tmux server per test: tests run in parallel threads of one process.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let socket = format!("ctxconsole-e2e-{}-{n}", std::process::id());
        let t = Tmux { socket };
        t.run(&[
            "new-session",
            "-d",
            "-s",
            "e2e",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            "env PS1='e2e$ ' sh",
        ]);
        t
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// Start the console in the shell, on a workspace in `home`.
    fn launch(&self, home: &std::path::Path) {
        self.wait_for("the shell prompt", 10, |s| s.contains("e2e$"));
        let cmd = format!(
            "CTXCONSOLE_HOME={} {}",
            home.display(),
            env!("CARGO_BIN_EXE_ctxconsole")
        );
        self.keys(&[&cmd, "Enter"]);
    }

    /// Start `program ARGS` in the shell so that it reports how it ended: its pid goes to a
    /// file (it is exec'd, so the pid is the program's), and after it the shell prints
    /// `EXIT=<status>` and saves `stty -a` — the terminal exactly as the program left it.
    fn launch_watched(&self, home: &std::path::Path, program: &str, args: &str) -> Watched {
        self.wait_for("the shell prompt", 10, |s| s.contains("e2e$"));
        let watched = Watched {
            pid: home.join("pid"),
            stty: home.join("stty"),
        };
        let cmd = format!(
            "CTXCONSOLE_HOME={home} RUST_BACKTRACE=0 sh -c 'echo $$ > {pid}; exec {program} {args}'; echo EXIT=$?; stty -a > {stty}",
            home = home.display(),
            pid = watched.pid.display(),
            stty = watched.stty.display(),
        );
        self.keys(&[&cmd, "Enter"]);
        watched
    }

    fn alternate_on(&self) -> String {
        self.run(&["display", "-p", "-t", "e2e", "#{alternate_on}"])
            .trim()
            .to_string()
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "e2e"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "e2e"])
    }

    /// Poll the screen until `pred` holds; fail with the last screen after `secs`.
    fn wait_for(&self, what: &str, secs: u64, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(secs),
                "timed out waiting for {what}; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// The number after the first `label` on screen: `("as sent ", "as sent 9,905 B")` → 9905.
fn number_after(screen: &str, label: &str) -> Option<usize> {
    let at = screen.find(label)?;
    let digits: String = screen[at + label.len()..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(|c| *c != ',')
        .collect();
    digits.parse().ok()
}

/// "as sent 9,905 B" → 9905
fn as_sent_bytes(screen: &str) -> Option<usize> {
    number_after(screen, "as sent ")
}

#[test]
fn console_compacts_live_as_the_model_changes_and_restores_the_terminal() {
    let home = tempfile::tempdir().unwrap();
    let tmux = Tmux::start(130, 40);
    tmux.launch(home.path());

    let first = tmux.wait_for("both panes", 20, |s| {
        s.contains("1 Budgets") && s.contains("2 Catalog") && as_sent_bytes(s).is_some()
    });
    assert!(first.contains("tier A"), "{first}");
    let full = as_sent_bytes(&first).unwrap();
    assert!(first.contains("untouched"), "{first}");

    // The last row is a Tier C one: the catalog's after-bytes must drop under its cap.
    tmux.keys(&["G"]);
    let tier_c = tmux.wait_for("a Tier C compaction", 20, |s| {
        s.contains("tier C") && as_sent_bytes(s).is_some_and(|b| b != full)
    });
    let after = as_sent_bytes(&tier_c).unwrap();
    assert!(
        after <= 10_000 && after < full,
        "{after} vs {full}\n{tier_c}"
    );

    // Tier override back to A on the same row: the full catalog again.
    tmux.keys(&["t"]);
    tmux.wait_for("the tier A override", 20, |s| {
        s.contains("override") && as_sent_bytes(s) == Some(full)
    });

    tmux.keys(&["q"]);
    let after_quit = tmux.wait_for("the shell again", 10, |s| {
        !s.contains("2 Catalog") && s.trim_end().ends_with("e2e$")
    });
    assert!(!after_quit.contains("1 Budgets"));
    assert_eq!(
        tmux.run(&["display", "-p", "-t", "e2e", "#{alternate_on}"])
            .trim(),
        "0",
        "alternate screen left"
    );
    // Raw mode is off again: the shell echoes what is typed.
    tmux.keys(&["echo restored", "Enter"]);
    tmux.wait_for("the echo", 10, |s| s.contains("\nrestored"));
}

/// "allowance 22,896 tok" → 22896
fn allowance_tokens(screen: &str) -> Option<usize> {
    number_after(screen, "allowance ")
}

#[test]
fn a_multi_line_paste_previews_live_and_shrinks_the_allowance() {
    let home = tempfile::tempdir().unwrap();
    let tmux = Tmux::start(150, 45);
    tmux.launch(home.path());
    tmux.wait_for("the console", 20, |s| allowance_tokens(s).is_some());
    // The Tier C fallback row, then the Prompt pane.
    tmux.keys(&["G"]);
    let before = tmux.wait_for("tier C", 20, |s| s.contains("tier C"));
    let empty_allowance = allowance_tokens(&before).unwrap();
    tmux.keys(&["p"]);
    tmux.wait_for("the Prompt pane", 10, |s| s.contains("esc leaves"));

    // A bracketed paste of a few lines: text in the box, nothing sent, no key bindings fired
    // (the `q` in "quickly" must not quit).
    let paste = home.path().join("paste.txt");
    let text =
        "remember this launch note,\ndraft a blog from it quickly\nand make an illustration\n";
    std::fs::write(&paste, text).unwrap();
    tmux.run(&["load-buffer", paste.to_str().unwrap()]);
    tmux.run(&["paste-buffer", "-p", "-t", "e2e"]);
    // Waiting for GATE too, the preview's last section: capture-pane can catch a frame
    // half drawn, its RANKING line cut and the rest blank (seen once in ten runs).
    let shown = tmux.wait_for("the live preview", 20, |s| {
        s.contains("[Context:")
            && s.contains("RANKING")
            && s.contains("GATE")
            && allowance_tokens(s).is_some_and(|a| a < empty_allowance)
    });
    assert!(shown.contains("memory"), "{shown}");
    assert!(
        shown.contains("builtin.remember-and-blog"),
        "ranked catalog\n{shown}"
    );
    assert!(shown.contains("3 Prompt · 4 lines"), "{shown}");
    assert!(shown.contains("GATE"), "{shown}");
    let with_instruction = allowance_tokens(&shown).unwrap();

    // A paste of more than five lines is an attachment: a chip under the box, the
    // instruction unchanged, the allowance smaller again.
    let note = home.path().join("note.txt");
    std::fs::write(&note, "launch moved to 2 December, quickly\n".repeat(20)).unwrap();
    tmux.run(&["load-buffer", note.to_str().unwrap()]);
    tmux.run(&["paste-buffer", "-p", "-t", "e2e"]);
    let shown = tmux.wait_for("the chip", 20, |s| {
        s.contains("1 attached")
            && s.contains("attachment paste 1")
            && allowance_tokens(s).is_some_and(|a| a < with_instruction)
    });
    assert!(shown.contains("3 Prompt · 4 lines"), "{shown}");
    // The chip names the paste as the model is told it, then its first line (shortened
    // to fit).
    assert!(
        shown.contains("▸ paste 1 — launch") && shown.contains("ecember, quickly"),
        "{shown}"
    );
    assert!(shown.contains("memory"), "{shown}");

    // Leaving the pane and quitting still work.
    tmux.keys(&["Escape"]);
    tmux.wait_for("budgets again", 10, |s| {
        s.contains("1 Budgets") && !s.contains("esc leaves")
    });
    tmux.keys(&["q"]);
    tmux.wait_for("the shell again", 10, |s| s.trim_end().ends_with("e2e$"));
}

#[test]
fn history_filters_to_failed_plans_and_opens_one() {
    let home = tempfile::tempdir().unwrap();
    let tmux = Tmux::start(150, 42);
    tmux.launch(home.path());
    tmux.wait_for("the console", 20, |s| s.contains("1 Budgets"));
    // A fresh start seeded the store: History opens on it with drift markers.
    tmux.keys(&["4"]);
    let opened = tmux.wait_for("the History pane", 20, |s| {
        s.contains("Plans · ") && s.contains("✓ followed") && s.contains("Models · ")
    });
    assert!(opened.contains("Groups · "), "{opened}");
    let all = number_after(&opened, "Plans · ").unwrap();

    // outcome: all → ok → guarded → failed
    tmux.keys(&["o", "o", "o"]);
    let failed = tmux.wait_for("failed plans only", 20, |s| {
        s.contains("outcome=failed") && number_after(s, "Plans · ").is_some_and(|n| n < all)
    });
    assert!(failed.contains("✗ failed"), "{failed}");
    assert!(!failed.contains("✓ followed"), "{failed}");

    tmux.keys(&["j", "Enter"]);
    let plan = tmux.wait_for("the plan in full", 20, |s| {
        s.contains("esc closes") && s.contains("raw response:")
    });
    assert!(plan.contains("failed: "), "{plan}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("the lists again", 10, |s| {
        s.contains("outcome=failed") && !s.contains("esc closes")
    });
    tmux.keys(&["q"]);
    tmux.wait_for("the shell again", 10, |s| s.trim_end().ends_with("e2e$"));
}

#[test]
fn history_replays_a_failed_plan_live_and_shows_it_beside_the_original() {
    let server = common::llm_server::LlmServer::start();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        server.config_routing_everything(),
    )
    .unwrap();
    let tmux = Tmux::start(160, 44);
    tmux.launch(home.path());
    tmux.wait_for("the console", 20, |s| s.contains("1 Budgets"));
    tmux.keys(&["4"]);
    tmux.wait_for("the History pane", 20, |s| s.contains("Plans · "));
    tmux.keys(&["o", "o", "o"]);
    // Rows loaded (not just the title), so Enter has a plan to open.
    tmux.wait_for("failed plans only", 20, |s| {
        s.contains("outcome=failed") && s.contains("✗ failed") && !s.contains("✓ followed")
    });
    tmux.keys(&["Enter"]);
    let plan = tmux.wait_for("the failed plan in full", 20, |s| {
        s.contains("esc closes") && s.contains("failed: ")
    });
    let id = plan
        .split("Plan ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .unwrap()
        .to_string();
    // r → the picker; j → the plan's own model; Enter → live.
    tmux.keys(&["r"]);
    tmux.wait_for("the replay picker", 10, |s| s.contains("Replay with:"));
    tmux.keys(&["j", "Enter"]);
    let done = tmux.wait_for("the replay result", 20, |s| s.contains("stored as "));
    assert!(done.contains(&format!("stored as {id}.r1")), "{done}");
    assert!(done.contains("decoded by the direct stage"), "{done}");
    // The original stays beside it the whole time (no blink to "loading…" while its detail
    // is read again), and then lists the replay.
    assert!(
        done.contains(&format!("Plan {id}")) && done.contains("failed: "),
        "{done}"
    );
    let listed = tmux.wait_for("the replay listed in the plan's detail", 20, |s| {
        s.contains("replays (1, newest first)")
    });
    assert!(listed.contains(&format!("Plan {id}")), "{listed}");
    assert!(!server.requests.lock().unwrap().is_empty());
    tmux.keys(&["Escape"]);
    tmux.wait_for("the replay closed", 10, |s| !s.contains("stored as "));
    tmux.keys(&["q"]);
    tmux.wait_for("the shell again", 10, |s| s.trim_end().ends_with("e2e$"));
}

/// How a program started by [`Tmux::launch_watched`] ended.
struct Watched {
    pid: std::path::PathBuf,
    stty: std::path::PathBuf,
}

impl Watched {
    fn pid(&self) -> String {
        let text = wait_for_file(&self.pid);
        text.trim().to_string()
    }

    /// `stty -a` as the program left the terminal: canonical mode and echo back on.
    fn assert_terminal_sane(&self, what: &str) {
        let stty = wait_for_file(&self.stty);
        let settings: Vec<&str> = stty.split([' ', ';', '\n']).collect();
        for flag in ["icanon", "echo", "isig", "icrnl", "opost"] {
            assert!(
                settings.contains(&flag),
                "{what}: terminal left without {flag} (raw mode):\n{stty}"
            );
        }
    }
}

/// A file's text once it has some; the test fails after 20 s.
fn wait_for_file(path: &std::path::Path) -> String {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && text.ends_with('\n')
        {
            return text;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting for {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `kill -s SIGNAL PID` through sh's builtin (a minimal image may have no kill binary).
fn send_signal(signal: &str, pid: &str) {
    let status = Command::new("sh")
        .args(["-c", &format!("kill -s {signal} {pid}")])
        .status()
        .unwrap();
    assert!(status.success(), "kill -s {signal} {pid}");
}

/// After the program ended: the shell's own screen (not the alternate one) with the exit
/// status the shell saw, and a terminal in cooked mode with echo.
fn assert_restored(tmux: &Tmux, watched: &Watched, what: &str, status: i32) -> String {
    let exit_line = |s: &str| {
        s.lines()
            .find(|l| l.starts_with("EXIT="))
            .map(str::to_string)
    };
    let shown = tmux.wait_for(&format!("{what}: the shell's EXIT line"), 20, |s| {
        exit_line(s).is_some()
    });
    assert_eq!(
        exit_line(&shown),
        Some(format!("EXIT={status}")),
        "{what}: exit status\n{shown}"
    );
    watched.assert_terminal_sane(what);
    assert_eq!(
        tmux.alternate_on(),
        "0",
        "{what}: alternate screen left on\n{shown}"
    );
    // The shell takes input again and it is echoed.
    tmux.keys(&["clear; echo after-$((6*7))", "Enter"]);
    let after = tmux.wait_for(&format!("{what}: the echo"), 10, |s| s.contains("after-42"));
    assert!(
        !after.contains("1 Budgets"),
        "{what}: a frame on the shell screen\n{after}"
    );
    shown
}

#[test]
fn every_terminating_signal_restores_the_terminal_and_exits_128_plus_its_number() {
    let bin = env!("CARGO_BIN_EXE_ctxconsole");
    for (signal, number) in [("TERM", 15), ("INT", 2), ("HUP", 1), ("QUIT", 3)] {
        let home = tempfile::tempdir().unwrap();
        let tmux = Tmux::start(130, 40);
        let watched = tmux.launch_watched(home.path(), bin, "");
        let pid = watched.pid();
        tmux.wait_for("the console", 20, |s| {
            s.contains("1 Budgets") && as_sent_bytes(s).is_some()
        });
        assert_eq!(tmux.alternate_on(), "1");
        send_signal(signal, &pid);
        assert_restored(&tmux, &watched, &format!("SIG{signal}"), 128 + number);
    }
}

/// The example `terminal_guard_panic` (built by `cargo test`, or `cargo build --examples`):
/// the console's guard, a frame, then a panic on a worker thread or the main thread.
fn guard_panic_example() -> String {
    let bin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_ctxconsole"));
    let path = bin
        .parent()
        .unwrap()
        .join("examples")
        .join("terminal_guard_panic");
    assert!(
        path.exists(),
        "build the example first: cargo build --examples"
    );
    path.display().to_string()
}

#[test]
fn a_panic_on_any_thread_or_an_error_restores_the_terminal() {
    let example = guard_panic_example();
    for (mode, status, message) in [
        ("worker", 101, "example panic on a worker thread"),
        ("main", 101, "example panic on the main thread"),
        ("error", 1, "example error"),
    ] {
        let home = tempfile::tempdir().unwrap();
        let tmux = Tmux::start(100, 30);
        let watched = tmux.launch_watched(home.path(), &example, mode);
        tmux.wait_for("the guarded frame", 20, |s| s.contains("guard up"));
        assert_eq!(tmux.alternate_on(), "1");
        // Any key: the example fails as told and goes on drawing otherwise.
        tmux.keys(&["x"]);
        let shown = assert_restored(&tmux, &watched, mode, status);
        // The message is on the shell's screen, not lost with the alternate one.
        assert!(shown.contains(message), "{mode}\n{shown}");
    }
}

#[test]
fn help_takes_every_key_until_closed_so_question_then_q_leaves_the_console_running() {
    let home = tempfile::tempdir().unwrap();
    let tmux = Tmux::start(100, 24);
    tmux.launch(home.path());
    tmux.wait_for("the console", 20, |s| s.contains("1 Budgets"));
    tmux.keys(&["?"]);
    tmux.wait_for("help", 10, |s| s.contains("keys (live keymap) · 1–"));
    // q must not quit while help is open; j after it scrolls help, so the console read both.
    tmux.keys(&["q", "j"]);
    let scrolled = tmux.wait_for("help scrolled after q", 10, |s| {
        s.contains("keys (live keymap) · 2–")
    });
    assert!(!scrolled.contains("e2e$"), "{scrolled}");
    assert_eq!(tmux.alternate_on(), "1", "the console is still up");
    tmux.keys(&["Escape"]);
    tmux.wait_for("help closed", 10, |s| {
        !s.contains("keys (live keymap)") && s.contains("q quit")
    });
    tmux.keys(&["q"]);
    tmux.wait_for("the shell again", 10, |s| s.trim_end().ends_with("e2e$"));
}

#[test]
fn a_paste_without_bracketed_paste_stays_text_and_the_mouse_is_captured() {
    let home = tempfile::tempdir().unwrap();
    let tmux = Tmux::start(150, 45);
    tmux.launch(home.path());
    tmux.wait_for("the console", 20, |s| s.contains("1 Budgets"));
    assert_eq!(
        tmux.run(&["display", "-p", "-t", "e2e", "#{mouse_any_flag}"])
            .trim(),
        "1",
        "the console asks for mouse events"
    );
    tmux.keys(&["p"]);
    tmux.wait_for("the Prompt pane", 10, |s| s.contains("esc leaves"));
    // paste-buffer without -p: no brackets, the text arrives as keys (newlines as Enter,
    // the tab as Tab). Neither the tab nor the q in "quickly" may act as a key.
    let paste = home.path().join("paste.txt");
    let text = "draft a blog\tquickly\nand make an illustration\n".repeat(10);
    std::fs::write(&paste, &text).unwrap();
    tmux.run(&["load-buffer", paste.to_str().unwrap()]);
    tmux.run(&["paste-buffer", "-t", "e2e"]);
    // Twenty lines: one paste, so one attachment (not twenty keys, nor text in the box).
    let shown = tmux.wait_for("the pasted text previewed", 20, |s| {
        s.contains(" attached") && s.contains("attachment paste 1") && s.contains("RANKING")
    });
    assert!(shown.contains("▸ paste 1 — draft a blog"), "{shown}");
    assert!(
        shown.contains("esc leaves"),
        "still in the Prompt pane\n{shown}"
    );
    leave_the_prompt_and_quit(&tmux);
    assert_eq!(
        tmux.run(&["display", "-p", "-t", "e2e", "#{mouse_any_flag}"])
            .trim(),
        "0",
        "mouse capture given back"
    );
}

#[test]
fn an_enter_typed_fast_after_a_search_keeps_it_and_the_next_key_is_a_key() {
    let home = tempfile::tempdir().unwrap();
    let tmux = Tmux::start(180, 45);
    tmux.launch(home.path());
    tmux.wait_for("the console", 20, |s| s.contains("1 Budgets"));
    // One send-keys: the keys reach the console in one burst, as from a script or a fast
    // typist. The Enter must end the search, not be dropped as a pasted newline.
    tmux.keys(&["/", "l", "o", "c", "a", "l", "Enter"]);
    tmux.wait_for("the search kept", 10, |s| {
        s.contains("/local") && !s.contains("type to search")
    });
    tmux.keys(&["p"]);
    let prompt = tmux.wait_for("the Prompt pane", 10, |s| s.contains("esc leaves"));
    assert!(!prompt.contains("/localp"), "{prompt}");
    leave_the_prompt_and_quit(&tmux);
}

/// The Preview's title line: ` Preview · MODEL · tier X … `.
fn preview_title(screen: &str) -> Option<&str> {
    let at = screen.find(" Preview · ")?;
    screen[at..].lines().next()
}

#[test]
fn the_preview_names_the_model_it_was_computed_for_and_follows_a_model_change() {
    let home = tempfile::tempdir().unwrap();
    let tmux = Tmux::start(150, 45);
    tmux.launch(home.path());
    tmux.wait_for("the console", 20, |s| {
        s.contains("1 Budgets") && as_sent_bytes(s).is_some()
    });
    // The first row is anthropic/claude-haiku-4-5 (4,000 out); type a prompt for it.
    tmux.keys(&["p"]);
    tmux.wait_for("the Prompt pane", 10, |s| s.contains("esc leaves"));
    tmux.keys(&["-l", "draft a blog post about the launch"]);
    let first = tmux.wait_for("a preview for the first row", 20, |s| {
        s.contains("RANKING")
            && preview_title(s).is_some_and(|t| {
                t.contains("anthropic/claude-haiku-4-5 · tier A") && !t.contains("updating")
            })
    });
    assert!(
        first.contains("WINDOW 184,000 = 180,000 in + 4,000 out"),
        "{first}"
    );

    // Back to Budgets, one row down (claude-sonnet-4-5, 8,000 out), back to the prompt: the
    // preview is the new model's, named so, its window the new row's.
    tmux.keys(&["Escape"]);
    tmux.wait_for("budgets again", 10, |s| !s.contains("esc leaves"));
    tmux.keys(&["j"]);
    tmux.wait_for("the catalog for the next row", 20, |s| {
        s.contains("2 Catalog · anthropic/claude-sonnet-4-5 · tier A")
    });
    tmux.keys(&["p"]);
    let second = tmux.wait_for("the preview for the new model", 20, |s| {
        s.contains("RANKING")
            && preview_title(s).is_some_and(|t| {
                t.contains("anthropic/claude-sonnet-4-5 · tier A") && !t.contains("updating")
            })
    });
    assert!(
        second.contains("WINDOW 188,000 = 180,000 in + 8,000 out"),
        "{second}"
    );
    assert!(!second.contains("claude-haiku-4-5 · tier"), "{second}");
    assert!(
        second.contains("draft a blog post about the launch"),
        "the prompt stayed: {second}"
    );

    // A tier override is named as one, in the Preview and in the Catalog's title.
    tmux.keys(&["Escape"]);
    tmux.wait_for("budgets again", 10, |s| !s.contains("esc leaves"));
    tmux.keys(&["t", "t", "t", "p"]);
    let overridden = tmux.wait_for("the preview under the tier C override", 20, |s| {
        preview_title(s).is_some_and(|t| {
            t.contains("anthropic/claude-sonnet-4-5 · tier C (overridden)")
                && !t.contains("updating")
        })
    });
    assert!(
        overridden.contains("2 Catalog · anthropic/claude-sonnet-4-5 · tier C (overridden)"),
        "{overridden}"
    );
    leave_the_prompt_and_quit(&tmux);
}

/// Issue 18: type a prompt, mark a second model, send with A/B on, see both models' results
/// side by side with their arm, and open one in History.
/// The console on a workspace whose provider `test/` is `server`, with the two `models`
/// (rows of tier B) filtered to, the second marked to send, the first selected, and the
/// Prompt pane holding an instruction the preview has planned. `timeout`: the calls' own.
/// The console is watched: its pid, and how it ended, are there to read.
fn console_sending_to_two(
    server: &common::llm_server::LlmServer,
    models: [&str; 2],
    timeout: &str,
    (width, height): (u16, u16),
) -> (tempfile::TempDir, Tmux, Watched) {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[llm]\nconnect_timeout = \"1s\"\ntimeout = \"{timeout}\"\nretries = 1\nretry_base = \"50ms\"\n\n\
             [providers.test]\nprefix = \"test/\"\nbase_url = \"{}\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let rows: Vec<String> = models
        .iter()
        .map(|m| format!("[[model]]\nid = \"{m}\"\ninput_tokens = 32000\noutput_tokens = 2000\ntier = \"B\"\n"))
        .collect();
    std::fs::write(home.path().join("budgets.toml"), rows.join("\n")).unwrap();
    let tmux = Tmux::start(width, height);
    let watched = tmux.launch_watched(home.path(), env!("CARGO_BIN_EXE_ctxconsole"), "");
    tmux.wait_for("the console", 20, |s| s.contains("1 Budgets"));
    // Only the two test models, the second marked, the first selected.
    tmux.keys(&["/"]);
    tmux.keys(&["test/"]);
    tmux.wait_for("the two test rows", 10, |s| s.contains("2 of "));
    // Apart from the typed text: Enter in the same burst would be pasted as text.
    tmux.keys(&["Enter"]);
    tmux.wait_for("the search kept", 10, |s| !s.contains("enter keep"));
    tmux.keys(&["j", "M", "k"]);
    tmux.wait_for("a model marked", 10, |s| s.contains("1 marked to send"));
    tmux.keys(&["p"]);
    tmux.keys(&["remember this launch note and draft a blog from it"]);
    tmux.wait_for("the preview", 20, |s| s.contains("GATE"));
    (home, tmux, watched)
}

#[test]
fn the_prompt_pane_sends_to_two_models_side_by_side_and_opens_a_result_in_history() {
    let server = common::llm_server::LlmServer::start();
    let (_home, tmux, _watched) = console_sending_to_two(
        &server,
        ["test/ok-json", "test/tool-calls"],
        "5s",
        (260, 50),
    );
    tmux.keys(&["C-t"]);
    tmux.wait_for("A/B full", 10, |s| s.contains("A/B full"));
    tmux.keys(&["C-s"]);
    let sent = tmux.wait_for("both results", 30, |s| {
        s.contains("plan id") && !s.contains("Sending…")
    });
    for needle in [
        "test/ok-json [compacted]",
        "test/ok-json [full]",
        "test/tool-calls [compacted]",
        "test/tool-calls [full]",
    ] {
        assert!(sent.contains(needle), "{needle}:\n{sent}");
    }
    let id = sent
        .lines()
        .find_map(|l| l.split("plan id").nth(1))
        .and_then(|t| t.split_whitespace().next())
        .unwrap()
        .to_string();
    assert_ne!(id, "-", "{sent}");
    tmux.keys(&["C-o"]);
    tmux.wait_for("the plan in History", 20, |s| {
        s.contains(&format!("Plan {id} · esc closes"))
    });
    assert_eq!(server.requests.lock().unwrap().len(), 4);
    tmux.keys(&["q"]);
    tmux.wait_for("the shell again", 10, |s| s.trim_end().ends_with("e2e$"));
}

/// Tester 10 T10-24: quitting while a send is in flight dropped the answers already back
/// (one model answered, another still hanging: 0 plans stored, no word). Quitting now
/// cancels what is still out, as esc does, and stores what came back before it exits.
#[test]
fn quitting_during_a_send_stores_the_answers_already_back() {
    let server = common::llm_server::LlmServer::start();
    let (home, tmux, _watched) = one_answered_one_hanging(&server);
    // Not esc, which cancels the send itself: ctrl+c quits from the Prompt pane.
    tmux.keys(&["C-c"]);
    let shown = tmux.wait_for("the shell again", 30, |s| s.trim_end().ends_with("e2e$"));
    assert!(
        shown.contains("storing the answers already back"),
        "what quitting said:\n{shown}"
    );
    assert_sent_plan_stored(home.path(), "test/ok-json", "quitting");
}

/// The operator insists: a second terminating signal while the console finishes after the
/// first (here held up by a store another connection has locked) ends it at once, its
/// terminal restored, with 128 + the signal's number — and the answer already back, still
/// waiting for the store, is written out as a plan line first (tester 11 T11-2: it was lost).
#[test]
fn a_second_terminating_signal_while_finishing_ends_the_console_at_once() {
    let server = common::llm_server::LlmServer::start();
    let (home, tmux, watched) =
        console_sending_to_two(&server, ["test/ok-json", "test/hang"], "60s", (200, 50));
    // Locked before the send: the answer back waits in hand for the lock (stored the moment
    // it is back otherwise, tester 22 F4), while the other call is still out.
    let store = rusqlite::Connection::open(home.path().join("history.sqlite")).unwrap();
    store.execute_batch("BEGIN IMMEDIATE").unwrap();
    send_one_answered_one_hanging(&server, &tmux);
    tmux.wait_for("the answer in hand, waiting for the lock", 20, |s| {
        s.contains("(ok) · in hand: waiting for the")
    });
    let pid = watched.pid();
    send_signal("TERM", &pid);
    tmux.wait_for("the console finishing", 20, |s| {
        s.contains("storing the answers already back")
    });
    // Finishing now waits for the store's write lock (a minute), then 10 s more at quit.
    std::thread::sleep(Duration::from_millis(500));
    let insisted = Instant::now();
    send_signal("TERM", &pid);
    assert_restored(&tmux, &watched, "a second SIGTERM", 143);
    assert!(
        insisted.elapsed() < Duration::from_secs(10),
        "a second SIGTERM took {:?} to end the console",
        insisted.elapsed()
    );
    drop(store);
    let files = unstored_files(home.path());
    assert_eq!(files.len(), 1, "the answer in hand written out: {files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.contains("test/ok-json"), "{text}");
    let imported = common::json_of(
        common::ctx(home.path())
            .args(["import", "plans", "--json"])
            .arg(&files[0]),
    );
    assert_eq!(imported["added"], 1, "{imported}");
    assert_sent_plan_stored(home.path(), "test/ok-json", "imported from the file");
}

/// The `unstored-plans-*` files a forced exit wrote in `home`.
fn unstored_files(home: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(home)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("unstored-plans-")
        })
        .collect()
}

/// Tester 12 T12-7: an A/B send to two models while another connection holds the store's
/// write lock, every answer back and waiting for the store; a quit, then a second signal:
/// the file held only the answer whose store was running (1 of 2 with A/B full, 1 of 5
/// with A/B all), the others, paid for, were lost. Every answer back is in the file, each
/// importable.
#[test]
fn a_second_signal_during_an_ab_send_writes_every_answer_back() {
    let server = common::llm_server::LlmServer::start();
    let (home, tmux, watched) = console_sending_to_two(
        &server,
        ["test/ok-json", "test/tool-calls"],
        "5s",
        (200, 50),
    );
    tmux.keys(&["C-t"]);
    tmux.wait_for("A/B full", 10, |s| s.contains("A/B full"));
    let store = rusqlite::Connection::open(home.path().join("history.sqlite")).unwrap();
    store.execute_batch("BEGIN IMMEDIATE").unwrap();
    tmux.keys(&["C-s"]);
    tmux.wait_for("the four answers waiting for the store", 30, |s| {
        s.contains("Storing… waiting for the store's write lock")
    });
    assert_eq!(server.requests.lock().unwrap().len(), 4);
    let pid = watched.pid();
    send_signal("TERM", &pid);
    tmux.wait_for("the console finishing", 20, |s| {
        s.contains("storing the answers already back")
    });
    std::thread::sleep(Duration::from_millis(500));
    send_signal("TERM", &pid);
    let shown = assert_restored(&tmux, &watched, "a second SIGTERM", 143);
    assert!(shown.contains("ended while storing 4 answers"), "{shown}");
    drop(store);
    let files = unstored_files(home.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert_eq!(text.lines().count(), 4, "every answer back:\n{text}");
    let imported = common::json_of(
        common::ctx(home.path())
            .args(["import", "plans", "--json"])
            .arg(&files[0]),
    );
    assert_eq!(imported["added"], 4, "{imported}");
    for model in ["test/ok-json", "test/tool-calls"] {
        assert_sent_plan_stored(home.path(), model, "imported from the file");
    }
}

/// A console sending to `test/ok-json` (answered at once) and `test/hang` (never answered),
/// the answer already back and the other call still out.
fn one_answered_one_hanging(
    server: &common::llm_server::LlmServer,
) -> (tempfile::TempDir, Tmux, Watched) {
    let (home, tmux, watched) =
        console_sending_to_two(server, ["test/ok-json", "test/hang"], "60s", (200, 50));
    send_one_answered_one_hanging(server, &tmux);
    (home, tmux, watched)
}

/// Send from the console to `test/ok-json` (answered at once) and `test/hang` (never
/// answered), and wait until the answer is back and the other call still out.
fn send_one_answered_one_hanging(server: &common::llm_server::LlmServer, tmux: &Tmux) {
    tmux.keys(&["C-s"]);
    tmux.wait_for("the send under way", 20, |s| s.contains("Sending…"));
    // Both calls reached the server; the first is answered at once, the other hangs.
    let start = Instant::now();
    while server.requests.lock().unwrap().len() < 2 {
        assert!(start.elapsed() < Duration::from_secs(20), "two requests");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
}

/// The store in `home` holds a plan `send` stored for `model`.
fn assert_sent_plan_stored(home: &std::path::Path, model: &str, what: &str) {
    let plans = common::json_of(common::ctx(home).args(["history", "--plans", "--json"]));
    let models: Vec<&str> = plans["plans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["source"] == "sent")
        .map(|p| p["model"].as_str().unwrap())
        .collect();
    assert!(
        models.contains(&model),
        "{what}: no plan for {model}\n{plans:#}"
    );
}

/// The terminal closing (SIGHUP) or a `kill` (SIGTERM) during a send lost the answers
/// already back: the signal thread ended the process at once. A terminating signal now
/// takes the quit's way out — what is still out is cancelled, what came back is stored —
/// and the console still ends with 128 + the signal's number, its terminal restored.
#[test]
fn a_terminating_signal_during_a_send_stores_the_answers_already_back() {
    for (signal, number) in [("TERM", 15), ("HUP", 1)] {
        let server = common::llm_server::LlmServer::start();
        let (home, tmux, watched) = one_answered_one_hanging(&server);
        send_signal(signal, &watched.pid());
        let what = format!("SIG{signal}");
        let shown = assert_restored(&tmux, &watched, &what, 128 + number);
        assert!(
            shown.contains("storing the answers already back"),
            "{what}: what the console said\n{shown}"
        );
        assert_sent_plan_stored(home.path(), "test/ok-json", &what);
    }
    // The terminal itself closing: its window gone (the tmux server killed), SIGHUP with
    // no terminal left to draw on or restore.
    let server = common::llm_server::LlmServer::start();
    let (home, tmux, watched) = one_answered_one_hanging(&server);
    let pid = watched.pid();
    tmux.run(&["kill-server"]);
    let start = Instant::now();
    while Command::new("sh")
        .args(["-c", &format!("kill -0 {pid} 2>/dev/null")])
        .status()
        .unwrap()
        .success()
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the console still running 30 s after its terminal closed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_sent_plan_stored(home.path(), "test/ok-json", "the terminal closed");
}

/// Tester 10 T10-22: a paste without bracketed paste over 1 KiB was cut at 1,024 bytes, its
/// rest waited for the next key, and that key was swallowed into it (crossterm's default
/// reader waits for a new edge after a full 1 KiB read). The whole paste is one attachment
/// at once, and the key after it acts as a key.
#[test]
fn a_long_paste_without_bracketed_paste_is_one_attachment_and_the_next_key_acts() {
    let (home, tmux) = console_in_the_prompt_pane();
    let paste = home.path().join("paste.txt");
    let text = log_lines(100);
    std::fs::write(&paste, &text).unwrap();
    tmux.run(&["load-buffer", paste.to_str().unwrap()]);
    tmux.run(&["paste-buffer", "-t", "e2e"]);
    let shown = one_attachment_of(&tmux, &text);
    assert!(!shown.contains("2 attached"), "{shown}");
    // The next key is a key: esc leaves the Prompt pane.
    leave_the_prompt_and_quit(&tmux);
}

/// Tester 11 T11-12: a bracketed paste holding the end marker `ESC[201~` ended at the
/// marker, and what followed it came as keys: `…\x1b[201~\x13` sent the prompt to the
/// model (ctrl+s), `…\x1b[201~\tq` left the Prompt and quit. Keys in the paste's burst are
/// its text: nothing is sent, the console stays in the Prompt pane.
#[test]
fn keys_after_a_fake_paste_end_marker_are_pasted_text_not_keys() {
    let server = common::llm_server::LlmServer::start();
    let (home, tmux, _watched) = console_sending_to_two(
        &server,
        ["test/ok-json", "test/tool-calls"],
        "5s",
        (200, 50),
    );
    let paste = home.path().join("paste.txt");
    for (text, shown) in [
        (
            "summarise this log line please\x1b[201~\x13",
            "summarise this log line please",
        ),
        ("hello there\x1b[201~\tq", "hello there"),
    ] {
        std::fs::write(&paste, text).unwrap();
        tmux.run(&["load-buffer", paste.to_str().unwrap()]);
        tmux.run(&["paste-buffer", "-p", "-t", "e2e"]);
        tmux.wait_for("the pasted text in the box", 10, |s| s.contains(shown));
        // Time for a send or a quit to show, had a key acted.
        std::thread::sleep(Duration::from_millis(1500));
        let s = tmux.screen();
        assert!(
            server.requests.lock().unwrap().is_empty(),
            "{text:?} sent a request\n{s}"
        );
        assert!(
            !s.contains("Sending…") && !s.contains("plan id"),
            "{text:?}\n{s}"
        );
        assert!(
            s.contains("esc leaves") && !s.trim_end().ends_with("e2e$"),
            "{text:?}: the console left the Prompt pane or quit\n{s}"
        );
    }
    tmux.keys(&["C-c"]);
    tmux.wait_for("the shell again", 10, |s| s.trim_end().ends_with("e2e$"));
}

/// Tester 11 T11-4: a paste arriving as keys in chunks ≈27–52 ms apart (over ssh, or a
/// loaded machine) was split into several attachments. Chunks 70 ms apart (plus the
/// spawn of each `tmux send-keys`) are one paste, one attachment; a key after it acts.
#[test]
fn a_paste_typed_as_keys_in_chunks_70_ms_apart_is_one_attachment() {
    let (_home, tmux) = console_in_the_prompt_pane();
    let text = log_lines(24);
    let chars: Vec<char> = text.chars().collect();
    for chunk in chars.chunks(256) {
        let chunk: String = chunk.iter().collect();
        tmux.run(&["send-keys", "-t", "e2e", "-l", &chunk]);
        std::thread::sleep(Duration::from_millis(70));
    }
    let shown = one_attachment_of(&tmux, &text);
    std::thread::sleep(Duration::from_millis(500));
    let s = tmux.screen();
    assert!(!s.contains("2 attached"), "{s}\n(first seen:\n{shown})");
    leave_the_prompt_and_quit(&tmux);
}

/// Tester 10 T10-16 residual, in a real terminal: with another process holding the store's
/// write lock, the answers back wait only for it. The pane says so, offers no esc, and esc
/// leaves the pane; the answer is stored once the lock goes.
#[test]
fn a_send_waiting_only_for_the_write_lock_says_so_and_esc_leaves_the_pane() {
    let server = common::llm_server::LlmServer::start();
    let (home, tmux, _watched) = console_sending_to_two(
        &server,
        ["test/ok-json", "test/tool-calls"],
        "5s",
        (200, 50),
    );
    let store = rusqlite::Connection::open(home.path().join("history.sqlite")).unwrap();
    store.execute_batch("BEGIN IMMEDIATE").unwrap();
    tmux.keys(&["C-s"]);
    let waiting = tmux.wait_for("the wait for the store", 20, |s| {
        s.contains("Storing… waiting for the store's write lock")
    });
    assert!(!waiting.contains("esc cancels"), "{waiting}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("the Prompt pane left", 10, |s| !s.contains("esc leaves"));
    store.execute_batch("ROLLBACK").unwrap();
    drop(store);
    let start = Instant::now();
    loop {
        let plans =
            common::json_of(common::ctx(home.path()).args(["history", "--plans", "--json"]));
        let sent = plans["plans"]
            .as_array()
            .map_or(0, |p| p.iter().filter(|p| p["source"] == "sent").count());
        if sent == 2 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the answers were not stored after the lock went\n{plans:#}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    tmux.keys(&["q"]);
    tmux.wait_for("the shell again", 10, |s| s.trim_end().ends_with("e2e$"));
}

/// The next key after a paste is a key: esc leaves the Prompt pane, then q quits to the shell.
fn leave_the_prompt_and_quit(tmux: &Tmux) {
    tmux.keys(&["Escape"]);
    tmux.wait_for("budgets again", 10, |s| !s.contains("esc leaves"));
    tmux.keys(&["q"]);
    tmux.wait_for("the shell again", 10, |s| s.trim_end().ends_with("e2e$"));
}

/// A console on a fresh workspace at 150×45, in its Prompt pane.
fn console_in_the_prompt_pane() -> (tempfile::TempDir, Tmux) {
    let home = tempfile::tempdir().unwrap();
    let tmux = Tmux::start(150, 45);
    tmux.launch(home.path());
    tmux.wait_for("the console", 20, |s| s.contains("1 Budgets"));
    tmux.keys(&["p"]);
    tmux.wait_for("the Prompt pane", 10, |s| s.contains("esc leaves"));
    (home, tmux)
}

/// `n` lines of a service log, as an operator pastes them.
fn log_lines(n: usize) -> String {
    (0..n)
        .map(|i| format!("L{i:03} 2026-11-26T10:00:00Z INFO worker id={i:06} status=ok\n"))
        .collect()
}

/// Waits until the Prompt box holds `text` whole as one attachment; the screen then.
fn one_attachment_of(tmux: &Tmux, text: &str) -> String {
    let whole = format!("{},{:03} B", text.len() / 1000, text.len() % 1000);
    tmux.wait_for("the whole paste as one attachment", 20, |s| {
        s.contains("1 attached") && s.contains(&whole)
    })
}

/// Tester 22 F3 in a real terminal: with the store held by another process in SQLite's
/// exclusive locking mode, the console used to sit on a blank screen, deaf to q, for the
/// whole minute the open waited. It draws at once, History says what it waits for, and q
/// quits while the wait goes on; the store is left as it was.
#[test]
fn a_store_held_locked_by_another_process_leaves_the_console_drawn_and_quittable() {
    let home = tempfile::tempdir().unwrap();
    common::succeeded(common::ctx(home.path()).args(["history", "--limit", "1"]));
    let path = home.path().join("history.sqlite");
    let before = std::fs::read(&path).unwrap();
    let holder = common::hold_exclusively(&path);
    let tmux = Tmux::start(120, 30);
    tmux.launch(home.path());
    tmux.wait_for("the console", 10, |s| s.contains("1 Budgets"));
    tmux.keys(&["4"]);
    tmux.wait_for("History saying what it waits for", 10, |s| {
        s.contains("locked now") && s.contains("waiting up to 60 s for it")
    });
    let asked = Instant::now();
    tmux.keys(&["q"]);
    tmux.wait_for("the shell again", 10, |s| s.trim_end().ends_with("e2e$"));
    assert!(asked.elapsed() < Duration::from_secs(10));
    drop(holder);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the store is untouched"
    );
}

/// Tester 36 F8 and tester 37 T37-3, on a real terminal: once every call of `send` is back and
/// only storing is left, with another process holding the store's write lock, its status line
/// says what it waits for — cut to the terminal's width, so it never wraps into copies of
/// itself — and the send ends as it should once the lock goes.
#[test]
fn send_on_a_narrow_terminal_says_it_waits_for_the_lock_on_one_cut_line() {
    let server = common::llm_server::LlmServer::start();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[llm]\nconnect_timeout = \"1s\"\ntimeout = \"5s\"\nretries = 0\n\n\
             [providers.test]\nprefix = \"test/\"\nbase_url = \"{}\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    std::fs::write(
        home.path().join("budgets.toml"),
        "[[model]]\nid = \"test/ok-json\"\ninput_tokens = 32000\noutput_tokens = 2000\ntier = \"B\"\n",
    )
    .unwrap();
    // The store exists, to be held locked.
    let seeded = common::ctx(home.path())
        .args(["history", "--limit", "1"])
        .output()
        .unwrap();
    assert!(seeded.status.success());
    let store = rusqlite::Connection::open(home.path().join("history.sqlite")).unwrap();
    store.execute_batch("BEGIN IMMEDIATE").unwrap();
    const WIDTH: usize = 50;
    let tmux = Tmux::start(WIDTH as u16, 20);
    tmux.launch_watched(
        home.path(),
        env!("CARGO_BIN_EXE_ctxconsole"),
        "send \"remember this launch note\" --model test/ok-json",
    );
    let waiting = tmux.wait_for("the wait for the lock", 20, |s| {
        s.contains("Storing… waiting")
    });
    let rows: Vec<&str> = waiting.lines().filter(|l| l.contains("Storing")).collect();
    assert_eq!(rows.len(), 1, "{waiting}");
    assert!(
        rows[0].chars().count() < WIDTH && rows[0].trim_end().ends_with('…'),
        "cut to the width: {:?}\n{waiting}",
        rows[0]
    );
    assert!(
        !waiting.contains("is writing)"),
        "the line wrapped:\n{waiting}"
    );
    store.execute_batch("ROLLBACK").unwrap();
    drop(store);
    let done = tmux.wait_for("the send to end", 90, |s| {
        s.lines().any(|l| l.starts_with("EXIT="))
    });
    assert!(done.lines().any(|l| l == "EXIT=0"), "{done}");
    assert!(
        !done.contains("Storing…"),
        "the status line cleared:\n{done}"
    );
}
