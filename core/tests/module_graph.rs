//! The layout of every crate of the workspace (SPEC §1, §11): the modules of each crate's
//! `src/` use one another without a circle, and in the core fault injection is a leaf.
//!
//! A module is a file of a crate's `src/` (`a/b.rs` and `a/b/mod.rs` are `a::b`); it *uses*
//! another when its code outside comments and outside its `#[cfg(test)] mod tests` names a
//! path into it (`crate::a::b…`, or `super::…` resolved from where it stands). A `mod`
//! declaration is not a use, nor is a parent's own relative path into a child
//! (`engine::find` in `redact/mod.rs`): a parent holds its children. The
//! graph of uses must have no cycle, so every module can be read, changed and tested after
//! the ones it uses, and `fault` must use nothing of the crate, so a seeded bug can sit in
//! any module without pulling the others in.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Every module of a crate's `src/` with the modules it uses.
type Graph = BTreeMap<String, BTreeSet<String>>;

fn source_files(folder: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(folder)
        .expect("src/ is readable")
        .map(|entry| entry.expect("a readable entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            source_files(&path, found);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
}

/// `a/b.rs` and `a/b/mod.rs` → `a::b`; `lib.rs` → the empty path.
fn module_of(root: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(root).expect("under src/");
    let mut parts: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts.join("::")
}

/// The code of a file without its comments and without its unit-test module.
fn code_of(source: &str) -> String {
    let without_tests = match source.find("#[cfg(test)]\nmod tests") {
        Some(start) => &source[..start],
        None => source,
    };
    without_tests
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .map(|line| line.split(" // ").next().unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths that follow `prefix` in `code`: `crate::a::b::{c, d}` gives `a::b::c` and
/// `a::b::d`, as far as they are written in lower case (module names).
fn paths_after(code: &str, prefix: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for (start, _) in code.match_indices(prefix) {
        let before = code[..start].chars().next_back();
        if before.is_some_and(|character| character.is_alphanumeric() || character == '_') {
            continue;
        }
        let rest = &code[start + prefix.len()..];
        let path: String = rest
            .chars()
            .take_while(|character| {
                character.is_ascii_lowercase()
                    || character.is_ascii_digit()
                    || *character == '_'
                    || *character == ':'
            })
            .collect();
        let path = path.trim_end_matches(':').to_owned();
        let after = &rest[path.len()..];
        let group = if path.is_empty() {
            after.strip_prefix('{')
        } else {
            after.strip_prefix("::{")
        };
        if let Some(group) = group {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for member in group.split(',') {
                let member = member.trim();
                let name: String = member
                    .chars()
                    .take_while(|character| character.is_ascii_lowercase() || *character == '_')
                    .collect();
                if !name.is_empty() && name != "self" {
                    paths.push(format!("{path}::{name}"));
                }
            }
        }
        paths.push(path);
    }
    paths
}

/// The longest module that `path` names, if any.
fn resolve(modules: &BTreeSet<String>, path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split("::").filter(|part| !part.is_empty()).collect();
    (1..=parts.len())
        .rev()
        .map(|length| parts[..length].join("::"))
        .find(|candidate| modules.contains(candidate))
}

/// The graph of the core's modules.
fn graph() -> Graph {
    graph_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The graph of the modules of the crate whose `src/` is `root`.
fn graph_of(root: &Path) -> Graph {
    let root = root.to_path_buf();
    let mut files = Vec::new();
    source_files(&root, &mut files);
    let sources: Vec<(String, String)> = files
        .iter()
        .map(|file| {
            let source = fs::read_to_string(file).expect("a readable source file");
            (module_of(&root, file), code_of(&source))
        })
        .collect();
    let modules: BTreeSet<String> = sources.iter().map(|(module, _)| module.clone()).collect();
    let mut graph = Graph::new();
    for (module, code) in &sources {
        let parent = module.rsplit_once("::").map_or("", |(parent, _)| parent);
        let mut uses = BTreeSet::new();
        for path in paths_after(code, "crate::") {
            uses.extend(resolve(&modules, &path));
        }
        for path in paths_after(code, "super::") {
            let from_parent = if parent.is_empty() {
                path
            } else {
                format!("{parent}::{path}")
            };
            uses.extend(resolve(&modules, &from_parent));
        }
        uses.remove(module);
        uses.remove("");
        graph.insert(module.clone(), uses);
    }
    graph
}

/// A cycle of the graph, if it has one (depth-first search, modules in name order).
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        graph: &Graph,
        module: &str,
        marks: &mut BTreeMap<String, Mark>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(module) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let start = stack.iter().position(|open| open == module)?;
                let mut cycle = stack[start..].to_vec();
                cycle.push(module.to_owned());
                return Some(cycle);
            }
            None => {}
        }
        marks.insert(module.to_owned(), Mark::Open);
        stack.push(module.to_owned());
        for used in graph.get(module).into_iter().flatten() {
            if let Some(cycle) = visit(graph, used, marks, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        marks.insert(module.to_owned(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    graph
        .keys()
        .find_map(|module| visit(graph, module, &mut marks, &mut Vec::new()))
}

#[test]
fn the_modules_of_core_use_one_another_without_a_circle() {
    let graph = graph();
    assert!(
        graph.len() > 30,
        "every module was read: {:?}",
        graph.keys()
    );
    assert!(
        graph["driver"].contains("schedule") && graph["redact::engine"].contains("redact::span"),
        "uses are found: {graph:?}"
    );
    if let Some(cycle) = find_cycle(&graph) {
        panic!("core/src has an import circle: {}", cycle.join(" -> "));
    }
}

/// Every crate of the workspace, by its `src/`, and a module each of them must be seen to use
/// (so that a test reading nothing cannot pass).
const CRATES: &[(&str, &str, &str)] = &[
    ("sim/src", "simulate", "world"),
    ("checks/src", "scenario", ""),
    ("fragments/src", "", ""),
    ("benches/src", "", ""),
];

#[test]
fn the_modules_of_every_crate_use_one_another_without_a_circle() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (folder, user, used) in CRATES {
        let graph = graph_of(&workspace.join(folder));
        assert!(!graph.is_empty(), "{folder} was read");
        if !used.is_empty() {
            assert!(
                graph[*user].contains(*used),
                "{folder}: uses are found: {graph:?}"
            );
        }
        if let Some(cycle) = find_cycle(&graph) {
            panic!("{folder} has an import circle: {}", cycle.join(" -> "));
        }
    }
}

#[test]
fn fault_injection_is_a_leaf() {
    let graph = graph();
    assert_eq!(
        graph["fault"],
        BTreeSet::new(),
        "core/src/fault.rs uses nothing of the crate"
    );
    for pure in ["policy", "validation", "redact"] {
        let users_of_fault: Vec<&String> = graph
            .iter()
            .filter(|(module, uses)| {
                (*module == pure || module.starts_with(&format!("{pure}::")))
                    && uses.contains("fault")
            })
            .map(|(module, _)| module)
            .collect();
        assert!(
            users_of_fault.is_empty(),
            "{users_of_fault:?} take seeded bugs; their callers apply them"
        );
    }
}

#[test]
fn the_search_finds_a_planted_circle() {
    let mut graph = Graph::new();
    graph.insert("a".into(), BTreeSet::from(["b".into()]));
    graph.insert("b".into(), BTreeSet::from(["c".into()]));
    graph.insert("c".into(), BTreeSet::from(["a".into()]));
    graph.insert("d".into(), BTreeSet::from(["a".into()]));
    assert_eq!(
        find_cycle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    graph.insert("c".into(), BTreeSet::new());
    assert_eq!(find_cycle(&graph), None);
}

#[test]
fn paths_are_read_with_their_groups_and_not_inside_names() {
    let code = "use crate::redact::{Rule, span, text::class};\nlet x = my_crate::driver::y;\nsuper::home::NameEnd;\nuse super::{Rule, auth, tokens};";
    assert_eq!(
        paths_after(code, "crate::"),
        vec!["redact::span", "redact::text", "redact"]
    );
    assert_eq!(
        paths_after(code, "super::"),
        vec!["home", "::auth", "::tokens", ""]
    );
}
