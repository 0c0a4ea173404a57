//! Console conventions the binary itself keeps: a keymap that leaves no way to quit is
//! refused at load (exit 2, the file and the keys named), and no Rust debug name reaches
//! text output.

mod common;
use common::ctx;

#[test]
fn a_keymap_that_unbinds_every_quit_key_is_refused_naming_the_file_and_the_keys() {
    let home = tempfile::tempdir().unwrap();
    let keymap = home.path().join("keymap.toml");
    std::fs::write(
        &keymap,
        "[keys]\n\"q\" = \"none\"\n\"ctrl+c\" = \"cycle_tier\"\n",
    )
    .unwrap();
    let out = ctx(home.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    for part in [
        keymap.display().to_string().as_str(),
        "no key bound to quit",
        "\"q\" = \"none\"",
        "\"ctrl+c\" = \"cycle_tier\"",
    ] {
        assert!(err.contains(part), "{part} missing from: {err}");
    }
    // Quit moved to another key is a keymap like any other (then: no terminal here).
    std::fs::write(
        &keymap,
        "[keys]\n\"q\" = \"none\"\n\"ctrl+c\" = \"none\"\n\"x\" = \"quit\"\n",
    )
    .unwrap();
    let out = ctx(home.path()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs a terminal"), "{err}");
}

/// Tester 11 T11-3: quit bound only to a key the terminal never reports as such (ctrl+m
/// arrives as enter) left a console no key could quit; it is refused at start (exit 2),
/// naming the file, the key and what arrives instead. ctrl+h still quits.
#[test]
fn a_keymap_binding_a_key_the_terminal_never_reports_is_refused_at_start() {
    let home = tempfile::tempdir().unwrap();
    let keymap = home.path().join("keymap.toml");
    for (key, arrives) in [
        ("ctrl+m", "arrives as enter"),
        ("shift+1", "arrives as the character it types"),
        ("ctrl+shift+q", "arrives as ctrl+q"),
    ] {
        std::fs::write(
            &keymap,
            format!("[keys]\n\"q\" = \"none\"\n\"ctrl+c\" = \"none\"\n\"{key}\" = \"quit\"\n"),
        )
        .unwrap();
        let out = ctx(home.path()).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{key}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        for part in [
            keymap.display().to_string().as_str(),
            &format!("\"{key}\""),
            arrives,
        ] {
            assert!(err.contains(part), "{key}: {part} missing from: {err}");
        }
    }
    std::fs::write(
        &keymap,
        "[keys]\n\"q\" = \"none\"\n\"ctrl+c\" = \"none\"\n\"ctrl+h\" = \"quit\"\n",
    )
    .unwrap();
    let out = ctx(home.path()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs a terminal"), "{err}");
}

#[test]
fn budgets_text_names_the_prompt_variant_in_words() {
    let home = tempfile::tempdir().unwrap();
    let out = ctx(home.path())
        .args(["budgets", "--model", "openai/gpt-4o"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    assert!(text.contains("full steps"), "{text}");
    assert!(!text.contains("FullSteps"), "{text}");
}

/// No `{:?}` / `{x:?}` / `{:#?}` in what the console draws: debug names (`FullSteps`,
/// `Raw`) are not words an operator reads. Tests inside the files may use them.
#[test]
fn no_debug_formatting_in_the_console_sources() {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tui"),
        &mut files,
    );
    assert!(files.len() > 10, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in code.lines().enumerate() {
            assert!(
                !line.contains(":?}") && !line.contains(":#?}"),
                "{}:{}: debug formatting: {line}",
                file.display(),
                n + 1
            );
        }
    }
}

/// A config.toml the CLI refuses is refused by the console at start too (exit 2, the file
/// and the key named), not found later under another message.
#[test]
fn a_bad_config_is_refused_at_start_naming_the_file_and_the_key() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    for (text, key) in [
        ("[llm]\nconcurrency = 0\n", "llm.concurrency"),
        ("[llm]\nbaseline_model = \" \"\n", "llm.baseline_model"),
        // Outside tester F11: the one name rule, as `--baseline` is refused.
        (
            "[llm]\nbaseline_model = \"t5/base\\u001b[2J\\u200b\"\n",
            "llm.baseline_model",
        ),
    ] {
        std::fs::write(&config, text).unwrap();
        let out = ctx(home.path()).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{text}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&config.display().to_string()) && err.contains(key),
            "{text}: {err}"
        );
        assert!(!err.contains("needs a terminal"), "{err}");
        // The CLI says the same.
        let out = ctx(home.path()).args(["history"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains(key));
    }
}
