//! `cairn maintain` at 10,000 and 100,000 observations, and the recall of its candidate filter.
//!
//! Run with `scripts/bench-maintain` (or `cargo bench --bench maintain -- [--sizes 10000,100000]
//! [--runs N] [--recall-sample N]`; `CAIRN_BENCH_SIZES`, `CAIRN_BENCH_RUNS`,
//! `CAIRN_BENCH_RECALL_SAMPLE` set the defaults, `CAIRN_BENCH_KEEP=1` keeps the work folder).
//!
//! 1. **Texts.** Real sentences (6 to 40 words) from the ADRs and session transcripts in
//!    `tests/fixtures` (about 17,800), then, past those, texts made of the head of one sentence
//!    and the tail of another; one in ten is a near-duplicate of an earlier text (other case, a
//!    word added, punctuation), one in thirty an error fix in the built-in observer's template;
//!    seven categories, a tenth held.
//! 2. **Candidate filter.** On the first `--recall-sample` texts (8,000): every pair at cosine
//!    ≥ 0.85 by brute force over the int8 vectors, against the pairs the sign-bit bands let
//!    through ([`cairn::maintain::lsh`]); the share found is the filter's recall. A few other
//!    band shapes are printed beside the one used.
//! 3. **Whole process.** For each size, a repository whose observation files are written
//!    directly (ages spread over a year, one a day file, a tenth recalled in
//!    `.cairn/recalls.jsonl`), committed, and indexed once with `cairn index` (outside the
//!    timing); then `cairn maintain` on fresh copies, median of `--runs`, beside `rg -c` over
//!    the observation files and `git status`.
//!
//!    Each run is timed whole under GNU time (peak RSS); beside it, a whole `cairn recall` on
//!    another copy (the reference issue 34 names).
//!
//! Target (issue 34): at most 3 s at 100,000 observations (issue 13's was 10 s).

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use cairn::embed::Embedder;

mod common;
use common::texts::{CATEGORIES, Rng, sentences};
use common::{copy_dir, git, load, measured, median, ms, setting};

const NOW: &str = "2026-12-01T10:00:00Z";

fn main() {
    let sizes: String = setting("--sizes", "CAIRN_BENCH_SIZES", "10000,100000".to_string());
    let sizes: Vec<usize> = sizes
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let runs = setting("--runs", "CAIRN_BENCH_RUNS", 3usize);
    let sample = setting("--recall-sample", "CAIRN_BENCH_RECALL_SAMPLE", 8_000usize);
    let work = tempfile::Builder::new()
        .prefix("cairn-bench-maintain-")
        .tempdir()
        .expect("temp dir");
    let root = work.path().to_path_buf();
    println!(
        "cairn maintain bench ({}): sizes {sizes:?}, {runs} runs; load {}",
        common::bin(),
        load()
    );
    let max = sizes.iter().copied().max().unwrap_or(0).max(sample);
    let corpus = corpus(max);

    // 2. The candidate filter against brute force.
    filter_recall(&corpus[..sample.min(corpus.len())]);

    // 3. Whole process.
    println!();
    println!("measure                                             figure       target");
    for &n in &sizes {
        let prepared = root.join(format!("prepared-{n}"));
        let t = Instant::now();
        prepare(&prepared, &corpus[..n]);
        println!(
            "prepared {n} observations (files, commit, cairn index) in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        let mut times = Vec::new();
        let mut cpu = Vec::new();
        let mut rg_times = Vec::new();
        let mut status_times = Vec::new();
        let mut recall_times = Vec::new();
        let mut rss = Vec::new();
        let mut last = serde_json::Value::Null;
        let mut rg_name = "rg -c";
        for r in 0..runs {
            let copy = root.join(format!("run-{n}-{r}"));
            copy_dir(&prepared, &copy);
            let (rg, name) = rg_reference(&copy);
            rg_name = name;
            rg_times.push(rg);
            let mut status = Command::new("git");
            status.arg("-C").arg(&copy).args(["status", "--porcelain"]);
            status_times.push(timed(status).0);
            let cpu_before = children_cpu();
            let m = measured(&cairn(&copy, &["--json", "--now", NOW, "maintain"]));
            if let (Some(a), Some(b)) = (cpu_before, children_cpu()) {
                cpu.push(b.saturating_sub(a));
            }
            let (t, out) = (m.wall, m.out);
            rss.push(m.peak_mib);
            assert!(
                out.status.success(),
                "maintain: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            last = data_of(&out);
            times.push(t);
            let _ = std::fs::remove_dir_all(&copy);
        }
        // The reference the issue names: a whole `cairn recall` on a copy of the same
        // repository (not the maintained ones: a recall counts, and counts change what
        // maintain marks stale).
        let copy = root.join(format!("recall-{n}"));
        copy_dir(&prepared, &copy);
        for _ in 0..runs {
            recall_times.push(measured(&cairn(&copy, &["--now", NOW, "recall", "deploy"])).wall);
        }
        let _ = std::fs::remove_dir_all(&copy);
        let m = median(&mut times);
        let target = if n >= 100_000 { "<= 3000 ms" } else { "" };
        println!(
            "maintain, {n} observations (median of {runs})      {:>8.0} ms   {target}  {}",
            ms(m),
            if n >= 100_000 {
                verdict(m <= Duration::from_secs(3))
            } else {
                ""
            }
        );
        rss.sort_by(f64::total_cmp);
        println!(
            "  its peak RSS                                  {:>8.1} MiB",
            rss[rss.len() / 2]
        );
        let recall = median(&mut recall_times);
        println!(
            "  cairn recall on the same repository           {:>8.1} ms   (maintain is {:.1}x)",
            ms(recall),
            m.as_secs_f64() / recall.as_secs_f64()
        );
        if !cpu.is_empty() {
            println!(
                "  maintain's CPU time, user + system (median)   {:>8.0} ms",
                ms(median(&mut cpu))
            );
        }
        println!(
            "  {rg_name} over the observation files              {:>8.1} ms",
            ms(median(&mut rg_times))
        );
        println!(
            "  git status on the same repository             {:>8.1} ms",
            ms(median(&mut status_times))
        );
        let c = &last["counts"];
        println!(
            "  swept {}, candidate pairs {}, similar {}, unconfirmed {}; merged {}, stale {}, deleted {}",
            c["swept"],
            c["candidates"],
            c["similar"],
            c["unconfirmed"],
            c["merged"],
            c["stale"],
            c["deleted"]
        );
    }
    if std::env::var_os("CAIRN_BENCH_KEEP").is_some() {
        let kept = work.keep();
        println!("kept {}", kept.display());
    }
}

/// One generated observation.
struct Text {
    text: String,
    category: &'static str,
}

/// `n` texts: the fixtures' sentences shuffled, then head-and-tail mixes of them; near
/// duplicates and error fixes among them.
fn corpus(n: usize) -> Vec<Text> {
    let real = sentences();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut order: Vec<usize> = (0..real.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let programs = [
        ("cargo test", "error[E0425]: cannot find value"),
        ("npm publish", "npm ERR! code E403 forbidden"),
        ("make release", "No rule to make target 'dist'"),
        ("pytest -x", "ModuleNotFoundError: No module named 'yaml'"),
        ("docker build .", "failed to solve: dockerfile parse error"),
        ("go test ./...", "undefined: NewServer"),
        ("kubectl apply -f deploy.yaml", "error validating data"),
        ("git push", "rejected (non-fast-forward)"),
    ];
    let files = [
        "src/lib.rs",
        "package.json",
        "Makefile",
        "deploy.yaml",
        "go.mod",
        ".npmrc",
    ];
    let mut out: Vec<Text> = Vec::with_capacity(n);
    let mut next_real = 0;
    for i in 0..n {
        let category = CATEGORIES[rng.below(CATEGORIES.len())];
        let text = if i > 20 && i % 10 == 0 {
            let base = &out[rng.below(out.len())].text;
            match rng.below(3) {
                0 => base.to_lowercase(),
                1 => format!("{base} as agreed"),
                _ => format!("{}!", base.trim_end_matches(['.', '!', '?'])),
            }
        } else if i % 30 == 7 {
            let (p, e) = programs[rng.below(programs.len())];
            format!(
                "`{p}` failed (exit {}: {e} at line {}); `{p}` then succeeded after changes to {}",
                1 + rng.below(2),
                rng.below(400),
                files[rng.below(files.len())]
            )
        } else if next_real < order.len() {
            next_real += 1;
            real[order[next_real - 1]].clone()
        } else {
            let (a, b) = (&real[rng.below(real.len())], &real[rng.below(real.len())]);
            let wa: Vec<&str> = a.split_whitespace().collect();
            let wb: Vec<&str> = b.split_whitespace().collect();
            let head = &wa[..wa.len().div_ceil(2)];
            let tail = &wb[wb.len() / 2..];
            format!("{} {}", head.join(" "), tail.join(" "))
        };
        out.push(Text { text, category });
    }
    out
}

/// The filter's recall against brute force, and its candidate count, on `texts`.
fn filter_recall(texts: &[Text]) {
    let model = cairn::embed::Builtin::shared();
    let strs: Vec<&str> = texts.iter().map(|t| t.text.as_str()).collect();
    let t = Instant::now();
    let vectors: Vec<(Vec<i8>, f32)> = model
        .embed(&strs)
        .iter()
        .map(|v| cairn::embed::quantize(v))
        .collect();
    let embed_time = t.elapsed();
    let cos = |i: usize, j: usize| {
        cairn::embed::dot_i8(&vectors[i].0, &vectors[j].0) as f32 * vectors[i].1 * vectors[j].1
    };
    let n = vectors.len();
    let t = Instant::now();
    let mut truth = std::collections::HashSet::new();
    for i in 0..n {
        for j in i + 1..n {
            if f64::from(cos(i, j)) >= 0.85 {
                truth.insert((i as u32, j as u32));
            }
        }
    }
    let brute = t.elapsed();
    let refs: Vec<&[i8]> = vectors.iter().map(|v| v.0.as_slice()).collect();
    println!();
    println!(
        "candidate filter on {n} texts (embedded in {:.0} ms): {} pairs at cosine >= 0.85 by brute force over {} pairs ({:.0} ms)",
        ms(embed_time),
        truth.len(),
        n * (n - 1) / 2,
        ms(brute)
    );
    println!("bands x bits   candidates   share of all pairs   recall    time");
    let used = (cairn::maintain::lsh::BANDS, cairn::maintain::lsh::BITS);
    for (bands, bits) in [(48, 12), (64, 12), (48, 14), used, (96, 16)] {
        let t = Instant::now();
        let center = cairn::maintain::lsh::center(&refs);
        let pairs = cairn::maintain::lsh::candidates(&refs, &center, bands, bits);
        let found = pairs
            .iter()
            .filter(|&&(i, j)| f64::from(cos(i as usize, j as usize)) >= 0.85)
            .count();
        let took = t.elapsed();
        println!(
            "{bands:>3} x {bits:<3}   {:>11}   {:>17.4} %   {:>6.4}   {:>5.0} ms{}",
            pairs.len(),
            100.0 * pairs.len() as f64 / (n * (n - 1) / 2) as f64,
            found as f64 / truth.len().max(1) as f64,
            ms(took),
            if (bands, bits) == used {
                "   (used)"
            } else {
                ""
            }
        );
    }
    // The sign distance (of 256 bits) of the pairs at or above the threshold, and how many
    // of the used bands' candidates a cut at that distance would leave to score.
    let center = cairn::maintain::lsh::center(&refs);
    let words = cairn::maintain::lsh::signature_words(refs[0].len());
    let sigs: Vec<Vec<u64>> = refs
        .iter()
        .map(|v| {
            let mut s = vec![0u64; words];
            cairn::maintain::lsh::signature(v, &center, &mut s);
            s
        })
        .collect();
    let dist = |i: usize, j: usize| cairn::maintain::lsh::sign_distance(&sigs[i], &sigs[j]);
    let mut near: Vec<u32> = truth
        .iter()
        .map(|&(i, j)| dist(i as usize, j as usize))
        .collect();
    near.sort_unstable();
    let at = |q: f64| near[((near.len() - 1) as f64 * q) as usize];
    println!(
        "sign distance of the pairs at cosine >= 0.85: median {}, p99 {}, p99.9 {}, max {}",
        at(0.5),
        at(0.99),
        at(0.999),
        near.last().copied().unwrap_or(0)
    );
    let pairs = cairn::maintain::lsh::candidates(&refs, &center, used.0, used.1);
    let used_cut = (refs[0].len() * cairn::maintain::lsh::SIGN_CUT_EIGHTHS / 8) as u32;
    for cut in [48, 56, 64, 72, 80, 96] {
        let kept = pairs
            .iter()
            .filter(|&&(i, j)| dist(i as usize, j as usize) <= cut)
            .count();
        let lost = near.iter().filter(|&&d| d > cut).count();
        println!(
            "  cut at {cut:>3}: scores {:>6.2} % of the candidates, loses {lost} of {} pairs{}",
            100.0 * kept as f64 / pairs.len().max(1) as f64,
            near.len(),
            if cut == used_cut { "   (used)" } else { "" }
        );
    }
}

/// A repository holding `texts` as observations, committed and indexed.
fn prepare(repo: &Path, texts: &[Text]) {
    let out = Command::new(common::bin())
        .arg("init")
        .arg(repo)
        .output()
        .expect("cairn init");
    assert!(
        out.status.success(),
        "init: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = repo.join("vault/observations");
    std::fs::create_dir_all(&dir).expect("observations folder");
    let now = chrono::DateTime::parse_from_rfc3339(NOW)
        .expect("NOW parses")
        .with_timezone(&chrono::Utc);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut days: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    let mut recalls = String::new();
    for (i, t) in texts.iter().enumerate() {
        let age_minutes = rng.below(365 * 24 * 60) as i64;
        let time = now - chrono::Duration::minutes(age_minutes);
        let source = format!("bench:{i}");
        let id = cairn::store::observation_id(&t.text, &source);
        let line = serde_json::json!({
            "id": id,
            "session_id": format!("claude/bench-{}", i / 40),
            "observation": t.text,
            "observation_type": "fact",
            "source": source,
            "timestamp": time.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
            "priority": "medium",
            "write_verdict": if i % 10 == 3 { "hold" } else { "allow" },
            "write_confidence": 0.5 + (i % 5) as f64 * 0.1,
            "category_id": t.category,
            "category_confidence": 0.6,
            "taxonomy_version": 1,
            "merged_count": 1 + u32::from(i % 7 == 0),
        });
        let day = time.format("%Y-%m-%d").to_string();
        let file = days.entry(day).or_default();
        file.push_str(&line.to_string());
        file.push('\n');
        if i % 10 == 5 {
            recalls.push_str(&format!("{{\"id\":\"{id}\",\"ts\":\"{NOW}\"}}\n"));
        }
    }
    for (day, text) in &days {
        std::fs::write(dir.join(format!("{day}.jsonl")), text).expect("write a day file");
    }
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-qm", "observations"]);
    let out = cairn(repo, &["--json", "index"])
        .output()
        .expect("cairn index");
    assert!(
        out.status.success(),
        "index: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(repo.join(".cairn/recalls.jsonl"), recalls).expect("write recalls");
}

fn cairn(repo: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(common::bin());
    c.arg("--repo")
        .arg(repo)
        .args(args)
        .env_remove("CAIRN_REPO");
    c
}

/// CPU time (user + system) of this process's waited-for children so far, from
/// /proc/self/stat (`cutime`, `cstime`, in clock ticks): on a loaded machine the wall time
/// measures the queue for the cores as much as cairn, and this does not.
fn children_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(13)?.parse::<u64>().ok()? + fields.get(14)?.parse::<u64>().ok()?;
    let hz = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(100);
    Some(Duration::from_secs_f64(ticks as f64 / hz as f64))
}

fn timed(mut cmd: Command) -> (Duration, Output) {
    let start = Instant::now();
    let out = cmd.output().expect("run");
    (start.elapsed(), out)
}

fn data_of(out: &Output) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    v["data"].clone()
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "NOT met" }
}

/// ripgrep (or grep) counting the observation lines: the floor of reading the same files.
fn rg_reference(repo: &Path) -> (Duration, &'static str) {
    let rg = Command::new("rg")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let dir = repo.join("vault/observations");
    let cmd = if rg {
        let mut c = Command::new("rg");
        c.args(["-c", "--no-messages", "\"observation\""]).arg(dir);
        c
    } else {
        let mut c = Command::new("grep");
        c.args(["-r", "-c", "\"observation\""]).arg(dir);
        c
    };
    (timed(cmd).0, if rg { "rg -c" } else { "grep -rc" })
}
