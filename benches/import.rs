//! `cairn import observations` of a big file (500 MB by default): throughput and peak memory,
//! beside `wc -l` and `cat` over the same file (the cost of reading it once), in one run.
//!
//! Run with `scripts/bench-import` (or `cargo bench --bench import -- [--mb N] [--runs N]`;
//! `CAIRN_BENCH_IMPORT_MB`, `CAIRN_BENCH_RUNS` set the defaults; `--file PATH` keeps the
//! generated file at PATH, to profile an import of it by hand).
//!
//! The file is real-looking observation JSON Lines, made deterministically: texts of one to
//! four real sentences of the ADRs and transcripts in `tests/fixtures` (so lengths vary from a
//! few dozen bytes to a few KiB), the fields an exported observation carries in varied
//! subsets (time, session, source, category, priority, verdict, a narrative on one in five),
//! a secret of `tests/fixtures/secrets/shapes.txt` in one line of 40, an exact repeat of an
//! earlier line in one of 25 (a duplicate by id), and a short chatter the write gate discards
//! in one of 50. Each run imports into a fresh repository (`cairn init` outside the timing);
//! the median of `--runs` is printed with MB/s, peak RSS and the ratios to the references, and
//! the last run's repository is checked: counts as the generator made them, and no planted
//! secret in any file of the repository.
//!
//! Targets (issue 34): at least 30 MB/s, peak RSS at most 100 MiB.

mod common;

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::texts::{CATEGORIES, Rng, sentences};
use common::{load, measured, median, setting};

const NOW: &str = "2026-12-01T10:00:00Z";
const MB: f64 = 1e6;

/// What the generator wrote, to check the import against.
#[derive(Default)]
struct Made {
    bytes: u64,
    lines: u64,
    repeats: u64,
    chatter: u64,
    secrets: Vec<String>,
}

fn main() {
    let mb: u64 = setting("--mb", "CAIRN_BENCH_IMPORT_MB", 500);
    let runs: usize = setting("--runs", "CAIRN_BENCH_RUNS", 3);
    let work = tempfile::Builder::new()
        .prefix("cairn-bench-import-")
        .tempdir()
        .expect("temp dir");
    // `--file PATH` keeps the generated file there (to profile an import of it by hand).
    let kept: String = setting("--file", "CAIRN_BENCH_IMPORT_FILE", String::new());
    let file = if kept.is_empty() {
        work.path().join("observations.jsonl")
    } else {
        std::path::PathBuf::from(kept)
    };
    let made = generate(&file, mb * 1_000_000);
    println!(
        "cairn import bench ({}): {:.0} MB, {} lines ({} repeats, {} chatter, {} secrets), {runs} runs; load {}",
        common::bin(),
        made.bytes as f64 / MB,
        made.lines,
        made.repeats,
        made.chatter,
        made.secrets.len(),
        load()
    );
    let mut cairn_t = Vec::new();
    let mut cairn_rss = Vec::new();
    let mut wc_t = Vec::new();
    let mut wc_rss = Vec::new();
    let mut cat_t = Vec::new();
    let mut last = serde_json::Value::Null;
    for r in 0..runs {
        let repo = work.path().join(format!("repo-{r}"));
        let init = Command::new(common::bin())
            .arg("init")
            .arg(&repo)
            .output()
            .expect("cairn init");
        assert!(init.status.success(), "cairn init failed");
        let mut wc = Command::new("wc");
        wc.arg("-l").arg(&file);
        let m = measured(&wc);
        wc_t.push(m.wall);
        wc_rss.push(m.peak_mib);
        let mut cat = Command::new("sh");
        cat.arg("-c")
            .arg(format!("cat '{}' > /dev/null", file.display()));
        cat_t.push(measured(&cat).wall);
        let mut cmd = Command::new(common::bin());
        cmd.env("CAIRN_NOW", NOW)
            .arg("--repo")
            .arg(&repo)
            .args(["--json", "import", "observations"])
            .arg(&file);
        let m = measured(&cmd);
        assert!(
            m.out.status.success(),
            "import: {}",
            String::from_utf8_lossy(&m.out.stderr)
        );
        cairn_t.push(m.wall);
        cairn_rss.push(m.peak_mib);
        last = serde_json::from_slice::<serde_json::Value>(&m.out.stdout)
            .map(|v| v["data"].clone())
            .unwrap_or_default();
        if r + 1 < runs {
            let _ = std::fs::remove_dir_all(&repo);
        } else {
            check(&repo, &made, &last);
        }
    }
    let t = median(&mut cairn_t);
    let wc = median(&mut wc_t);
    let cat = median(&mut cat_t);
    let rss = median_f(&mut cairn_rss);
    let rate = made.bytes as f64 / MB / t.as_secs_f64();
    let secs = |d: Duration| d.as_secs_f64();
    println!();
    println!("measure (median of {runs})                          figure                 target");
    println!(
        "import observations, {:.0} MB                 {:>7.2} s  {:>6.1} MB/s   >= 30 MB/s   {}",
        made.bytes as f64 / MB,
        secs(t),
        rate,
        verdict(rate >= 30.0)
    );
    println!(
        "  its peak RSS                                {:>7.1} MiB             <= 100 MiB   {}",
        rss,
        verdict(rss <= 100.0)
    );
    println!(
        "  wc -l over the same file                    {:>7.2} s  {:>6.1} MB/s   ({:.1} MiB; import is {:.1}x its time)",
        secs(wc),
        made.bytes as f64 / MB / secs(wc),
        median_f(&mut wc_rss),
        secs(t) / secs(wc)
    );
    println!(
        "  cat over the same file                      {:>7.2} s  {:>6.1} MB/s   (import is {:.1}x its time)",
        secs(cat),
        made.bytes as f64 / MB / secs(cat),
        secs(t) / secs(cat)
    );
    let c = &last["counts"];
    println!(
        "  read {}, stored {}, duplicates {}, discarded {}, held {}; {} commits",
        c["read"],
        c["stored"],
        c["duplicates"],
        c["discarded"],
        c["held"],
        last["commits"].as_array().map_or(0, Vec::len)
    );
}

fn median_f(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn verdict(ok: bool) -> &'static str {
    if ok { "ok" } else { "MISSED" }
}

/// The secrets of `tests/fixtures/secrets/shapes.txt`: (secret, a text holding it).
fn secrets() -> Vec<(String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/secrets/shapes.txt");
    std::fs::read_to_string(path)
        .expect("secrets fixture")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let mut f = l.splitn(3, '\t');
            let (_, secret, text) = (f.next()?, f.next()?, f.next()?);
            Some((secret.to_string(), text.replace("\\n", "\n")))
        })
        .collect()
}

/// Writes the import file, streamed, until it holds `bytes`.
fn generate(path: &Path, bytes: u64) -> Made {
    let real = sentences();
    let secrets = secrets();
    let chatter = ["ok thanks", "yes", "go on", "looks good", "try again"];
    let mut rng = Rng(0x6a09_e667_f3bc_c908);
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).expect("create"));
    let mut made = Made::default();
    // Earlier lines a repeat is taken from (a ring, so memory stays small).
    let mut earlier: Vec<String> = Vec::new();
    while made.bytes < bytes {
        let i = made.lines;
        let line = if i > 100 && i % 25 == 0 {
            made.repeats += 1;
            earlier[rng.below(earlier.len())].clone()
        } else {
            let text = if i % 50 == 13 {
                made.chatter += 1;
                chatter[rng.below(chatter.len())].to_string()
            } else {
                let n = 1 + rng.below(4);
                let mut t: Vec<&str> = (0..n)
                    .map(|_| real[rng.below(real.len())].as_str())
                    .collect();
                let secret;
                if i % 40 == 21 {
                    let (s, holding) = &secrets[rng.below(secrets.len())];
                    if !made.secrets.contains(s) {
                        made.secrets.push(s.clone());
                    }
                    // On a line of its own, as the fixture gives it: each text there is a
                    // line (a YAML setting, a command), whose end some rules read.
                    secret = format!("\n{holding}\n");
                    t.insert(rng.below(t.len() + 1), &secret);
                    t.join(" ")
                } else {
                    t.join(" ")
                }
            };
            let mut o = serde_json::Map::new();
            o.insert("observation".into(), text.into());
            let day = 1 + rng.below(28);
            o.insert(
                "timestamp".into(),
                format!(
                    "2026-11-{day:02}T{:02}:{:02}:00Z",
                    rng.below(24),
                    rng.below(60)
                )
                .into(),
            );
            if rng.below(3) > 0 {
                o.insert(
                    "session_id".into(),
                    format!("claude/{:08x}-{:04x}", rng.next() as u32, i / 200).into(),
                );
            }
            if rng.below(2) == 0 {
                o.insert("source".into(), format!("export:{}", i % 7).into());
            }
            if rng.below(3) == 0 {
                o.insert(
                    "category_id".into(),
                    CATEGORIES[rng.below(CATEGORIES.len())].into(),
                );
            }
            if rng.below(4) == 0 {
                o.insert(
                    "priority".into(),
                    ["high", "medium", "low"][rng.below(3)].into(),
                );
            }
            if rng.below(10) == 0 {
                o.insert("write_verdict".into(), "hold".into());
            }
            if rng.below(5) == 0 {
                let n = 2 + rng.below(6);
                let narrative: Vec<&str> = (0..n)
                    .map(|_| real[rng.below(real.len())].as_str())
                    .collect();
                o.insert("narrative".into(), narrative.join(" ").into());
            }
            serde_json::Value::Object(o).to_string()
        };
        if earlier.len() < 4096 {
            earlier.push(line.clone());
        } else {
            let k = rng.below(earlier.len());
            earlier[k] = line.clone();
        }
        w.write_all(line.as_bytes()).expect("write");
        w.write_all(b"\n").expect("write");
        made.bytes += line.len() as u64 + 1;
        made.lines += 1;
    }
    w.flush().expect("flush");
    made
}

/// The last run's repository: every line read and accounted for, and no planted secret in a
/// file under it or in its last commit's tree.
fn check(repo: &Path, made: &Made, data: &serde_json::Value) {
    let c = &data["counts"];
    assert_eq!(c["read"].as_u64(), Some(made.lines), "every line read");
    let stored = c["stored"].as_u64().unwrap_or(0);
    let dup = c["duplicates"].as_u64().unwrap_or(0);
    let discarded = c["discarded"].as_u64().unwrap_or(0);
    let merged = c["deduped"].as_u64().unwrap_or(0);
    assert_eq!(
        stored + dup + discarded + merged,
        made.lines,
        "each line stored, a duplicate, discarded or merged"
    );
    assert!(dup >= made.repeats, "every repeat is a duplicate");
    // One pass of each search with every planted secret as a pattern.
    let patterns = repo.join("../secrets.txt");
    std::fs::write(&patterns, made.secrets.join("\n") + "\n").expect("patterns");
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["grep", "-l", "-F", "-f"])
        .arg(&patterns)
        .args(["HEAD", "--"])
        .output()
        .expect("git grep");
    let found = String::from_utf8_lossy(&out.stdout);
    assert!(found.is_empty(), "a secret reached a commit: {found}");
    let out = Command::new("grep")
        .args(["-r", "-l", "-F", "-f"])
        .arg(&patterns)
        .arg(repo)
        .output()
        .expect("grep");
    let found = String::from_utf8_lossy(&out.stdout);
    assert!(found.is_empty(), "a secret reached a file: {found}");
}
