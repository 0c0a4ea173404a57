//! The window bar (issue 17 item 4): one function splits a planned request over its model's
//! window; its parts add up to the window for every instruction, attachment and tier, and
//! `preview` prints it as one plain line that agrees with `preview --json`.

mod common;

use common::{ctx, json_of};
use ctxconsole::core::budget::effective_row;
use ctxconsole::core::chart::{WindowPart, window_bar};
use ctxconsole::preview::{Ask, Attachment, plan};
use ctxconsole::workspace::{Workspace, WorkspaceOptions};
use std::path::Path;

const PROMPTS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/prompts");

fn attachment(name: &str) -> Attachment {
    Attachment {
        name: name.into(),
        text: std::fs::read_to_string(Path::new(PROMPTS_DIR).join(name)).unwrap(),
    }
}

/// A log a Tier C window can take only as a briefing.
fn big_log() -> Attachment {
    let text: String = (0..4_000)
        .map(|i| format!("2026-11-22T10:00:00Z INFO request {i} served in 12ms ok\n"))
        .collect();
    Attachment {
        name: "big.log".into(),
        text,
    }
}

#[test]
fn window_segments_add_up_to_the_window_for_every_prompt_and_tier() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::open(&WorkspaceOptions {
        dir: Some(dir.path().into()),
        registry: None,
    })
    .unwrap();
    let ctx = ws.preview_context(false);
    let cases: Vec<(&str, Vec<Attachment>)> = vec![
        ("remember this launch note, draft a blog from it", vec![]),
        ("summarise this file", vec![attachment("capture_log.rs")]),
        ("keep this for later", vec![attachment("users.json")]),
        (
            "compare these two",
            vec![attachment("users.json"), attachment("launch_note.md")],
        ),
        ("what went wrong here?", vec![big_log()]),
        ("", vec![attachment("gateway.log")]),
        ("hi", vec![]),
    ];
    let models = [
        "anthropic/claude-sonnet-4-5",
        "deepseek/deepseek-chat",
        "openrouter/openrouter/free",
        "ollama/llama3.2:3b",
    ];
    let mut briefed = 0;
    for model in models {
        for tier in [None, Some("A".parse().unwrap()), Some("C".parse().unwrap())] {
            let effective = effective_row(&ctx.budgets, model, tier);
            for (instruction, attachments) in &cases {
                let p = plan(
                    &ctx,
                    &Ask {
                        attachments,
                        ..Ask::new(&effective, instruction)
                    },
                );
                let bar = window_bar(&p);
                let row = &p.effective.row;
                let what = format!("{model} {tier:?} {instruction:?}");
                assert_eq!(bar.window(), row.input_tokens + row.output_tokens, "{what}");
                let parts: Vec<WindowPart> = bar.segments.iter().map(|(p, _)| *p).collect();
                assert_eq!(parts, WindowPart::ALL, "{what}");
                // Every part of the request is in the bar, and nothing else.
                assert_eq!(bar.used(), p.request.input_tokens, "{what}");
                assert_eq!(bar.tokens(WindowPart::Output), row.output_tokens, "{what}");
                let part = |names: &[&str]| -> usize {
                    p.request
                        .parts
                        .iter()
                        .filter(|q| names.contains(&q.part))
                        .map(|q| q.tokens)
                        .sum()
                };
                assert_eq!(
                    bar.tokens(WindowPart::Catalog),
                    part(&["catalog"]),
                    "{what}"
                );
                assert_eq!(
                    bar.tokens(WindowPart::Attachments),
                    part(&["attachment", "context"]),
                    "{what}"
                );
                assert!(
                    bar.tokens(WindowPart::System) >= part(&["system prompt"]),
                    "{what}: the system part holds the system prompt and the framing"
                );
                if bar.over_by() == 0 {
                    assert_eq!(bar.total(), bar.window(), "{what}");
                } else {
                    assert_eq!(bar.tokens(WindowPart::Free), 0, "{what}");
                    assert_eq!(bar.total(), bar.used() + row.output_tokens, "{what}");
                }
                for width in [1, 20, 40, 61] {
                    let cells: usize = bar.cells(width).iter().map(|(_, n)| n).sum();
                    assert_eq!(cells, width, "{what} in {width}");
                }
                briefed += usize::from(p.attachments.iter().any(|a| a.gate.briefing.is_some()));
            }
        }
    }
    assert!(briefed > 0, "some attachment went as a briefing");
}

/// The window line of `preview`'s text output.
fn window_line(text: &str) -> &str {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("window "))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    lines[0].trim()
}

/// `name 1,234` after `letter ` in the line's legend → 1234.
fn legend_tokens(line: &str, letter: char, name: &str) -> usize {
    let label = format!("{letter} {name} ");
    let at = line
        .find(&label)
        .unwrap_or_else(|| panic!("{label:?} in {line}"));
    line[at + label.len()..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(|c| *c != ',')
        .collect::<String>()
        .parse()
        .unwrap()
}

#[test]
fn preview_prints_the_window_on_one_plain_line_that_agrees_with_the_json() {
    let home = tempfile::tempdir().unwrap();
    let note = Path::new(PROMPTS_DIR).join("launch_note.md");
    let args = [
        "preview",
        "remember this launch note, draft a blog from it and make an illustration",
        "--model",
        "openrouter/openrouter/free",
        "--attach",
        note.to_str().unwrap(),
    ];
    let out = ctx(home.path()).args(args).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let line = window_line(&text);
    let json = json_of(ctx(home.path()).args(args).arg("--json"));

    // window 25,500 = input 24,000 + output 1,500 [scccc…aa…oo…....] s system+framing …
    let row = json_of(ctx(home.path()).args([
        "budgets",
        "--model",
        "openrouter/openrouter/free",
        "--json",
    ]));
    let input = row["row"]["input_tokens"].as_u64().unwrap() as usize;
    let output = row["row"]["output_tokens"].as_u64().unwrap() as usize;
    let head = format!(
        "window {} = input {} + output {} [",
        ctxconsole::format::thousands(input + output),
        ctxconsole::format::thousands(input),
        ctxconsole::format::thousands(output)
    );
    assert!(line.starts_with(&head), "{line}");
    let bar: String = line[head.len()..]
        .chars()
        .take_while(|c| *c != ']')
        .collect();
    assert_eq!(bar.chars().count(), 40, "{line}");
    // Every part that holds tokens has cells, in the window's order.
    let order: String = {
        let mut seen = String::new();
        for c in bar.chars() {
            if !seen.ends_with(c) {
                seen.push(c);
            }
        }
        seen
    };
    assert_eq!(order, "sciao.", "{line}");
    assert!(bar.is_ascii(), "plain text for a log: {line}");

    let parts = json["request"]["parts"].as_array().unwrap();
    let tokens_of = |names: &[&str]| -> usize {
        parts
            .iter()
            .filter(|p| names.contains(&p["part"].as_str().unwrap()))
            .map(|p| p["tokens"].as_u64().unwrap() as usize)
            .sum()
    };
    assert_eq!(legend_tokens(line, 'c', "catalog"), tokens_of(&["catalog"]));
    assert_eq!(
        legend_tokens(line, 'i', "instruction"),
        tokens_of(&["defaults", "hint", "intent"])
    );
    assert_eq!(
        legend_tokens(line, 'a', "attachments"),
        tokens_of(&["attachment", "context"])
    );
    assert_eq!(legend_tokens(line, 'o', "output reserve"), output);
    let input_tokens = json["request"]["input_tokens"].as_u64().unwrap() as usize;
    let system = legend_tokens(line, 's', "system+framing");
    let free = legend_tokens(line, '.', "free");
    assert_eq!(
        system
            + tokens_of(&[
                "catalog",
                "defaults",
                "hint",
                "intent",
                "attachment",
                "context"
            ]),
        input_tokens
    );
    assert_eq!(free, input - input_tokens);
    assert!(!line.contains("OVER"), "{line}");
}
