//! The crate's layout: imports among its source files run one way. A file
//! that imports another (through `use crate::...`, `super::...` or a
//! re-export of `lib.rs`) never ends up imported by it, directly or through
//! others. Test modules at the end of a file (`#[cfg(test)]`) and `tests.rs`
//! files are left out: tests may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every source file under `dir`, by module path (`["model", "trees"]`).
fn modules(dir: &Path, prefix: &[String], out: &mut BTreeMap<Vec<String>, PathBuf>) {
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
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    match text.find("#[cfg(test)]\nmod tests {") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

/// The paths a `use` tree names, flattened: `a::{b, c::d}` gives `a::b`, `a::c::d`.
fn flatten(tree: &str) -> Vec<String> {
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
/// its `use` trees, and `crate::a::b` paths written in its code.
fn imports(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for (i, _) in line.match_indices("crate::") {
            let path: String =
                line[i..].chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
            let segments: Vec<String> = path.split("::").skip(1).filter(|s| !s.is_empty()).map(str::to_owned).collect();
            if !segments.is_empty() {
                out.push(segments);
            }
        }
    }
    // `use` statements, each from the line it starts on to its `;`.
    let mut statements = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
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
            let segments: Vec<&str> = path.split("::").map(str::trim).collect();
            let absolute: Vec<String> = match segments[0] {
                "crate" => segments[1..].iter().map(|s| s.to_string()).collect(),
                // `super` of a folder's `mod.rs` is the folder's parent; of a file, its folder.
                "super" => module[..module.len().saturating_sub(1)]
                    .iter()
                    .cloned()
                    .chain(segments[1..].iter().map(|s| s.to_string()))
                    .collect(),
                "self" => module.iter().cloned().chain(segments[1..].iter().map(|s| s.to_string())).collect(),
                // In lib.rs, a bare path starts at the crate's root.
                _ if module.is_empty() => segments.iter().map(|s| s.to_string()).collect(),
                _ => continue,
            };
            out.push(absolute.into_iter().map(|s| s.split(" as ").next().unwrap().trim().to_owned()).collect());
        }
    }
    out
}

#[test]
fn imports_among_source_files_have_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    modules(&src, &[], &mut files);
    let lib = code(&src.join("lib.rs"));
    // Names `lib.rs` re-exports, by the module they come from.
    let mut reexports: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for path in imports(&lib, &[]) {
        if let Some(name) = path.last() {
            reexports.insert(name.clone(), path[..path.len() - 1].to_vec());
        }
    }
    // The file a module path lands in: the longest prefix that is a file.
    let file_of = |path: &[String]| -> Option<Vec<String>> {
        let path = match path.len() {
            1 if !files.contains_key(path) => reexports.get(&path[0])?.clone(),
            _ => path.to_vec(),
        };
        (1..=path.len()).rev().map(|n| path[..n].to_vec()).find(|m| files.contains_key(m))
    };
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (module, path) in &files {
        if module.is_empty() {
            continue; // lib.rs declares and re-exports everything
        }
        let is_mod_file = path.file_name().is_some_and(|n| n == "mod.rs");
        for import in imports(&code(path), module) {
            if let Some(target) = file_of(&import) {
                // A folder's mod.rs naming its own files is a declaration, not a dependency.
                let declares = is_mod_file && target.len() == module.len() + 1 && target.starts_with(module);
                if target != *module && !target.is_empty() && !declares {
                    edges.entry(module.clone()).or_default().insert(target);
                }
            }
        }
    }
    assert!(edges.values().map(BTreeSet::len).sum::<usize>() > 50, "the imports were read: {edges:?}");

    // Depth-first search for a back edge.
    fn visit(
        node: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, bool>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        match state.get(node) {
            Some(true) => return None,
            Some(false) => {
                let start = stack.iter().position(|n| n == node).unwrap();
                return Some(stack[start..].to_vec());
            }
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
    for node in files.keys() {
        if let Some(cycle) = visit(node, &edges, &mut state, &mut Vec::new()) {
            let names: Vec<String> = cycle.iter().map(|m| m.join("::")).collect();
            panic!("an import cycle among files: {}", names.join(" -> "));
        }
    }
}
