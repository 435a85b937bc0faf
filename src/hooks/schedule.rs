//! `cairn hooks install --schedule daily`: `cairn maintain` run on a timer, by systemd where it
//! runs (a user service and timer in `~/.config/systemd/user/`), else by cron (a crontab line
//! the person adds themselves: cairn never edits a crontab).
//!
//! The units are named for the repository ([`slug`]: its folder's name and a hash of its whole
//! path), so that several repositories each get their own. The service runs this binary, by
//! its absolute path, as `maintain --repo ROOT`; the timer has `Persistent=true`, so a run
//! missed while the machine was off happens at the next boot. This module decides the text of
//! each file and line; `cli/hooks/schedule.rs` writes them and runs systemctl, reporting every
//! file and command.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// How often maintain runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Every {
    Hourly,
    Daily,
    Weekly,
}

impl Every {
    pub fn parse(s: &str) -> Option<Every> {
        match s {
            "hourly" => Some(Every::Hourly),
            "daily" => Some(Every::Daily),
            "weekly" => Some(Every::Weekly),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Every::Hourly => "hourly",
            Every::Daily => "daily",
            Every::Weekly => "weekly",
        }
    }
}

/// The name shared by a repository's units: `cairn-maintain-<folder>-<hash of the path>`.
pub fn slug(root: &Path) -> String {
    let name: String = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    let name = name.trim_matches('-');
    let digest = Sha256::digest(root.to_string_lossy().as_bytes());
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    if name.is_empty() {
        format!("cairn-maintain-{hex}")
    } else {
        format!("cairn-maintain-{name}-{hex}")
    }
}

/// The folder of a person's systemd user units: `$XDG_CONFIG_HOME/systemd/user`, else
/// `~/.config/systemd/user`.
pub fn unit_dir(home: &Path, xdg_config_home: Option<&Path>) -> PathBuf {
    xdg_config_home
        .filter(|p| p.is_absolute())
        .map_or_else(|| home.join(".config"), Path::to_path_buf)
        .join("systemd/user")
}

/// A word of a systemd command line, quoted when it needs to be.
fn systemd_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c))
    {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

/// A word of a shell command line (cron runs its lines with /bin/sh), quoted when it needs
/// to be.
pub fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@=".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The service unit: maintain once, for `root`, by this binary.
pub fn service(exe: &Path, root: &Path) -> String {
    format!(
        "# Written by `cairn hooks install --schedule`; `cairn hooks uninstall --schedule` removes it.\n\
         [Unit]\n\
         Description=cairn maintain for {root}\n\
         \n\
         [Service]\n\
         Type=oneshot\n\
         ExecStart={exe} maintain --repo {root_word}\n",
        root = root.display(),
        exe = systemd_word(&exe.to_string_lossy()),
        root_word = systemd_word(&root.to_string_lossy()),
    )
}

/// The timer unit that starts the service of the same name.
pub fn timer(root: &Path, every: Every) -> String {
    format!(
        "# Written by `cairn hooks install --schedule`; `cairn hooks uninstall --schedule` removes it.\n\
         [Unit]\n\
         Description=cairn maintain for {root}, {every}\n\
         \n\
         [Timer]\n\
         OnCalendar={every}\n\
         Persistent=true\n\
         \n\
         [Install]\n\
         WantedBy=timers.target\n",
        root = root.display(),
        every = every.as_str(),
    )
}

/// The crontab line: at a minute (and, daily or weekly, an hour of the night) taken from the
/// slug, so that several repositories do not all start at once; output appended to
/// `.cairn/maintain.log` of the repository.
pub fn crontab_line(exe: &Path, root: &Path, every: Every) -> String {
    let digest = Sha256::digest(slug(root).as_bytes());
    let minute = digest[0] % 60;
    let hour = 1 + digest[1] % 5;
    let when = match every {
        Every::Hourly => format!("{minute} * * * *"),
        Every::Daily => format!("{minute} {hour} * * *"),
        Every::Weekly => format!("{minute} {hour} * * 0"),
    };
    let log = root.join(".cairn/maintain.log");
    format!(
        "{when} {} maintain --repo {} >> {} 2>&1",
        shell_word(&exe.to_string_lossy()),
        shell_word(&root.to_string_lossy()),
        shell_word(&log.to_string_lossy())
    )
}

/// A command run for the schedule, as reported.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Ran {
    pub command: String,
    pub ok: bool,
    /// Its stderr and stdout, trimmed (what a person needs when it failed).
    pub output: String,
}

/// The program's path if it is on `path` (the `PATH` variable's value) and executable.
pub fn find_program(name: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path?)
        .map(|d| d.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Runs `program args…` with no stdin, waiting at most `timeout` (then it is killed and
/// reported as failed): a systemctl that cannot reach a user bus must not hang the install.
pub fn run(program: &Path, args: &[&str], timeout: std::time::Duration) -> Ran {
    let name = program.file_name().map_or_else(
        || program.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let command = std::iter::once(name.as_str())
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    let child = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            return Ran {
                command,
                ok: false,
                output: e.to_string(),
            };
        }
    };
    let started = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < timeout => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Ran {
                    command,
                    ok: false,
                    output: format!("no answer within {} s; stopped", timeout.as_secs()),
                };
            }
        }
    }
    match child.wait_with_output() {
        Ok(out) => {
            let mut text = String::from_utf8_lossy(&out.stderr).trim().to_string();
            let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if !stdout.is_empty() {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&stdout);
            }
            Ran {
                command,
                ok: out.status.success(),
                output: text,
            }
        }
        Err(e) => Ran {
            command,
            ok: false,
            output: e.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_run_this_binary_for_this_repository() {
        let root = Path::new("/home/ana/my notes");
        let s = service(Path::new("/usr/local/bin/cairn"), root);
        assert!(
            s.contains("ExecStart=/usr/local/bin/cairn maintain --repo \"/home/ana/my notes\"\n"),
            "{s}"
        );
        let t = timer(root, Every::Daily);
        assert!(t.contains("OnCalendar=daily\nPersistent=true\n"), "{t}");
        assert!(slug(root).starts_with("cairn-maintain-my-notes-"));
        assert_ne!(slug(root), slug(Path::new("/srv/my notes")));
    }

    #[test]
    fn the_crontab_line_quotes_for_the_shell() {
        let line = crontab_line(
            Path::new("/opt/cairn"),
            Path::new("/home/ana/it's"),
            Every::Daily,
        );
        let fields: Vec<&str> = line.splitn(6, ' ').collect();
        assert!(fields[0].parse::<u8>().unwrap() < 60);
        assert_eq!(&fields[2..5], ["*", "*", "*"]);
        assert!(
            fields[5].starts_with("/opt/cairn maintain --repo '/home/ana/it'\\''s' >> "),
            "{line}"
        );
        assert!(line.ends_with("/.cairn/maintain.log' 2>&1"), "{line}");
    }
}
