//! The module graph, read from the source: core imports nothing outside core (it is the pure
//! engine), and no two source files import each other, directly or round a loop. Imports are
//! the `crate::…` paths in a file outside its test module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Loops that exist today and are known; any other loop fails the test. (The console's
/// app ↔ Catalog ↔ help loop went when those panes came to own their state.)
const KNOWN_LOOPS: &[&[&str]] = &[];

fn modules(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            modules(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).unwrap().with_extension("");
            let mut name = rel.to_string_lossy().replace('/', "::");
            if let Some(parent) = name.strip_suffix("::mod") {
                name = parent.to_string();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            // The file's own code: its test module (the last `#[cfg(test)]`) is left out.
            let code = match text.find("#[cfg(test)]\nmod ") {
                Some(i) => text[..i].to_string(),
                None => text,
            };
            out.insert(name, code);
        }
    }
}

/// Each module's imports of other modules: the longest module path a `crate::` path names.
fn graph(mods: &BTreeMap<String, String>) -> BTreeMap<&str, BTreeSet<&str>> {
    let mut g = BTreeMap::new();
    for (name, code) in mods {
        let mut deps = BTreeSet::new();
        for (i, _) in code.match_indices("crate::") {
            let path: String = code[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
            for k in (1..=parts.len()).rev() {
                let candidate = parts[..k].join("::");
                if let Some((m, _)) = mods.get_key_value(&candidate) {
                    if m != name {
                        deps.insert(m.as_str());
                    }
                    break;
                }
            }
        }
        g.insert(name.as_str(), deps);
    }
    g
}

/// The strongly connected groups of more than one module (Tarjan).
fn loops<'a>(g: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<Vec<&'a str>> {
    struct Walk<'a, 'g> {
        g: &'g BTreeMap<&'a str, BTreeSet<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        found: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(w: &mut Walk<'a, '_>, v: &'a str) {
        let n = w.index.len();
        w.index.insert(v, n);
        w.low.insert(v, n);
        w.stack.push(v);
        w.on.insert(v);
        for &u in w.g.get(v).into_iter().flatten() {
            if !w.index.contains_key(u) {
                visit(w, u);
                let lu = w.low[u];
                w.low.entry(v).and_modify(|l| *l = (*l).min(lu));
            } else if w.on.contains(u) {
                let iu = w.index[u];
                w.low.entry(v).and_modify(|l| *l = (*l).min(iu));
            }
        }
        if w.low[v] == w.index[v] {
            let mut group = Vec::new();
            while let Some(u) = w.stack.pop() {
                w.on.remove(u);
                group.push(u);
                if u == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort_unstable();
                w.found.push(group);
            }
        }
    }
    let mut w = Walk {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        found: Vec::new(),
    };
    for &v in g.keys() {
        if !w.index.contains_key(v) {
            visit(&mut w, v);
        }
    }
    w.found
}

fn source_graph() -> BTreeMap<String, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut mods = BTreeMap::new();
    modules(&root, &root, &mut mods);
    assert!(mods.len() > 50, "read only {} modules", mods.len());
    mods
}

#[test]
fn core_imports_nothing_outside_core() {
    let mods = source_graph();
    let g = graph(&mods);
    let upward: Vec<String> = g
        .iter()
        .filter(|(m, _)| **m == "core" || m.starts_with("core::"))
        .flat_map(|(m, deps)| {
            deps.iter()
                .filter(|d| !(**d == "core" || d.starts_with("core::")))
                .map(move |d| format!("{m} imports {d}"))
        })
        .collect();
    assert!(upward.is_empty(), "core is pure: {upward:#?}");
}

/// The top-level module a module belongs to (`store::history` → `store`).
fn top(module: &str) -> &str {
    module.split("::").next().unwrap_or(module)
}

/// Front ends sit on top; services never reach up into them.
const FRONT_ENDS: &[&str] = &["cli", "tui", "mcp_server"];

/// The lower services: the store and the importers read files and the embedded sample, the
/// LLM client talks to endpoints and logs; none of them imports the workspace built from
/// them, the preview built on the workspace, or the live calls (replay, send) built on both.
const BELOW_WORKSPACE: &[&str] = &[
    "store", "import", "fsio", "sample", "exit", "format", "llm", "logging",
];

#[test]
fn services_never_import_a_front_end_and_the_store_never_imports_the_workspace() {
    let mods = source_graph();
    let g = graph(&mods);
    let mut wrong = Vec::new();
    for (m, deps) in &g {
        let from = top(m);
        for d in deps {
            let to = top(d);
            let service = !FRONT_ENDS.contains(&from) && from != "lib" && from != "main";
            if service && FRONT_ENDS.contains(&to) {
                wrong.push(format!("{m} (a service) imports {d} (a front end)"));
            }
            if BELOW_WORKSPACE.contains(&from) && !BELOW_WORKSPACE.contains(&to) && to != "core" {
                wrong.push(format!("{m} imports {d}, a layer above it"));
            }
        }
    }
    assert!(wrong.is_empty(), "upward imports: {wrong:#?}");
}

#[test]
fn no_source_files_import_each_other_round_a_loop() {
    let mods = source_graph();
    let g = graph(&mods);
    let found = loops(&g);
    let unknown: Vec<&Vec<&str>> = found
        .iter()
        .filter(|l| !KNOWN_LOOPS.iter().any(|k| k == &l.as_slice()))
        .collect();
    assert!(unknown.is_empty(), "import loops: {unknown:?}");
}

#[test]
fn the_checker_finds_a_loop_and_an_upward_import() {
    let mut mods = BTreeMap::new();
    mods.insert("core::a".to_string(), "use crate::store::b;".to_string());
    mods.insert(
        "store::b".to_string(),
        "use crate::store::c::X;".to_string(),
    );
    mods.insert(
        "store::c".to_string(),
        "fn f() { crate::store::b::g() }".to_string(),
    );
    let g = graph(&mods);
    assert_eq!(
        g["core::a"].iter().copied().collect::<Vec<_>>(),
        ["store::b"]
    );
    assert_eq!(loops(&g), vec![vec!["store::b", "store::c"]]);
}
