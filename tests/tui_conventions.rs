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
