//! The freshness check of the index's sources: the [`Stamp`] of a listing and the [`Glance`]
//! that tells, without a `stat` of every log file, that nothing changed since the index's
//! commit.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{
    Folder, Found, Listing, SourceKind, folder_time, in_log_folder, list_by_hand, manifest_stamp,
    mtime_ns,
};
use crate::error::Result;
use crate::index::Checkpoint;
use crate::repo::Repo;

/// What the source files look like to a freshness check: the count of files and two
/// independent sums of a hash of each one's (path, size, modification time). Equal stamps
/// mean what [`plan`] compares is equal file by file (the same paths, each with the same size
/// and time), so a read whose files have the stamp the index committed with has nothing to
/// fold in and need not read the checkpoints at all. The sums do not depend on the order the
/// files were listed in, and the hash is cairn's own, so a stamp means the same across builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp {
    pub files: u64,
    pub a: u64,
    pub b: u64,
}

impl Stamp {
    /// Adds one file.
    pub fn add(&mut self, rel: &str, size: u64, mtime_ns: i128) {
        let h = fnv1a(rel.as_bytes());
        // The time in two halves: an i128 does not fit one word.
        let t = mtime_ns as u128;
        let (lo, hi) = (t as u64, (t >> 64) as u64);
        self.files += 1;
        self.a = self.a.wrapping_add(mix(h ^ mix(size ^ mix(lo ^ mix(hi)))));
        self.b =
            self.b
                .wrapping_add(mix(h.rotate_left(29)
                    ^ mix(lo.wrapping_add(0x9e37_79b9_7f4a_7c15) ^ mix(size ^ hi))));
    }

    /// The stamp of the files as found.
    pub fn of_found(found: &[Found]) -> Stamp {
        let mut s = Stamp::default();
        for f in found {
            s.add(&f.rel, f.size, f.mtime_ns);
        }
        s
    }

    /// The stamp of the files as their checkpoints describe them.
    pub fn of_checkpoints(checkpoints: &BTreeMap<String, Checkpoint>) -> Stamp {
        let mut s = Stamp::default();
        for (rel, cp) in checkpoints {
            s.add(rel, cp.size, cp.mtime_ns);
        }
        s
    }

    /// As text, for the index's commit payload.
    pub fn to_hex(self) -> String {
        format!("{:016x}{:016x}{:016x}", self.files, self.a, self.b)
    }

    /// [`Stamp::to_hex`] read back.
    pub fn from_hex(s: &str) -> Option<Stamp> {
        if s.len() != 48 || !s.is_ascii() {
            return None;
        }
        let word = |i: usize| u64::from_str_radix(&s[i * 16..(i + 1) * 16], 16).ok();
        Some(Stamp {
            files: word(0)?,
            a: word(1)?,
            b: word(2)?,
        })
    }
}

/// How many of a log folder's files a [`Glance`] looks at one by one: its most recently
/// changed (today's logs, the session being ingested), where an append by another program
/// would most likely go; and the last by name (today's, for logs named by their day).
const WATCHED_PER_FOLDER: usize = 3;

/// A folder whose time is this close to the clock (or ahead of it) is not trusted: file
/// systems stamp a folder from a coarse clock, so a file made in the same tick as the
/// listing would leave its time as read.
const RACY_NS: i128 = 2_000_000_000;

/// What a read needs to see that nothing changed since the index's commit, without a `stat`
/// of every log file: the time of each folder of logs (making, removing or renaming a file
/// moves it, and cairn moves it after every append, [`crate::files::append_lines`]), the
/// stamp of each folder's newest logs, and the stamp of every file a person edits in place
/// (ADRs, MEMORY.md, notes), which are looked at one by one. An append to an older log by a
/// program other than cairn, which moves no folder's time, is seen at the next change in
/// its folder or by `cairn index` (ADR 62). The library's chunk files, which cairn alone
/// writes and always renames into place, are watched by their folder's time and the
/// manifest's stamp, not one by one (ADR 140).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Glance {
    /// The name of the checkpoints of the index commit it describes.
    pub checkpoints: String,
    /// The source files then.
    pub files: usize,
    pub folders: Vec<Folder>,
    /// The log files looked at one by one.
    pub newest: Vec<String>,
    /// The [`Stamp`] of `newest` and of the files a person edits, as hex.
    pub watched: String,
    /// Every document the library manifest names had its chunk file then.
    #[serde(default)]
    pub library_complete: bool,
    /// The library manifest's size and time then.
    #[serde(default)]
    pub manifest: Option<(u64, i128)>,
}

/// The glance's file in the index folder (derived, like everything there).
const GLANCE_FILE: &str = "cairn-glance.json";

impl Glance {
    /// The glance of the files as `listing` found them, for the commit whose checkpoints are
    /// `checkpoints`; `None` when a folder's time is too recent to be trusted.
    pub fn of(checkpoints: &str, listing: &Listing, now_ns: i128) -> Option<Glance> {
        if listing
            .folders
            .iter()
            .any(|f| f.mtime_ns >= 0 && f.mtime_ns > now_ns - RACY_NS)
        {
            return None;
        }
        let mut newest = Vec::new();
        for folder in &listing.folders {
            let prefix = format!("{}/", folder.rel);
            let mut files: Vec<&Found> = listing
                .found
                .iter()
                .filter(|f| {
                    in_log_folder(f.kind)
                        && f.rel
                            .strip_prefix(&prefix)
                            .is_some_and(|name| !name.contains('/'))
                })
                .collect();
            files.sort_by(|a, b| b.mtime_ns.cmp(&a.mtime_ns).then(a.rel.cmp(&b.rel)));
            newest.extend(files.iter().take(WATCHED_PER_FOLDER).map(|f| f.rel.clone()));
            // Logs are named by their day: the last by name is where the next append goes,
            // even when files written in one burst leave it no newer than the others.
            if let Some(last) = files.iter().max_by(|a, b| a.rel.cmp(&b.rel)) {
                newest.push(last.rel.clone());
            }
        }
        newest.sort();
        newest.dedup();
        let mut watched = Stamp::default();
        for f in &listing.found {
            // The library's chunk files are watched by their folder's time and the manifest.
            if f.kind == SourceKind::Library {
                continue;
            }
            if !in_log_folder(f.kind) || newest.binary_search(&f.rel).is_ok() {
                watched.add(&f.rel, f.size, f.mtime_ns);
            }
        }
        if let Some((size, mtime_ns)) = listing.manifest {
            watched.add(crate::library::MANIFEST, size, mtime_ns);
        }
        Some(Glance {
            checkpoints: checkpoints.to_string(),
            files: listing.found.len(),
            folders: listing.folders.clone(),
            newest,
            watched: watched.to_hex(),
            library_complete: listing.library_missing == 0,
            manifest: listing.manifest,
        })
    }

    /// Whether the files still look as they did: every log folder's time unchanged, and the
    /// newest logs and the files a person edits with the stamp they had.
    pub fn holds(&self, repo: &Repo) -> Result<bool> {
        for f in &self.folders {
            if folder_time(repo, &f.rel) != f.mtime_ns {
                return Ok(false);
            }
        }
        let mut watched = Stamp::default();
        for rel in &self.newest {
            match std::fs::symlink_metadata(repo.path(rel)) {
                Ok(meta) if meta.is_file() => watched.add(rel, meta.len(), mtime_ns(&meta)),
                _ => return Ok(false),
            }
        }
        for f in list_by_hand(repo)? {
            watched.add(&f.rel, f.size, f.mtime_ns);
        }
        if let Some((size, mtime_ns)) = manifest_stamp(repo) {
            watched.add(crate::library::MANIFEST, size, mtime_ns);
        }
        Ok(watched.to_hex() == self.watched)
    }

    /// Whether the index of `repo` was committed with every library document's chunk file
    /// there, and neither the chunk folder's time nor the manifest has moved since: a library
    /// search then need not read the manifest to make missing chunk files
    /// ([`crate::library::ensure_chunks`]). Two `stat`s: the rest of what the glance watches
    /// is the index's to check when it opens.
    pub fn library_settled(repo: &Repo) -> bool {
        let Some(g) = Glance::read(&repo.path(crate::index::DIR)) else {
            return false;
        };
        g.library_complete
            && g.folders
                .iter()
                .find(|f| f.rel == crate::library::CACHE)
                .is_some_and(|f| folder_time(repo, &f.rel) == f.mtime_ns)
            && manifest_stamp(repo) == g.manifest
    }

    /// The glance kept in the index folder `dir`, if there is a readable one.
    pub fn read(dir: &Path) -> Option<Glance> {
        let bytes = std::fs::read(dir.join(GLANCE_FILE)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Keeps this glance in the index folder `dir`. It is derived and checked against the
    /// commit it names, so it is renamed into place without a sync; a failure leaves reads
    /// to look at every file, as they did before it.
    pub fn write(&self, dir: &Path) {
        let bytes = serde_json::to_vec(self).expect("a glance serializes");
        if let Ok(mut tmp) = tempfile::Builder::new()
            .prefix(".cairn-glance")
            .tempfile_in(dir)
        {
            use std::io::Write;
            if tmp.write_all(&bytes).is_ok() {
                let _ = tmp.persist(dir.join(GLANCE_FILE));
            }
        }
    }

    /// Removes the glance kept in `dir` (a read then looks at every file).
    pub fn remove(dir: &Path) {
        let _ = std::fs::remove_file(dir.join(GLANCE_FILE));
    }
}

/// Now, in nanoseconds since the epoch (a folder's time is compared with it).
pub fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// splitmix64's finalizer: every input bit moves about half of the output bits.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
