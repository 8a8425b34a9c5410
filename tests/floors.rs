//! The floors of ARCHITECTURE.md hold: no module of the crate names a module on a higher floor,
//! and the modules below the families form no circle.
//!
//! Every `crate::` path in `src/` counts (`$crate::` in macros, grouped `use crate::{a, b::c}`,
//! fully qualified paths in code, intra-doc links), and so does a `super::` chain that climbs to
//! the crate root. A name that `lib.rs` re-exports counts as the module it comes from. The
//! binding (`src/python/`) sits above every floor and is not read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floors, lowest first. A module may name modules on its own floor or below.
const FLOORS: &[(&str, &[&str])] = &[
    (
        "leaf",
        &[
            "error", "simd", "linalg", "choice", "tree_sum", "threads", "progress", "record",
        ],
    ),
    (
        "ground",
        &["bags", "data", "kernel", "solver", "smo", "model"],
    ),
    (
        "shared",
        &["class_weight", "multiclass", "fit", "params", "basis"],
    ),
    (
        "family",
        &[
            "sparse_mi",
            "set_kernel",
            "set_kernel_svm",
            "annealing",
            "convex_combination",
            "semi_supervised",
            "one_class",
            "baselines",
            "miles",
            "two_stage",
        ],
    ),
];

/// The modules whose imports may form no circle: every floor below the families.
const ACYCLIC_BELOW: usize = 3;

fn floor_of(module: &str) -> Option<usize> {
    FLOORS.iter().position(|(_, mods)| mods.contains(&module))
}

/// The identifier at the start of `s`.
fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first segment of every path in a `use` tree that starts at `s` (just after `crate::`):
/// `bags::Rows` gives `bags`, `{bags::Rows, fit::{Fit, Setup}}` gives `bags` and `fit`.
fn first_segments(s: &str) -> Vec<String> {
    let s = s.trim_start();
    if !s.starts_with('{') {
        let id = ident(s);
        return if id.is_empty() {
            vec![]
        } else {
            vec![id.to_string()]
        };
    }
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut item_start = true;
    for (i, c) in s.char_indices() {
        match c {
            '{' => {
                depth += 1;
                if depth == 1 {
                    item_start = true;
                    continue;
                }
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => {
                item_start = true;
                continue;
            }
            _ => {}
        }
        if depth == 1 && item_start && !c.is_whitespace() {
            item_start = false;
            let id = ident(&s[i..]);
            if !id.is_empty() && id != "self" {
                out.push(id.to_string());
            }
        }
    }
    out
}

/// The crate-level names a source file refers to: first segments after `crate::`, or after
/// `super::` repeated `depth` times in a file nested `depth > 1` modules deep (one `super::` in
/// a top-level module's file is taken for its inline `mod tests`, whose parent is the module).
fn references(src: &str, depth: usize) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in src.match_indices("crate::") {
        let before = &src[..at];
        let bounded = before
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
        if bounded {
            out.extend(first_segments(&src[at + "crate::".len()..]));
        }
    }
    if depth > 1 {
        let chain = "super::".repeat(depth);
        for (at, _) in src.match_indices(&chain) {
            let before = &src[..at];
            if before.ends_with("super::") {
                continue;
            }
            out.extend(first_segments(&src[at + chain.len()..]));
        }
    }
    out
}

/// The names `lib.rs` re-exports (`pub use module::{A, B};`), each mapped to its module.
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for stmt in lib.split(';') {
        let Some(rest) = stmt.trim().strip_prefix("pub use ") else {
            continue;
        };
        let module = ident(rest);
        let tree = &rest[module.len()..];
        let names = tree.trim_start_matches("::");
        for name in names
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|n| !n.is_empty())
        {
            out.insert(name.to_string(), module.to_string());
        }
    }
    out
}

/// What breaks the floors in one file of `module`: each name on a higher floor, or unknown.
fn violations(module: &str, refs: &[String], reexports: &BTreeMap<String, String>) -> Vec<String> {
    let Some(own) = floor_of(module) else {
        return vec![format!("module `{module}` has no floor in tests/floors.rs")];
    };
    let mut out = Vec::new();
    for r in refs {
        let target = reexports.get(r).map_or(r.as_str(), String::as_str);
        match floor_of(target) {
            Some(f) if f > own => out.push(format!(
                "`{module}` ({}) names `{target}` ({})",
                FLOORS[own].0, FLOORS[f].0
            )),
            Some(_) => {}
            None => out.push(format!(
                "`{module}` names `crate::{r}`, which is no module with a floor"
            )),
        }
    }
    out
}

/// A circle in the graph, if there is one (depth-first search).
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        stack.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            match state.get(next.as_str()) {
                Some(1) => {
                    let from = stack.iter().position(|n| n == next).unwrap_or(0);
                    let mut cycle = stack[from..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(next, edges, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in edges.keys() {
        if !state.contains_key(node.as_str()) {
            if let Some(c) = visit(node, edges, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module of a file under `src/` and how deeply nested the file's module is.
fn module_of(rel: &Path) -> (String, usize) {
    let parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let top = parts[0].trim_end_matches(".rs").to_string();
    let last = parts.last().map(String::as_str).unwrap_or("");
    let depth = if last == "mod.rs" {
        parts.len() - 1
    } else {
        parts.len()
    };
    (top, depth)
}

/// Every top-level module's references to other top-level modules.
fn crate_graph() -> (BTreeMap<String, BTreeSet<String>>, Vec<String>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let reexports = root_reexports(&lib);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut broken = Vec::new();
    for path in files {
        let rel = path.strip_prefix(&src).expect("under src/");
        if rel == Path::new("lib.rs") || rel.starts_with("python") {
            continue;
        }
        let (module, depth) = module_of(rel);
        let text = std::fs::read_to_string(&path).expect("a source file");
        let refs = references(&text, depth);
        for v in violations(&module, &refs, &reexports) {
            broken.push(format!("{}: {v}", rel.display()));
        }
        let targets = edges.entry(module.clone()).or_default();
        for r in refs {
            let target = reexports.get(&r).cloned().unwrap_or(r);
            if target != module {
                targets.insert(target);
            }
        }
    }
    (edges, broken)
}

#[test]
fn no_import_climbs_a_floor() {
    let (_, broken) = crate_graph();
    assert!(
        broken.is_empty(),
        "imports that climb:\n{}",
        broken.join("\n")
    );
}

#[test]
fn no_circle_below_the_families() {
    let (edges, _) = crate_graph();
    let low: BTreeMap<String, BTreeSet<String>> = edges
        .into_iter()
        .filter(|(m, _)| floor_of(m).is_some_and(|f| f < ACYCLIC_BELOW))
        .collect();
    assert_eq!(find_cycle(&low), None);
}

#[test]
fn every_module_of_lib_has_a_floor() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    for line in lib.lines() {
        let line = line.trim_start_matches("pub ");
        if let Some(rest) = line.strip_prefix("mod ") {
            let module = ident(rest);
            assert!(
                module == "python" || floor_of(module).is_some(),
                "`{module}` has no floor in tests/floors.rs"
            );
        }
    }
}

// The checks above against synthetic sources: each kind of path is seen, and a climb fails.

#[test]
fn grouped_qualified_macro_and_doc_paths_are_all_seen() {
    let src = "use crate::{bags::Rows, fit::{Fit, Setup}, self};\n\
               let k = crate::kernel::Kernel::Linear;\n\
               impl $crate::params::ParamType for X {}\n\
               /// See [`crate::annealing`].\n\
               use notcrate::x; let y = super::super::miles::embed();";
    assert_eq!(
        references(src, 2),
        ["bags", "fit", "kernel", "params", "annealing", "miles"]
    );
    // one `super::` from a nested module stays inside its top-level module
    assert!(references("use super::state::State;", 2).is_empty());
}

#[test]
fn a_climbing_import_is_refused() {
    let reexports = root_reexports("pub use fit::{Fit, FitPath};\npub use bags::Bags;");
    let refs = references("use crate::{bags::Rows, Fit};\nuse crate::Bags;", 0);
    assert_eq!(
        violations("kernel", &refs, &reexports),
        ["`kernel` (ground) names `fit` (shared)"]
    );
    let refs = references("x = crate::two_stage::Relabel::Sbmil;", 0);
    assert_eq!(
        violations("annealing", &refs, &reexports),
        Vec::<String>::new()
    );
    assert_eq!(violations("smo", &refs, &reexports).len(), 1);
    assert_eq!(
        violations("shiny", &[], &reexports),
        ["module `shiny` has no floor in tests/floors.rs"]
    );
}

#[test]
fn a_circle_is_found() {
    let edge = |a: &str, b: &[&str]| (a.to_string(), b.iter().map(|s| s.to_string()).collect());
    let acyclic: BTreeMap<String, BTreeSet<String>> =
        [edge("a", &["b"]), edge("b", &["c"]), edge("c", &[])].into();
    assert_eq!(find_cycle(&acyclic), None);
    let cyclic: BTreeMap<String, BTreeSet<String>> =
        [edge("a", &["b"]), edge("b", &["c"]), edge("c", &["a"])].into();
    assert_eq!(
        find_cycle(&cyclic),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}
