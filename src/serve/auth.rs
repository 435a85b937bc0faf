//! Who may ask the console what: the token, the host and origin rules, the CSRF value.
//!
//! - The token is 32 random bytes in hex, stored outside the repository in a file of mode 600
//!   ([`load_or_make`]); it is shown once, when it is made.
//! - A request carries it as `Authorization: Bearer TOKEN`, or as the `cairn_token` cookie
//!   that `GET /?token=TOKEN` sets (HttpOnly, SameSite=Strict), as a notebook server does.
//! - Without the token, only reads from a loopback peer that named a loopback host are served:
//!   a page of another site that a DNS rebinding points at 127.0.0.1 names its own host, and
//!   is refused ([`check`]).
//! - Every write (any method but GET and HEAD, form or API) needs the token, from loopback too:
//!   any local process or user can read a loopback page, so nothing a page shows may let it
//!   write. The review forms also carry a CSRF value ([`csrf_of`]), shown only to a request
//!   that carried the token: a second guard for forms, not authentication. A write whose
//!   `Origin` (or `Sec-Fetch-Site`) says another site is refused whatever it carries. No CORS
//!   header is ever sent.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// The cookie that holds the token for a browser that logged in with `/?token=`.
pub const COOKIE: &str = "cairn_token";

/// A token as it was loaded: its text, and whether this run made it.
pub struct Token {
    pub value: String,
    pub made: bool,
}

/// Loads the token in `path`, or makes one there (mode 600, its folder 700) when the file does
/// not exist. `repo_root` is the knowledge repository: a token under it is refused, since it
/// would be committed and pushed.
pub fn load_or_make(path: &Path, repo_root: &Path) -> Result<Token> {
    let shown = path.display().to_string();
    let absolute = absolute(path);
    if absolute.starts_with(absolute_dir(repo_root)) {
        return Err(Error::bad_input(format!(
            "the token file {shown} is inside the knowledge repository, which is committed"
        ))
        .with_fix("give --token-file a path outside the repository"));
    }
    match std::fs::read_to_string(path) {
        Ok(text) => {
            check_mode(path)?;
            let value = text.trim().to_string();
            if value.len() < 32 || !value.chars().all(|c| c.is_ascii_graphic()) {
                return Err(Error::bad_input(format!(
                    "the token in {shown} is shorter than 32 characters or holds spaces"
                ))
                .with_fix(format!(
                    "delete {shown} and start `cairn serve` to make a new one"
                )));
            }
            Ok(Token { value, made: false })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let value = random_hex()?;
            write_new(path, &value)?;
            Ok(Token { value, made: true })
        }
        Err(e) => Err(Error::io(&shown, &e)),
    }
}

/// A token file others can read is refused: the token is a password.
fn check_mode(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path.display().to_string(), &e))?;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(Error::bad_input(format!(
            "the token file {} can be read by others",
            path.display()
        ))
        .with_fix(format!("run `chmod 600 {}`", path.display())));
    }
    Ok(())
}

fn write_new(path: &Path, value: &str) -> Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let shown = path.display().to_string();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Error::io(dir.display().to_string(), &e))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| Error::io(&shown, &e))?;
    file.write_all(format!("{value}\n").as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| Error::io(&shown, &e))
}

fn random_hex() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| {
        Error::new(
            crate::error::Kind::Io,
            format!("no random bytes for the token: {e}"),
        )
    })?;
    Ok(hex(&bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn absolute(path: &Path) -> PathBuf {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => absolute_dir(dir).join(path.file_name().unwrap_or_default()),
        None => absolute_dir(Path::new(".")).join(path),
    }
}

/// `dir` with its links resolved, or as far as it exists.
fn absolute_dir(dir: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(dir) {
        return real;
    }
    match (dir.parent(), dir.file_name()) {
        (Some(parent), Some(name)) if !parent.as_os_str().is_empty() => {
            absolute_dir(parent).join(name)
        }
        _ => std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
    }
}

/// The value the pages put in their forms: derived from the token, so a page of another
/// origin, which cannot read ours, cannot know it.
pub fn csrf_of(token: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"cairn-console-csrf\0");
    h.update(token.as_bytes());
    hex(&h.finalize())
}

/// Compares two secrets in time that does not depend on where they differ.
pub fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What a request shows of itself, as [`check`] reads it.
#[derive(Debug, Default, Clone)]
pub struct Seen<'a> {
    /// The peer's address is a loopback address.
    pub peer_loopback: bool,
    pub write: bool,
    pub host: Option<&'a str>,
    pub origin: Option<&'a str>,
    pub fetch_site: Option<&'a str>,
    /// The token it carried (bearer header or cookie), if any.
    pub token: Option<&'a str>,
}

/// What the request may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// It carried the right token: reads and writes.
    Token,
    /// A loopback read without the token: reads only.
    Local,
}

/// Why a request was refused: the HTTP status and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub status: u16,
    pub message: String,
}

fn refused(status: u16, message: &str) -> Refused {
    Refused {
        status,
        message: message.to_string(),
    }
}

/// A host name a browser on this machine uses for a loopback address, with or without port.
pub fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The rules of the module's opening, for one request.
pub fn check(seen: &Seen<'_>, token: &str) -> std::result::Result<Access, Refused> {
    // A write another site started is refused whatever it carries (a browser sends Origin
    // with every POST, and Sec-Fetch-Site with every request).
    if seen.write {
        if let (Some(origin), Some(host)) = (seen.origin, seen.host) {
            let ours = origin
                .strip_prefix("http://")
                .is_some_and(|o| o.eq_ignore_ascii_case(host));
            if !ours {
                return Err(refused(
                    403,
                    "a write from another origin is refused: use the console's own page",
                ));
            }
        }
        if let Some(site) = seen.fetch_site
            && !matches!(site, "same-origin" | "none")
        {
            return Err(refused(
                403,
                "a write from another site is refused: use the console's own page",
            ));
        }
    }
    match seen.token {
        Some(given) if same(given, token) => return Ok(Access::Token),
        Some(_) => return Err(refused(401, "wrong token: give the one in the token file")),
        None => {}
    }
    if seen.write {
        return Err(refused(
            401,
            "a write needs the token: send `Authorization: Bearer TOKEN` (the token file's \
             content) or open /?token=TOKEN once in the browser",
        ));
    }
    if !seen.peer_loopback {
        return Err(refused(
            401,
            "a token is required from a non-loopback address: send `Authorization: Bearer \
             TOKEN` (the token file's content) or open /?token=TOKEN once",
        ));
    }
    if !seen.host.is_some_and(loopback_host) {
        return Err(refused(
            403,
            "without a token only a loopback host name (127.0.0.1, localhost, [::1]) is served",
        ));
    }
    Ok(Access::Local)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "0123456789abcdef0123456789abcdef";

    fn local_read() -> Seen<'static> {
        Seen {
            peer_loopback: true,
            host: Some("127.0.0.1:8080"),
            ..Seen::default()
        }
    }

    #[test]
    fn loopback_reads_need_no_token_but_a_loopback_host() {
        assert_eq!(check(&local_read(), T), Ok(Access::Local));
        let rebound = Seen {
            host: Some("evil.example:8080"),
            ..local_read()
        };
        assert_eq!(check(&rebound, T).unwrap_err().status, 403);
        let no_host = Seen {
            host: None,
            ..local_read()
        };
        assert_eq!(check(&no_host, T).unwrap_err().status, 403);
    }

    #[test]
    fn a_write_needs_the_token_even_from_loopback() {
        // Regression (issue 30): a loopback write without the token was let through to the
        // form's CSRF check, and any local process could read the CSRF value from /review.
        let write = Seen {
            write: true,
            origin: Some("http://127.0.0.1:8080"),
            fetch_site: Some("same-origin"),
            ..local_read()
        };
        assert_eq!(check(&write, T).unwrap_err().status, 401);
        let wrong = Seen {
            token: Some("nope"),
            ..write.clone()
        };
        assert_eq!(check(&wrong, T).unwrap_err().status, 401);
        let right = Seen {
            token: Some(T),
            ..write
        };
        assert_eq!(check(&right, T), Ok(Access::Token));
    }

    #[test]
    fn a_remote_peer_needs_the_right_token() {
        let remote = Seen {
            peer_loopback: false,
            host: Some("192.0.2.2:8080"),
            ..Seen::default()
        };
        assert_eq!(check(&remote, T).unwrap_err().status, 401);
        let wrong = Seen {
            token: Some("nope"),
            ..remote.clone()
        };
        assert_eq!(check(&wrong, T).unwrap_err().status, 401);
        let right = Seen {
            token: Some(T),
            ..remote
        };
        assert_eq!(check(&right, T), Ok(Access::Token));
    }

    #[test]
    fn a_cross_origin_write_is_refused_even_with_the_token() {
        let write = Seen {
            write: true,
            token: Some(T),
            origin: Some("http://evil.example"),
            ..local_read()
        };
        assert_eq!(check(&write, T).unwrap_err().status, 403);
        let same_origin = Seen {
            origin: Some("http://127.0.0.1:8080"),
            ..write.clone()
        };
        assert_eq!(check(&same_origin, T), Ok(Access::Token));
        let cross_site = Seen {
            origin: None,
            fetch_site: Some("cross-site"),
            ..write
        };
        assert_eq!(check(&cross_site, T).unwrap_err().status, 403);
    }

    #[test]
    fn loopback_hosts() {
        for h in [
            "127.0.0.1:1",
            "localhost:80",
            "[::1]:9",
            "LOCALHOST",
            "127.1.2.3",
        ] {
            assert!(loopback_host(h), "{h}");
        }
        for h in [
            "192.0.2.2:1",
            "evil.example",
            "localhost.evil:80",
            "[fd00::2]:1",
        ] {
            assert!(!loopback_host(h), "{h}");
        }
    }

    #[test]
    fn csrf_depends_on_the_token_and_comparison_is_exact() {
        assert_ne!(csrf_of("a"), csrf_of("b"));
        assert_eq!(csrf_of(T).len(), 64);
        assert!(same(T, T));
        assert!(!same(T, "0123456789abcdef0123456789abcdeX"));
        assert!(!same(T, "short"));
    }

    #[test]
    fn a_token_is_made_once_with_mode_600_and_refused_inside_the_repository() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        let path = dir.path().join("config/cairn/token");
        let made = load_or_make(&path, &repo).unwrap();
        assert!(made.made);
        assert_eq!(made.value.len(), 64);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = load_or_make(&path, &repo).unwrap();
        assert!(!again.made);
        assert_eq!(again.value, made.value);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(load_or_make(&path, &repo).is_err());
        let inside = load_or_make(&repo.join("token"), &repo)
            .err()
            .expect("a token inside the repository is refused");
        assert!(inside.message.contains("inside the knowledge repository"));
    }
}
