//! The import graph among a crate's source files, for the layout tests of
//! `arbor-kernels` and `arbor-ensemble` (each includes this file with
//! `#[path]`): which file imports which, through `use crate::...`,
//! `super::...`, a `crate::a::b` path in its code, or a re-export of
//! `lib.rs`, and a cycle if there is one. Test modules at the end of a file
//! (`#[cfg(test)]`) and `tests.rs` files are left out: tests may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path, `["histogram", "count"]` (the crate root is empty).
pub type Module = Vec<String>;

/// Every source file under `dir`, by module path.
pub fn modules(dir: &Path, prefix: &[String], out: &mut BTreeMap<Module, PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let mut inner = prefix.to_vec();
            inner.push(name);
            modules(&path, &inner, out);
        } else if path.extension().is_some_and(|e| e == "rs") && name != "tests" {
            let mut module = prefix.to_vec();
            if name != "mod" && name != "lib" {
                module.push(name);
            }
            out.insert(module, path);
        }
    }
}

/// The text of a file without its trailing test module.
pub fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    match text.find("#[cfg(test)]\nmod tests {") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

/// The paths a `use` tree names, flattened: `a::{b, c::d}` gives `a::b`, `a::c::d`.
pub fn flatten(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else { return vec![tree.to_owned()] };
    let head = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap()];
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).flat_map(|p| flatten(&format!("{head}{}", p.trim()))).collect()
}

/// The paths a file imports, as absolute module paths (`crate::` dropped):
/// its `use` trees, and `crate::a::b` paths written in its code. Comments,
/// doc comments included, are not code: a doc link is not an import.
pub fn imports(text: &str, module: &[String], is_mod_file: bool) -> Vec<Module> {
    let code_lines = || text.lines().filter(|l| !l.trim_start().starts_with("//"));
    let mut out = Vec::new();
    for line in code_lines() {
        for (i, _) in line.match_indices("crate::") {
            let path: String =
                line[i..].chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
            let segments: Module = path.split("::").skip(1).filter(|s| !s.is_empty()).map(str::to_owned).collect();
            if !segments.is_empty() {
                out.push(segments);
            }
        }
    }
    // `use` statements, each from the line it starts on to its `;`.
    let mut statements = Vec::new();
    let mut current: Option<String> = None;
    for line in code_lines() {
        let line = line.trim();
        if current.is_none() {
            let start = ["use ", "pub use ", "pub(crate) use "].iter().find_map(|p| line.strip_prefix(p));
            current = start.map(|_| String::new());
        }
        if let Some(statement) = current.as_mut() {
            statement.push_str(line);
            statement.push(' ');
            if line.ends_with(';') {
                statements.push(current.take().unwrap());
            }
        }
    }
    for statement in &statements {
        let statement = statement.trim().trim_end_matches(';');
        let rest = statement.split_once("use ").map_or(statement, |(_, rest)| rest);
        for path in flatten(rest) {
            let segments: Vec<String> =
                path.split("::").map(|s| s.split(" as ").next().unwrap().trim().to_owned()).collect();
            let absolute: Module = match segments[0].as_str() {
                "crate" => segments[1..].to_vec(),
                // The parent module: a file's folder, or a folder's parent for its `mod.rs`.
                "super" => module[..module.len().saturating_sub(1)].iter().chain(&segments[1..]).cloned().collect(),
                "self" => module.iter().chain(&segments[1..]).cloned().collect(),
                // In `lib.rs` and a `mod.rs`, a bare path may start at the module's child.
                _ if is_mod_file => module.iter().chain(&segments).cloned().collect(),
                _ => continue,
            };
            out.push(absolute);
        }
    }
    out
}

/// The import graph among the crate's files: for each file's module, the
/// files it imports. A folder's `mod.rs` declaring or re-exporting its own
/// files depends on none of them, and `lib.rs` is left out (it declares and
/// re-exports everything); a path through a `lib.rs` re-export counts as one
/// to the file the name comes from.
pub fn import_graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut files = BTreeMap::new();
    modules(src, &[], &mut files);
    // Names `lib.rs` re-exports, by the module they come from.
    let mut reexports: BTreeMap<String, Module> = BTreeMap::new();
    for path in imports(&code(&src.join("lib.rs")), &[], true) {
        if let Some((name, from)) = path.split_last() {
            reexports.insert(name.clone(), from.to_vec());
        }
    }
    // The file a module path lands in: the longest prefix that is a file.
    let file_of = |path: &[String]| -> Option<Module> {
        let path = match path.len() {
            1 if !files.contains_key(path) => reexports.get(&path[0])?.clone(),
            _ => path.to_vec(),
        };
        (1..=path.len()).rev().map(|n| path[..n].to_vec()).find(|m| files.contains_key(m))
    };
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, path) in files.iter().filter(|(module, _)| !module.is_empty()) {
        let is_mod_file = path.file_name().is_some_and(|n| n == "mod.rs");
        for import in imports(&code(path), module, is_mod_file) {
            let Some(target) = file_of(&import) else { continue };
            let own_file = is_mod_file && target.len() > module.len() && target.starts_with(module);
            if target != *module && !target.is_empty() && !own_file {
                edges.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    for module in files.into_keys().filter(|m| !m.is_empty()) {
        edges.entry(module).or_default();
    }
    edges
}

/// A cycle of the graph, as the modules along it, if there is one.
pub fn cycle(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    // Depth-first search for a back edge: `false` while on the stack, `true` once done.
    fn visit(
        node: &Module,
        edges: &BTreeMap<Module, BTreeSet<Module>>,
        state: &mut BTreeMap<Module, bool>,
        stack: &mut Vec<Module>,
    ) -> Option<Vec<Module>> {
        match state.get(node) {
            Some(true) => return None,
            Some(false) => return Some(stack[stack.iter().position(|n| n == node).unwrap()..].to_vec()),
            None => {}
        }
        state.insert(node.clone(), false);
        stack.push(node.clone());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, state, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        state.insert(node.clone(), true);
        None
    }
    let mut state = BTreeMap::new();
    edges.keys().find_map(|node| visit(node, edges, &mut state, &mut Vec::new()))
}

/// The graph as text, a line per file: `module -> imported, ...`.
pub fn listing(edges: &BTreeMap<Module, BTreeSet<Module>>) -> String {
    let lines: Vec<String> = edges
        .iter()
        .map(|(module, targets)| {
            let targets: Vec<String> = targets.iter().map(|t| t.join("::")).collect();
            format!("{} -> {}", module.join("::"), targets.join(", "))
        })
        .collect();
    lines.join("\n")
}

/// Panics naming the cycle, if the crate under `src` has one; prints the
/// graph (`cargo test -- --nocapture` shows it). `at_least` edges must have
/// been read, so that a reader that finds nothing cannot pass.
pub fn assert_no_cycle(crate_name: &str, src: &Path, at_least: usize) {
    let edges = import_graph(src);
    println!("the module graph of {crate_name}:\n{}", listing(&edges));
    assert!(edges.values().map(BTreeSet::len).sum::<usize>() >= at_least, "the imports were read: {edges:?}");
    if let Some(cycle) = cycle(&edges) {
        let names: Vec<String> = cycle.iter().map(|m| m.join("::")).collect();
        panic!("an import cycle among the files of {crate_name}: {}", names.join(" -> "));
    }
}
