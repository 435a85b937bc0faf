//! The checkpoints: what a commit of the index says about the source files it holds, in a
//! file beside the index that the commit's payload names.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{SCHEMA_VERSION, hash, sources};
use crate::error::Result;

/// A source file's checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub size: u64,
    pub mtime_ns: i128,
    /// Bytes folded in (for JSONL: up to the end of the last whole line).
    pub offset: u64,
    /// Where the last indexed line starts.
    pub last_start: u64,
    /// Hash of the last indexed line (JSONL) or of the whole file (Markdown).
    pub hash: String,
}

/// What a commit of the index says about the files it holds: the checkpoints and the vector
/// model. In the commit's payload (tantivy's `meta.json`) only `schema`, `vectors` and the
/// name of the checkpoints file go; the checkpoints themselves (one a source file, 200 KB at
/// 1,400 files) are in `CHECKPOINTS_PREFIX<hash>.json` beside it, named by the hash of its
/// bytes and written before the commit, so the commit still moves documents and checkpoints
/// together. tantivy parses `meta.json` three times on every open (open, reader, opstamp)
/// and the payload is a string inside it, escaped: with the checkpoints inside, that was a
/// fifth of a recall at 100,000 records.
#[derive(Debug, Clone, Default)]
pub(super) struct Payload {
    pub(super) schema: u32,
    pub(super) files: BTreeMap<String, Checkpoint>,
    /// The model every document has a vector of; `None` when some may lack one (a provider
    /// failed, or the model changed), so that the next update embeds what is missing.
    pub(super) vectors: Option<String>,
    /// The name of the checkpoints file this payload was read from or committed with.
    pub(super) name: Option<String>,
    /// The files' stamp as committed (of `files`): a read that finds the files with this
    /// stamp has nothing to fold in ([`sources::Stamp`]).
    pub(super) stamp: Option<sources::Stamp>,
    /// Whether `files` holds the checkpoints file's content: an index opened for a read is
    /// not read further than its stamp until the files are found to differ.
    pub(super) loaded: bool,
}

/// The payload as committed in `meta.json`.
#[derive(Debug, Serialize, Deserialize)]
struct Committed {
    schema: u32,
    #[serde(default)]
    vectors: Option<String>,
    /// The hash naming the checkpoints file.
    #[serde(default)]
    checkpoints: String,
    /// The stamp of the checkpoints' files ([`sources::Stamp::to_hex`]).
    #[serde(default)]
    stamp: String,
}

/// How the checkpoints files of an index folder begin.
const CHECKPOINTS_PREFIX: &str = "cairn-checkpoints-";

fn checkpoints_path(dir: &Path, name: &str) -> std::path::PathBuf {
    dir.join(format!("{CHECKPOINTS_PREFIX}{name}.json"))
}

impl Payload {
    /// Writes the checkpoints file (unless one of the same bytes is there) and gives the
    /// payload to commit; call [`Payload::collect`] after the commit.
    pub(super) fn prepare(&mut self, dir: &Path) -> Result<String> {
        let bytes = serde_json::to_vec(&self.files).expect("checkpoints serialize");
        let name = hash(&bytes);
        let path = checkpoints_path(dir, &name);
        if !path.is_file() {
            crate::files::write_atomic(&path, &bytes)?;
        }
        let stamp = sources::Stamp::of_checkpoints(&self.files);
        let json = serde_json::to_string(&Committed {
            schema: self.schema,
            vectors: self.vectors.clone(),
            checkpoints: name.clone(),
            stamp: stamp.to_hex(),
        })
        .expect("payload serializes");
        self.name = Some(name);
        self.stamp = Some(stamp);
        self.loaded = true;
        Ok(json)
    }

    /// The payload of the commit `metas` describes, with its checkpoints read from `dir`;
    /// `None` when it has none, is of another schema, or its checkpoints file is missing or
    /// unreadable (the index is then rebuilt: it is derived).
    pub(super) fn read(dir: &Path, metas: &tantivy::IndexMeta) -> Option<Payload> {
        let mut payload = Payload::read_str(metas.payload.as_deref()?)?;
        payload.load(dir).then_some(payload)
    }

    /// The payload of a committed payload string, its checkpoints not read yet
    /// ([`Payload::load`]); `None` when it is of another schema or names no checkpoints.
    pub(super) fn read_str(payload: &str) -> Option<Payload> {
        let committed: Committed = serde_json::from_str(payload).ok()?;
        if committed.schema != SCHEMA_VERSION || committed.checkpoints.is_empty() {
            return None;
        }
        Some(Payload {
            schema: committed.schema,
            files: BTreeMap::new(),
            vectors: committed.vectors,
            name: Some(committed.checkpoints),
            stamp: sources::Stamp::from_hex(&committed.stamp),
            loaded: false,
        })
    }

    /// Reads the checkpoints file this payload names (once); false when it is missing or
    /// unreadable (the index is then rebuilt: it is derived).
    pub(super) fn load(&mut self, dir: &Path) -> bool {
        if self.loaded {
            return true;
        }
        let Some(name) = &self.name else {
            return false;
        };
        let Some(files) = std::fs::read(checkpoints_path(dir, name))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        else {
            return false;
        };
        self.files = files;
        self.loaded = true;
        true
    }

    /// Whether the files as `found` (their stamp) are what this payload's checkpoints
    /// describe, with a vector of `model` for every document: nothing to fold in.
    pub(super) fn matches(&self, found: sources::Stamp, model: &str) -> bool {
        self.stamp == Some(found) && self.vectors.as_deref() == Some(model)
    }

    /// Removes the checkpoints files of `dir` other than this commit's and the one it
    /// replaced (a reader that read the last `meta.json` may be about to read that one; one
    /// that finds its file gone reopens under the build lock, [`Index::open`]).
    pub(super) fn collect(dir: &Path, keep: &str, replaced: Option<&str>) {
        let Ok(read) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in read.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(h) = name
                .strip_prefix(CHECKPOINTS_PREFIX)
                .and_then(|n| n.strip_suffix(".json"))
            else {
                continue;
            };
            if h != keep && Some(h) != replaced {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_round_trip_through_their_file_and_old_files_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let cp = |size| Checkpoint {
            size,
            mtime_ns: 4,
            offset: size,
            last_start: 0,
            hash: "ab".into(),
        };
        let mut p = Payload {
            schema: SCHEMA_VERSION,
            files: BTreeMap::from([("slog/a.jsonl".to_string(), cp(3))]),
            vectors: Some("m".into()),
            name: None,
            stamp: None,
            loaded: true,
        };
        let names = |dir: &Path| {
            let mut n: Vec<String> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            n.sort();
            n
        };
        let mut committed = Vec::new();
        for size in [3, 9, 12] {
            p.files.insert("slog/a.jsonl".into(), cp(size));
            let replaced = p.name.clone();
            let json = p.prepare(dir.path()).unwrap();
            // The commit's payload is small: the checkpoints are in the file it names.
            assert!(!json.contains("slog/a.jsonl"), "{json}");
            let mut back = Payload::read_str(&json).unwrap();
            // The stamp is read without the checkpoints, and is theirs.
            assert!(!back.loaded && back.files.is_empty());
            assert_eq!(back.stamp, Some(sources::Stamp::of_checkpoints(&p.files)));
            assert!(back.load(dir.path()));
            assert_eq!(back.files, p.files);
            assert_eq!(back.vectors.as_deref(), Some("m"));
            Payload::collect(dir.path(), p.name.as_deref().unwrap(), replaced.as_deref());
            committed.push(json);
        }
        // This commit's file and the one it replaced stay; an older commit's is gone, and a
        // payload naming it reads as none (the index is then built again).
        assert_eq!(names(dir.path()).len(), 2, "{:?}", names(dir.path()));
        assert!(!Payload::read_str(&committed[0]).unwrap().load(dir.path()));
        assert!(Payload::read_str(&committed[1]).unwrap().load(dir.path()));
        // Another schema's payload reads as none.
        let other = committed[2].replace(&format!("\"schema\":{SCHEMA_VERSION}"), "\"schema\":4");
        assert!(Payload::read_str(&other).is_none());
    }
}
