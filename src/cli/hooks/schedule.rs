//! `cairn hooks install --schedule daily` and `cairn hooks uninstall --schedule`: `cairn
//! maintain` on a timer ([`crate::hooks::schedule`] decides the files and the line). Every file
//! written or removed and every command run is in the report; nothing else is touched.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use super::super::Ctx;
use crate::error::{Error, Result};
use crate::hooks::schedule::{self, Every, Ran};
use crate::output::{Next, Report, Status};

/// How long one systemctl call may take.
const SYSTEMCTL_WAIT: Duration = Duration::from_secs(15);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheduler {
    Systemd,
    Cron,
}

/// The scheduler asked for, or (auto) systemd where it runs (`/run/systemd/system` exists).
fn scheduler(asked: &str) -> Result<Scheduler> {
    match asked {
        "systemd" => Ok(Scheduler::Systemd),
        "cron" => Ok(Scheduler::Cron),
        "auto" if Path::new("/run/systemd/system").is_dir() => Ok(Scheduler::Systemd),
        "auto" => Ok(Scheduler::Cron),
        other => Err(Error::bad_input(format!(
            "--scheduler {other:?} is not auto, systemd or cron"
        ))),
    }
}

fn home() -> Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| {
            Error::bad_input("HOME is not set: no place for the systemd user units")
                .with_fix("set HOME, or use --scheduler cron")
        })
}

fn unit_dir() -> Result<PathBuf> {
    let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
    Ok(schedule::unit_dir(&home()?, xdg.as_deref()))
}

fn systemctl() -> Option<PathBuf> {
    schedule::find_program("systemctl", std::env::var_os("PATH").as_deref())
}

/// The repository root and this binary, both absolute.
fn targets(ctx: &Ctx) -> Result<(PathBuf, PathBuf)> {
    let repo = ctx.repo()?;
    let root = repo
        .root()
        .canonicalize()
        .unwrap_or_else(|_| repo.root().to_path_buf());
    let exe = std::env::current_exe()
        .map_err(|e| Error::io("the cairn binary's path", &e))?
        .canonicalize()
        .map_err(|e| Error::io("the cairn binary's path", &e))?;
    Ok((root, exe))
}

fn ran_lines(ran: &[Ran]) -> String {
    ran.iter()
        .map(|r| {
            let mut l = format!(
                "\n  ran `{}`: {}",
                r.command,
                if r.ok { "ok" } else { "failed" }
            );
            if !r.ok && !r.output.is_empty() {
                l.push_str(&format!(
                    " ({})",
                    r.output.lines().next().unwrap_or_default()
                ));
            }
            l
        })
        .collect()
}

pub fn install(ctx: &Ctx, every: &str, asked: &str) -> Result<Report> {
    let every = Every::parse(every).ok_or_else(|| {
        Error::bad_input(format!(
            "--schedule {every:?} is not hourly, daily or weekly"
        ))
    })?;
    let which = scheduler(asked)?;
    let (root, exe) = targets(ctx)?;
    let slug = schedule::slug(&root);
    if which == Scheduler::Cron {
        let line = schedule::crontab_line(&exe, &root, every);
        let why = if asked == "auto" {
            "no systemd runs here"
        } else {
            "cron"
        };
        let human = format!(
            "{why}: cairn does not edit your crontab; add this line with `crontab -e`, or run\n  \
             (crontab -l 2>/dev/null; echo {quoted}) | crontab -\n{line}",
            quoted = schedule::shell_word(&line)
        );
        let data = json!({
            "scheduler": "cron",
            "every": every.as_str(),
            "written": [],
            "ran": [],
            "crontab_line": line,
        });
        return Ok(Report::new("hooks_schedule", data, human));
    }
    let dir = unit_dir()?;
    let service = dir.join(format!("{slug}.service"));
    let timer = dir.join(format!("{slug}.timer"));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), &e))?;
    crate::files::write_atomic(&service, schedule::service(&exe, &root).as_bytes())?;
    crate::files::write_atomic(&timer, schedule::timer(&root, every).as_bytes())?;
    let mut ran = Vec::new();
    let mut warnings = Vec::new();
    match systemctl() {
        Some(sc) => {
            let reload = schedule::run(&sc, &["--user", "daemon-reload"], SYSTEMCTL_WAIT);
            let ok = reload.ok;
            ran.push(reload);
            if ok {
                let unit = format!("{slug}.timer");
                ran.push(schedule::run(
                    &sc,
                    &["--user", "enable", "--now", &unit],
                    SYSTEMCTL_WAIT,
                ));
            }
        }
        None => warnings.push(format!(
            "systemctl not found: the units are written; enable the timer with `systemctl --user \
             enable --now {slug}.timer`"
        )),
    }
    let failed = ran.iter().any(|r| !r.ok);
    let mut human = format!(
        "maintain runs {} by systemd: wrote {} and {}",
        every.as_str(),
        service.display(),
        timer.display()
    );
    human.push_str(&ran_lines(&ran));
    if failed {
        warnings.push(format!(
            "the timer is written but not enabled; run `systemctl --user daemon-reload && \
             systemctl --user enable --now {slug}.timer` in your session"
        ));
    }
    let data = json!({
        "scheduler": "systemd",
        "every": every.as_str(),
        "written": [service, timer],
        "ran": ran,
        "crontab_line": null,
    });
    let report = Report::new("hooks_schedule", data, human)
        .warnings(warnings)
        .next(Next::new(
            format!("systemctl --user list-timers {slug}.timer"),
            "see when it runs next",
        ));
    Ok(if failed {
        report.status(Status::NothingOrFailed)
    } else {
        report
    })
}

pub fn uninstall(ctx: &Ctx, asked: &str) -> Result<Report> {
    let which = scheduler(asked)?;
    let (root, exe) = targets(ctx)?;
    let slug = schedule::slug(&root);
    if which == Scheduler::Cron {
        let line = schedule::crontab_line(&exe, &root, Every::Daily);
        let needle = format!(
            "maintain --repo {}",
            schedule::shell_word(&root.to_string_lossy())
        );
        let human = format!(
            "cairn does not edit your crontab: remove the line holding `{needle}` with `crontab \
             -e`, or run\n  crontab -l | grep -vF {} | crontab -",
            schedule::shell_word(&needle)
        );
        let data = json!({
            "scheduler": "cron",
            "removed": [],
            "ran": [],
            "crontab_line": line,
        });
        return Ok(Report::new("hooks_unschedule", data, human));
    }
    let dir = unit_dir()?;
    let timer_name = format!("{slug}.timer");
    let files = [dir.join(format!("{slug}.service")), dir.join(&timer_name)];
    let mut ran = Vec::new();
    let sc = systemctl();
    if let Some(sc) = &sc
        && files[1].exists()
    {
        ran.push(schedule::run(
            sc,
            &["--user", "disable", "--now", &timer_name],
            SYSTEMCTL_WAIT,
        ));
    }
    let mut removed = Vec::new();
    for f in &files {
        match std::fs::remove_file(f) {
            Ok(()) => removed.push(f.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(f.display(), &e)),
        }
    }
    if let Some(sc) = &sc
        && !removed.is_empty()
    {
        ran.push(schedule::run(
            sc,
            &["--user", "daemon-reload"],
            SYSTEMCTL_WAIT,
        ));
    }
    let mut human = if removed.is_empty() {
        format!("no maintain timer for this repository in {}", dir.display())
    } else {
        format!(
            "removed {}",
            removed
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" and ")
        )
    };
    human.push_str(&ran_lines(&ran));
    let data = json!({
        "scheduler": "systemd",
        "removed": removed,
        "ran": ran,
        "crontab_line": null,
    });
    let report = Report::new("hooks_unschedule", data, human);
    Ok(if removed.is_empty() {
        report.status(Status::NothingOrFailed)
    } else {
        report
    })
}
