//! `cargo test` passes in a fresh clone with nothing beside it: no test, bench or example
//! reads the project's shared folder outside the repository; the data they need is in
//! tests/data, with its source and licence noted there.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn nothing_reads_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Built from parts so this file does not name it itself.
    let outside = ["..", "/shared"].concat();
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches", "examples"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 20, "found only {} source files", files.len());
    let offenders: Vec<String> = files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .lines()
                .any(|l| l.contains(&outside))
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(offenders.is_empty(), "read {outside}: {offenders:?}");
}

#[test]
fn test_data_names_its_sources_and_licences() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    for folder in ["bfcl", "mcp", "litellm"] {
        assert!(root.join(folder).is_dir(), "tests/data/{folder} missing");
        assert!(
            readme.contains(&format!("`{folder}/`")),
            "{folder} not described"
        );
    }
    for licence in ["Apache-2.0", "MIT"] {
        assert!(readme.contains(licence), "{licence} not noted");
    }
}
