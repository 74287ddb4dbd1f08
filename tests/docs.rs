//! The documentation a clone reads: every relative link of the README and
//! of `docs/*.md` leads to a file that exists (and, for `page.md#anchor`, to
//! a heading of that page), the README stays a front page, and no page or
//! source file cites documents a clone does not have.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every `docs/*.md`.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The lines of a markdown text outside fenced code blocks, with their numbers (from 1).
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match fence {
            Some(f) if trimmed.starts_with(f) => fence = None,
            Some(_) => {}
            None if trimmed.starts_with("```") => fence = Some("```"),
            None if trimmed.starts_with("~~~") => fence = Some("~~~"),
            None => lines.push((i + 1, line)),
        }
    }
    lines
}

/// A line without its inline code spans (`` `...` ``), which hold no links.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    for (i, part) in line.split('`').enumerate() {
        if i % 2 == 0 {
            out.push_str(part);
        }
    }
    out
}

/// GitHub's anchor for a heading: lowercase, spaces to `-`, every other
/// character that is not a letter, a digit, `-` or `_` dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings (`#` to `######`, outside code blocks);
/// a repeated heading gets `-1`, `-2`, ... as on GitHub.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let title = line[hashes..].trim().trim_end_matches('#').trim();
        let base = slug(title);
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// The targets of a line's inline links and images, `[text](target)` or
/// `[text](target "title")`, and of a reference definition, `[label]: target`.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut targets = Vec::new();
    if let Some(rest) = line.trim_start().strip_prefix('[') {
        if let Some((_, target)) = rest.split_once("]: ") {
            targets.push(target.split_whitespace().next().unwrap_or("").to_owned());
        }
    }
    let mut rest = line.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        // The target ends at the parenthesis that closes the one opened.
        let mut depth = 1;
        let mut end = after.len();
        for (i, c) in after.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let inside = after[..end].trim();
        let target = inside.split_whitespace().next().unwrap_or("");
        targets.push(target.trim_start_matches('<').trim_end_matches('>').to_owned());
        rest = &after[end..];
    }
    targets
}

fn is_external(target: &str) -> bool {
    target.contains("://") || target.starts_with("mailto:")
}

#[test]
fn heading_anchors_follow_githubs_slug_rule() {
    assert_eq!(slug("Split criteria"), "split-criteria");
    assert_eq!(slug("Scale out (Ballista)"), "scale-out-ballista");
    assert_eq!(slug("`forest_importance`"), "forest_importance");
    assert_eq!(slug("Round two's targets (issue 35) at its close"), "round-twos-targets-issue-35-at-its-close");
    assert_eq!(slug("Round two: many categories (flights' `dest`)"), "round-two-many-categories-flights-dest");
    let repeated = anchors("# A\n## Arguments\n```\n# not a heading\n```\n## Arguments\n");
    assert_eq!(repeated, BTreeSet::from(["a".to_owned(), "arguments".to_owned(), "arguments-1".to_owned()]));
    assert_eq!(link_targets("see [a](b.md#c) and `[x](not-a-link)` and ![i](img.png \"t\")"), ["b.md#c", "img.png"]);
}

/// Every relative link (not `http(s)://`, not `mailto:`) of README.md and
/// `docs/*.md` names a file or folder that exists relative to the linking
/// page, and a `#anchor` (on a `.md` target or alone, for the same page)
/// names a heading of that page.
#[test]
fn every_relative_link_of_the_readme_and_docs_resolves_to_a_file_and_heading() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = fs::read_to_string(&page).unwrap();
        let shown = page.strip_prefix(root()).unwrap().display().to_string();
        for (number, line) in prose_lines(&text) {
            for target in link_targets(line) {
                if target.is_empty() || is_external(&target) {
                    continue;
                }
                checked += 1;
                let (path, anchor) = match target.split_once('#') {
                    Some((path, anchor)) => (path, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let file: PathBuf = if path.is_empty() { page.clone() } else { page.parent().unwrap().join(path) };
                if !file.exists() {
                    broken.push(format!("{shown}:{number}: {target}: no file {}", file.display()));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if file.extension().is_some_and(|e| e == "md") {
                    let headings = anchors(&fs::read_to_string(&file).unwrap());
                    if !headings.contains(anchor) {
                        broken.push(format!("{shown}:{number}: {target}: no heading #{anchor} in {path}"));
                    }
                }
            }
        }
    }
    assert!(checked > 20, "only {checked} relative links found: is the link parser reading the pages?");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The README is a front page (under 250 lines) that links every page of `docs/`.
#[test]
fn the_readme_is_a_front_page_under_250_lines_linking_every_docs_page() {
    let readme = fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines < 250, "README.md has {lines} lines");
    let linked: BTreeSet<String> = prose_lines(&readme).into_iter().flat_map(|(_, l)| link_targets(l)).collect();
    for page in pages().iter().skip(1) {
        let name = format!("docs/{}", page.file_name().unwrap().to_str().unwrap());
        assert!(linked.iter().any(|t| t.split('#').next() == Some(name.as_str())), "the README does not link {name}");
    }
}

/// Every file under `dir` (recursively) whose extension is one of `exts`,
/// outside build output, virtual environments and version control.
fn files_under(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap_or("");
        if path.is_dir() {
            if !matches!(name, "target" | ".git" | ".venv" | "venv" | "__pycache__" | "node_modules") {
                files_under(&path, exts, out);
            }
        } else if path.extension().and_then(|e| e.to_str()).is_some_and(|e| exts.contains(&e)) {
            out.push(path);
        }
    }
}

/// No page, code comment, docstring, SQL comment or script cites the design
/// notes or numbered seed documents a clone does not have; they cite
/// `docs/algorithms.md` and `docs/parameters.md` instead.
#[test]
fn no_file_cites_documents_a_clone_does_not_have() {
    // Spelled in pieces so that this file does not cite them itself.
    let design = ["DESIGN", ".md"].concat();
    let seeds: Vec<String> = (0..5).flat_map(|i| [format!("seed 00{i}"), format!("seeds 00{i}")]).collect();
    let mut files = vec![root().join("README.md")];
    for dir in ["src", "tests", "crates", "benches", "sql", "scripts", "docs"] {
        files_under(&root().join(dir), &["rs", "py", "sql", "slt", "sh", "toml", "md"], &mut files);
    }
    let mut citing = Vec::new();
    for file in &files {
        let Ok(text) = fs::read_to_string(file) else { continue };
        for (i, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            if line.contains(&design) || seeds.iter().any(|s| lower.contains(s.as_str())) {
                citing.push(format!("{}:{}: {}", file.strip_prefix(root()).unwrap().display(), i + 1, line.trim()));
            }
        }
    }
    assert!(files.len() > 50, "only {} files read", files.len());
    assert!(citing.is_empty(), "cite docs/algorithms.md or docs/parameters.md instead:\n{}", citing.join("\n"));
}
