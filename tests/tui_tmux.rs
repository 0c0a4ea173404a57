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

    // A bracketed paste of several lines: text in the box, nothing sent, no key bindings fired
    // (the `q` in "quickly" must not quit).
    let paste = home.path().join("paste.txt");
    let text =
        "remember this launch note,\ndraft a blog from it quickly\nand make an illustration\n"
            .repeat(20);
    std::fs::write(&paste, &text).unwrap();
    tmux.run(&["load-buffer", paste.to_str().unwrap()]);
    tmux.run(&["paste-buffer", "-p", "-t", "e2e"]);
    let shown = tmux.wait_for("the live preview", 20, |s| {
        s.contains("[Context:")
            && s.contains("RANKING")
            && allowance_tokens(s).is_some_and(|a| a < empty_allowance)
    });
    assert!(shown.contains("memory"), "{shown}");
    assert!(
        shown.contains("builtin.remember-and-blog"),
        "ranked catalog\n{shown}"
    );
    assert!(shown.contains("3 Prompt · 61 lines"), "{shown}");
    assert!(shown.contains("GATE"), "{shown}");

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
