//! The architecture test: every `crate::` path in `src/` points down the layer list of
//! ARCHITECTURE.md (or stays in its own layer) and no imports among modules go round a circle.
//!
//! The list is read from ARCHITECTURE.md itself (the lines `N. Name: `a`, `b`` under
//! "## Layers"), so it is written once. A module is a folder or file directly under `src/`;
//! a path is `crate::x` in code (comments, strings and `#[cfg(test)]` modules left out: a test
//! may build its fixtures with anything). Within a module, the files beside each other (not
//! `mod.rs`) must not import each other round a circle either.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One import: the file and line it is on, and the module it names.
#[derive(Debug, Clone)]
struct Import {
    file: String,
    line: usize,
    to: String,
}

/// The layers of ARCHITECTURE.md, top first: module → its layer's number.
fn layers(text: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let section = text
        .split("\n## Layers")
        .nth(1)
        .expect("ARCHITECTURE.md has a `## Layers` section");
    let section = section.split("\n## ").next().unwrap_or(section);
    for line in section.lines() {
        let Some((number, rest)) = line.split_once(". ") else {
            continue;
        };
        let Ok(n) = number.trim().parse::<usize>() else {
            continue;
        };
        for name in rest.split('`').skip(1).step_by(2) {
            out.insert(name.to_string(), n);
        }
    }
    out
}

/// Code only: comments, string and char literals blanked (kept as the same number of lines).
fn code_of(text: &str) -> String {
    let text = match text.find("\n#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '"' => {
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        '\n' => out.push('\n'),
                        _ => {}
                    }
                }
                out.push_str("\"\"");
            }
            'r' if chars.peek() == Some(&'#') || chars.peek() == Some(&'"') => {
                // A raw string: r"…" or r#"…"#.
                let mut hashes = 0;
                while chars.peek() == Some(&'#') {
                    chars.next();
                    hashes += 1;
                }
                if chars.peek() != Some(&'"') {
                    out.push('r');
                    out.push_str(&"#".repeat(hashes));
                    continue;
                }
                chars.next();
                let close = format!("\"{}", "#".repeat(hashes));
                let mut body = String::new();
                for c in chars.by_ref() {
                    body.push(c);
                    if body.ends_with(&close) {
                        break;
                    }
                }
                out.extend(body.chars().filter(|&c| c == '\n'));
                out.push_str("\"\"");
            }
            _ => out.push(c),
        }
    }
    out
}

/// The modules `crate::` paths name on each line of `code`: `crate::x` and `crate::{x, y}`.
fn named(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in code.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            let before = rest[..at].chars().next_back();
            rest = &rest[at + "crate::".len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            if let Some(group) = rest.strip_prefix('{') {
                let group = group.split('}').next().unwrap_or("");
                for item in group.split(',') {
                    let name: String = item
                        .trim()
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() {
                        out.push((i + 1, name));
                    }
                }
            } else {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.push((i + 1, name));
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("src/ is readable")
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`None` for the crate root).
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    // The crate root, and this test (which names every module).
    (!matches!(name, "lib" | "main" | "layers")).then(|| name.to_string())
}

/// The strongly connected components of more than one node (Tarjan).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on: BTreeSet<&'g str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// What is wrong with the imports of the files `sources` (path relative to `src/`, text) under
/// `layers`: one line per import that points up a layer, per module no layer names, and per
/// circle (with one import of each of its edges).
fn problems(layers: &BTreeMap<String, usize>, sources: &[(PathBuf, String)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut edges: BTreeMap<(String, String), Import> = BTreeMap::new();
    // Within a module: file → files beside it that it imports (by `super::` or `crate::m::`).
    let mut siblings: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut sibling_edges: BTreeMap<(String, String), Import> = BTreeMap::new();
    let modules: BTreeSet<String> = sources
        .iter()
        .filter_map(|(rel, _)| module_of(rel))
        .collect();
    for (rel, text) in sources {
        let Some(from) = module_of(rel) else {
            continue;
        };
        let file = format!("src/{}", rel.display());
        let Some(&from_layer) = layers.get(&from) else {
            out.push(format!(
                "{file}: module `{from}` is in no layer of ARCHITECTURE.md"
            ));
            continue;
        };
        let code = code_of(text);
        for (line, to) in named(&code) {
            if to == from || !modules.contains(&to) {
                // Its own module, or an item of the crate root (`crate::run`).
                continue;
            }
            let Some(&to_layer) = layers.get(&to) else {
                continue;
            };
            let import = Import {
                file: file.clone(),
                line,
                to: to.clone(),
            };
            if to_layer < from_layer {
                out.push(format!(
                    "{file}:{line}: `{from}` (layer {from_layer}) imports `crate::{to}` (layer {to_layer}), which is above it"
                ));
            }
            graph.entry(from.clone()).or_default().insert(to.clone());
            edges.entry((from.clone(), to)).or_insert(import);
        }
        // Files beside each other in a folder: `super::name` from a file that is not mod.rs.
        let dir = rel.parent().unwrap_or(Path::new(""));
        let stem = rel.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if dir.as_os_str().is_empty() || stem == "mod" {
            continue;
        }
        let me = format!("{}/{stem}", dir.display());
        for (i, line) in code.lines().enumerate() {
            for (at, _) in line.match_indices("super::") {
                let rest = &line[at + "super::".len()..];
                let mut names: Vec<String> = Vec::new();
                if let Some(group) = rest.strip_prefix('{') {
                    // `super::{a::X, b}`: the first segment of each item.
                    let group = group.split('}').next().unwrap_or("");
                    for item in group.split(',') {
                        let item = item.trim();
                        if item.contains("::") {
                            names.push(item.split("::").next().unwrap_or("").to_string());
                        }
                    }
                } else if let Some((first, _)) = rest.split_once("::") {
                    names.push(first.trim().to_string());
                }
                for name in names {
                    let other = format!("{}/{name}", dir.display());
                    let exists = sources.iter().any(|(r, _)| {
                        r.parent() == Some(dir)
                            && r.file_stem().and_then(|s| s.to_str()) == Some(name.as_str())
                    });
                    if exists && other != me && name != "mod" {
                        siblings
                            .entry(me.clone())
                            .or_default()
                            .insert(other.clone());
                        sibling_edges.entry((me.clone(), other)).or_insert(Import {
                            file: format!("src/{}", rel.display()),
                            line: i + 1,
                            to: name,
                        });
                    }
                }
            }
        }
    }
    for (graph, edges, what) in [
        (&graph, &edges, "modules"),
        (&siblings, &sibling_edges, "files"),
    ] {
        for circle in circles(graph) {
            let members: BTreeSet<&String> = circle.iter().collect();
            let mut lines = Vec::new();
            for ((a, b), import) in edges.iter() {
                if members.contains(a) && members.contains(b) {
                    lines.push(format!(
                        "  {}:{}: `{a}` imports `{}`",
                        import.file, import.line, import.to
                    ));
                }
            }
            out.push(format!(
                "a circle of imports among {what} {}:\n{}",
                circle.join(", "),
                lines.join("\n")
            ));
        }
    }
    out
}

#[test]
fn imports_point_down_the_layers_and_go_round_no_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let layers = layers(&text);
    assert!(
        layers.len() > 10,
        "the layer list was not found: {layers:?}"
    );
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let sources: Vec<(PathBuf, String)> = files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("a source file is readable");
            (
                p.strip_prefix(root.join("src")).unwrap().to_path_buf(),
                text,
            )
        })
        .collect();
    let found = problems(&layers, &sources);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn an_upward_import_and_a_circle_are_named_with_their_file_and_line() {
    let layers = layers(
        "# x\n## Layers\n\n1. Front ends: `cli`\n2. Domains: `recall`, `why`\n3. Below: `files`\n## Next\n",
    );
    let src = |rel: &str, text: &str| (PathBuf::from(rel), text.to_string());
    let found = problems(
        &layers,
        &[
            src("cli/mod.rs", "use crate::recall;\n"),
            src(
                "files.rs",
                "// crate::recall::q in a comment\nfn f() { let s = \"crate::recall::q\"; }\nuse crate::{error, recall::x};\n",
            ),
            src("recall/mod.rs", "use crate::why::y;\n"),
            src("why/mod.rs", "pub fn y() { crate::recall::z() }\n"),
            src("why/a.rs", "use super::b::X;\n"),
            src("why/b.rs", "use super::{a::Y, mod_item};\n"),
            src("lib.rs", "pub use cli::run;\n"),
        ],
    );
    assert_eq!(found.len(), 3, "{found:#?}");
    assert_eq!(
        found[0],
        "src/files.rs:3: `files` (layer 3) imports `crate::recall` (layer 2), which is above it"
    );
    assert!(found[1].starts_with("a circle of imports among modules recall, why:"));
    assert!(found[1].contains("src/recall/mod.rs:1: `recall` imports `why`"));
    assert!(found[1].contains("src/why/mod.rs:1: `why` imports `recall`"));
    assert!(found[2].starts_with("a circle of imports among files why/a, why/b:"));
    assert!(found[2].contains("src/why/b.rs:1: `why/b` imports `a`"));
}
