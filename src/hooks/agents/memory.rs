//! Claude Code's `autoMemoryDirectory` in a person's local settings file, set by `cairn hooks
//! install --agent claude-code --memory` and given back byte for byte by `uninstall --memory`
//! (ADR 138). Edited by splicing ([`super::splice`]): a key that was absent is added and cut
//! again (the file's other bytes, its byte order mark and an empty `{}` it was kept), a value
//! that was there is replaced and its own JSON text written back.

use std::path::Path;

use serde_json::json;

use super::splice;
use crate::error::{Error, Result};
use crate::files;

/// The setting.
pub const KEY: &str = "autoMemoryDirectory";

/// What setting the folder did.
#[derive(Debug, Clone, PartialEq)]
pub struct Set {
    pub changed: bool,
    /// The file did not exist before.
    pub created: bool,
    /// The JSON text of the value the setting had before, when it had one (to give back).
    pub previous: Option<String>,
}

/// What giving the setting back did.
#[derive(Debug, Clone, PartialEq)]
pub struct Unset {
    pub changed: bool,
    /// The file was deleted (install made it, and it held nothing else).
    pub deleted: bool,
    /// The setting names another folder than cairn's (a person changed it): left as it is.
    pub other: Option<String>,
}

fn the_member(doc: &splice::Doc, file: &Path) -> Result<Option<splice::Member>> {
    let found: Vec<splice::Member> = doc
        .members(&doc.root())
        .into_iter()
        .filter(|m| m.key == KEY)
        .collect();
    if found.len() > 1 {
        return Err(Error::bad_input(format!(
            "{}: `{KEY}` is written {} times; Claude Code reads only the last",
            file.display(),
            found.len()
        ))
        .with_fix("keep one, then run this again"));
    }
    Ok(found.into_iter().next())
}

/// Points `KEY` in `file` at `dir`, keeping every other byte.
pub fn set(file: &Path, dir: &str) -> Result<Set> {
    let Some(mut doc) = super::read_doc(file)? else {
        let text = splice::fresh(&json!({ KEY: dir }));
        files::write_atomic(file, text.as_bytes())?;
        return Ok(Set {
            changed: true,
            created: true,
            previous: None,
        });
    };
    let mut out = Set {
        changed: false,
        created: false,
        previous: None,
    };
    match the_member(&doc, file)? {
        Some(m) if doc.value(&m.value) == json!(dir) => return Ok(out),
        Some(m) => {
            out.previous = Some(doc.text[m.value.clone()].to_string());
            let new = serde_json::to_string(dir).expect("a string serializes");
            doc.text.replace_range(m.value.clone(), &new);
        }
        None => {
            let root = doc.root();
            doc.push_member(&root, KEY, &json!(dir));
        }
    }
    files::write_atomic(file, doc.contents().as_bytes())?;
    out.changed = true;
    Ok(out)
}

/// Gives `KEY` in `file` back as it was before [`set`] pointed it at `dir`: `previous` (the
/// value's JSON text) written back, or the key cut; a file install made, left empty, deleted.
pub fn unset(file: &Path, dir: &str, previous: Option<&str>) -> Result<Unset> {
    let mut out = Unset {
        changed: false,
        deleted: false,
        other: None,
    };
    let Some(mut doc) = super::read_doc(file)? else {
        return Ok(out);
    };
    let Some(m) = the_member(&doc, file)? else {
        return Ok(out);
    };
    if doc.value(&m.value) != json!(dir) {
        out.other = Some(doc.text[m.value.clone()].to_string());
        return Ok(out);
    }
    let root_there = doc.was_there(&doc.root());
    match previous {
        Some(text) => doc.text.replace_range(m.value.clone(), text),
        None => {
            let root = doc.root();
            let index = doc
                .members(&root)
                .iter()
                .position(|x| x.key == KEY)
                .expect("the member is there");
            doc.remove_member(&root, index);
        }
    }
    out.changed = true;
    if doc.members(&doc.root()).is_empty() && !root_there {
        std::fs::remove_file(file).map_err(|e| Error::io(file.display(), &e))?;
        out.deleted = true;
        super::remove_empty_parents(file);
    } else {
        files::write_atomic(file, doc.contents().as_bytes())?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(before: &[u8]) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".claude/settings.local.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, before).unwrap();
        let set = set(&file, "/k/agents/claude-code/p/memory").unwrap();
        assert!(set.changed);
        let now: serde_json::Value = serde_json::from_str(crate::jsonl::strip_bom(
            &std::fs::read_to_string(&file).unwrap(),
        ))
        .unwrap();
        assert_eq!(now[KEY], "/k/agents/claude-code/p/memory");
        let unset = unset(
            &file,
            "/k/agents/claude-code/p/memory",
            set.previous.as_deref(),
        )
        .unwrap();
        assert!(unset.changed && !unset.deleted);
        assert_eq!(std::fs::read(&file).unwrap(), before);
    }

    #[test]
    fn set_then_unset_gives_back_the_bytes() {
        round_trip(b"{}");
        round_trip(b"{ }\n");
        round_trip(b"\xEF\xBB\xBF{\r\n    \"model\": \"x\"\r\n}\r\n");
        round_trip(b"{\n  \"autoMemoryDirectory\" :  \"~/old\" , \"b\": [ ]\n}\n");
    }

    #[test]
    fn a_file_it_made_is_deleted_and_another_value_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p/.claude/settings.local.json");
        std::fs::create_dir_all(dir.path().join("p")).unwrap();
        assert!(set(&file, "/m").unwrap().created);
        let u = unset(&file, "/m", None).unwrap();
        assert!(u.deleted && !file.exists() && !dir.path().join("p/.claude").exists());
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, r#"{"autoMemoryDirectory": "/mine"}"#).unwrap();
        assert_eq!(
            unset(&file, "/m", None).unwrap().other.as_deref(),
            Some("\"/mine\"")
        );
    }
}
