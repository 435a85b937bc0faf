//! Building a repository of a given size: observations, slog, ADRs and MEMORY.md written
//! directly, then committed with the git command line.

use std::fmt::Write as _;
use std::fs::{self};
use std::path::Path;
use std::time::Instant;

use super::dates::{civil_from_days, days_from_civil, utc_ms_of_day, utc_today};
use super::process::{BenchEnv, timed};
use super::size::Built;
use super::text::{Rng, Vocab, mix};
use super::{
    ADRS, CAIRN, MEMORY_ENTRIES, MEMORY_PER_SECTION, MEMORY_SECTIONS, OBS_DAYS, SLOG_DAYS,
    SLOG_MAX, die,
};

pub(super) fn build_repo(env: &BenchEnv, vocab: &Vocab, dir: &Path, size: usize) -> Built {
    let parent = dir.parent().expect("the scratch directory");
    let mut init = env.command(CAIRN, parent);
    init.arg("init").arg(dir);
    timed(&mut init, &[0], "cairn init");

    let started = Instant::now();
    let slog = (size / 10).min(SLOG_MAX);
    let adrs = ADRS;
    let memory = MEMORY_ENTRIES;
    let observations = size - slog - adrs - memory;
    let today = utc_today();
    let today_days = days_from_civil(&today);
    let now_ms = utc_ms_of_day();
    let mut rng = Rng(0x5eed_0000_0000_0000 ^ size as u64);
    let mut data_bytes = 0u64;

    // Observations: two years of day files ending today, more on weekdays and more lately.
    let obs_dir = dir.join("vault/observations");
    fs::create_dir_all(&obs_dir)
        .unwrap_or_else(|e| die(format!("cannot make {}: {e}", obs_dir.display())));
    let first = today_days - (OBS_DAYS - 1);
    let weights: Vec<f64> = (0..OBS_DAYS)
        .map(|i| {
            let days = first + i;
            let weekday = (days + 4).rem_euclid(7); // 0 = Sunday
            let week = if weekday == 0 || weekday == 6 {
                0.3
            } else {
                1.0
            };
            let growth = 0.5 + i as f64 / OBS_DAYS as f64;
            let jitter = 0.6 + 0.8 * rng.unit();
            let part = if i == OBS_DAYS - 1 {
                now_ms as f64 / 86_400_000.0
            } else {
                1.0
            };
            week * growth * jitter * part
        })
        .collect();
    let mut counts = spread(observations, &weights);
    if counts[counts.len() - 1] == 0 {
        // Today's file exists: the appended records fold into a file the index knows.
        let from = counts
            .iter()
            .rposition(|&c| c > 1)
            .expect("enough observations");
        counts[from] -= 1;
        let last = counts.len() - 1;
        counts[last] += 1;
    }
    let mut n = 0u64;
    let mut session: Option<String> = None;
    let mut session_left = 0u32;
    let mut obs_files = 0;
    let mut buf = String::new();
    for (i, &count) in counts.iter().enumerate() {
        if count == 0 {
            continue;
        }
        let day = civil_from_days(first + i as i64);
        let span = if i as i64 == OBS_DAYS - 1 {
            now_ms.max(count as u64)
        } else {
            86_400_000
        };
        buf.clear();
        for k in 0..count {
            let ms = span * k as u64 / count as u64 + rng.below((span / count as u64).max(1));
            if session_left == 0 {
                session_left = 3 + rng.below(40) as u32;
                // A fifth of the observations come from no agent session (the CLI, imports).
                session =
                    (rng.below(5) != 0).then(|| format!("ses-{:012x}", mix(0x5e55 + n) >> 16));
            }
            session_left -= 1;
            vocab.observation_line(&mut buf, &mut rng, n, &day, ms, session.as_deref());
            n += 1;
        }
        write_file(&obs_dir.join(format!("{day}.jsonl")), buf.as_bytes());
        data_bytes += buf.len() as u64;
        obs_files += 1;
    }
    let obs_bytes = data_bytes;

    // Slog: a year of day files ending today.
    let slog_dir = dir.join("slog");
    fs::create_dir_all(&slog_dir)
        .unwrap_or_else(|e| die(format!("cannot make {}: {e}", slog_dir.display())));
    let first = today_days - (SLOG_DAYS - 1);
    let weights: Vec<f64> = (0..SLOG_DAYS)
        .map(|i| {
            let part = if i == SLOG_DAYS - 1 {
                now_ms as f64 / 86_400_000.0
            } else {
                1.0
            };
            (0.5 + rng.unit()) * part
        })
        .collect();
    let counts = spread(slog, &weights);
    let mut slog_files = 0;
    let mut k_all = 0u64;
    for (i, &count) in counts.iter().enumerate() {
        if count == 0 {
            continue;
        }
        let day = civil_from_days(first + i as i64);
        let span = if i as i64 == SLOG_DAYS - 1 {
            now_ms.max(count as u64)
        } else {
            86_400_000
        };
        // A day file may already exist (cairn init logs itself): append to it.
        let path = slog_dir.join(format!("{day}.jsonl"));
        let mut text = fs::read_to_string(&path).unwrap_or_default();
        let had = text.len();
        for k in 0..count {
            let ms = span * k as u64 / count as u64 + rng.below((span / count as u64).max(1));
            vocab.slog_line(&mut text, &mut rng, k_all, &day, ms);
            k_all += 1;
        }
        write_file(&path, text.as_bytes());
        data_bytes += (text.len() - had) as u64;
        slog_files += 1;
    }

    // ADRs, spread over the two years, some superseding earlier ones.
    let decisions = dir.join("decisions");
    fs::create_dir_all(&decisions)
        .unwrap_or_else(|e| die(format!("cannot make {}: {e}", decisions.display())));
    let mut superseded_by = vec![None; adrs + 1];
    let mut supersedes = vec![None; adrs + 1];
    for n in (20..=adrs).step_by(20) {
        let old = n - 1 - rng.below(15) as usize;
        superseded_by[old] = Some(n);
        supersedes[n] = Some(old);
    }
    for n in 1..=adrs {
        let date = civil_from_days(
            today_days - (OBS_DAYS - 1) + (n as i64 * (OBS_DAYS - 1)) / adrs as i64,
        );
        let title = vocab.adr_title(&mut rng);
        let text = vocab.adr_text(&mut rng, n, &title, &date, supersedes[n], superseded_by[n]);
        let path = decisions.join(format!("{n:04}-{}.md", slug(&title)));
        write_file(&path, text.as_bytes());
        data_bytes += text.len() as u64;
    }

    // MEMORY.md: the header cairn init wrote, then the sections.
    let memory_path = dir.join("MEMORY.md");
    let mut text = fs::read_to_string(&memory_path).unwrap_or_else(|_| "# Memory\n".into());
    let had = text.len();
    for (s, section) in MEMORY_SECTIONS.iter().enumerate() {
        let _ = write!(text, "\n## {section}\n\n");
        for e in 0..MEMORY_PER_SECTION {
            let date = civil_from_days(today_days - 700 + (s * MEMORY_PER_SECTION + e) as i64 * 10);
            let _ = write!(text, "- ({date}) ");
            vocab.memory_entry(&mut text, &mut rng, s);
            text.push('\n');
        }
    }
    write_file(&memory_path, text.as_bytes());
    data_bytes += (text.len() - had) as u64;
    let generate = started.elapsed();

    let started = Instant::now();
    timed(&mut env.git(dir, &["add", "-A"]), &[0], "git add -A");
    timed(
        &mut env.git(dir, &["commit", "-q", "-m", "data"]),
        &[0],
        "git commit",
    );
    let commit = started.elapsed();
    let status = timed(
        &mut env.git(dir, &["status", "--porcelain"]),
        &[0],
        "git status",
    )
    .1;
    if !status.stdout.is_empty() {
        die(format!(
            "the repository is not clean after its commit:\n{}",
            String::from_utf8_lossy(&status.stdout)
        ));
    }
    Built {
        observations,
        slog,
        adrs,
        memory,
        obs_files,
        slog_files,
        obs_bytes,
        data_bytes,
        generate,
        commit,
    }
}

fn write_file(path: &Path, bytes: &[u8]) {
    fs::write(path, bytes).unwrap_or_else(|e| die(format!("cannot write {}: {e}", path.display())));
}

/// Splits `total` over days in proportion to `weights`, exactly.
fn spread(total: usize, weights: &[f64]) -> Vec<usize> {
    let sum: f64 = weights.iter().sum();
    let mut counts: Vec<usize> = weights
        .iter()
        .map(|w| (total as f64 * w / sum).floor() as usize)
        .collect();
    let mut left = total - counts.iter().sum::<usize>();
    // The remainder to the heaviest days.
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]));
    for &i in order.iter().cycle() {
        if left == 0 {
            break;
        }
        counts[i] += 1;
        left -= 1;
    }
    counts
}

/// The file-name part of an ADR title: the library's own, as `cairn adr new` uses it.
fn slug(title: &str) -> String {
    cairn::adr::slug(title)
}
