//! An observation's verdict (allow, hold or discard), stored with it; the write gate
//! ([`crate::observe::gate`]) decides it.

use serde::{Deserialize, Serialize};

/// `allow` is recalled by default, `hold` is stored but recalled only when asked, `discard`
/// is dropped and counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Allow,
    Hold,
    Discard,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Hold => "hold",
            Verdict::Discard => "discard",
        }
    }

    pub fn parse(s: &str) -> Option<Verdict> {
        match s.trim().to_ascii_lowercase().as_str() {
            "allow" => Some(Verdict::Allow),
            "hold" => Some(Verdict::Hold),
            "discard" => Some(Verdict::Discard),
            _ => None,
        }
    }
}
