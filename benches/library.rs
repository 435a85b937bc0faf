//! The document library at scale: adding 1,000 Markdown files and a 300-page PDF, re-adding
//! them unchanged, the first search after the add (it indexes the 5,000 chunks), and `cairn
//! search --library` at 100,000 chunks on two kinds of library (5,000 files of 20 sections,
//! and 2,000 files of 50), each beside its references timed in the same turns: `grep -r -c`
//! over the same files, and `cairn recall` over a repository of as many records.
//!
//! Run with `scripts/bench-library` (or `cargo bench --bench library -- [--files N]
//! [--pages N] [--chunks N] [--runs N]`; `CAIRN_BENCH_FILES`, `CAIRN_BENCH_PAGES`,
//! `CAIRN_BENCH_CHUNKS`, `CAIRN_BENCH_RUNS` set the defaults). Every figure is the median of
//! whole-process wall times, with the peak RSS of the same processes (their largest, from
//! `wait4`). The documents are generated: nested headings and paragraphs of words drawn from
//! a fixed vocabulary (so a query's words occur in a known share of chunks), and a PDF made
//! with lopdf (the same code the tests use).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::repo::cairn;
use common::{load, median, ms, setting};

#[path = "../tests/cli/pdfgen.rs"]
mod pdfgen;

/// A deterministic word source: syllables joined, picked by a linear congruential generator.
struct Words {
    state: u64,
    vocab: Vec<String>,
}

impl Words {
    fn new(seed: u64) -> Words {
        let syl = [
            "ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "xu", "da", "fe", "gi", "ho",
            "ju", "qua", "ze", "bro", "tri", "pla",
        ];
        let mut vocab = Vec::new();
        for a in syl {
            for b in syl {
                for c in ["", "n", "s", "r", "l"] {
                    vocab.push(format!("{a}{b}{c}"));
                }
            }
        }
        Words { state: seed, vocab }
    }

    fn next(&mut self) -> u64 {
        self.state = self
            .state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.state >> 33
    }

    fn word(&mut self) -> String {
        // Skewed toward the first words, as real text is toward its common words.
        let n = self.vocab.len() as u64;
        let r = self.next() % n;
        let i = (r * (self.next() % n)) / n;
        self.vocab[i as usize].clone()
    }

    fn sentence(&mut self, words: usize) -> String {
        let w: Vec<String> = (0..words).map(|_| self.word()).collect();
        format!("{}.", w.join(" "))
    }
}

/// A Markdown file of `sections` sections under nested headings (the title's heading holds
/// no text), each one paragraph of about 400 characters: one chunk each.
fn markdown(words: &mut Words, n: usize, sections: usize) -> String {
    let mut s = format!("# Document {n} {}\n\n", words.word());
    for i in 0..sections {
        let level = 2 + i % 3;
        s.push_str(&format!(
            "{} {} {}\n\n",
            "#".repeat(level),
            words.word(),
            words.word()
        ));
        for _ in 0..5 {
            s.push_str(&words.sentence(12));
            s.push(' ');
        }
        s.push_str("\n\n");
    }
    s
}

/// One process measured: its wall time and peak RSS in KiB.
#[derive(Clone, Copy)]
struct Run {
    took: Duration,
    rss_kib: u64,
}

/// Runs `cmd` (output discarded, stderr kept for the failure message), returning its wall
/// time and peak RSS; panics when it fails (exit 1, "nothing found", is not a failure).
// The child is reaped by `wait4` (for its rusage), which clippy does not see.
#[allow(clippy::zombie_processes)]
fn measured(cmd: &mut Command, what: &str) -> Run {
    let err = tempfile::tempfile().expect("stderr file");
    let t = Instant::now();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err.try_clone().expect("stderr file"))
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pid is our own child's, not yet waited for; both pointers are valid.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    let took = t.elapsed();
    assert!(pid > 0, "{what}: wait4 failed");
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    if !matches!(code, Some(0 | 1)) {
        use std::io::{Read, Seek};
        let mut err = err;
        let mut text = String::new();
        let _ = err.rewind();
        let _ = err.read_to_string(&mut text);
        panic!("{what} failed ({code:?}): {text}");
    }
    Run {
        took,
        rss_kib: usage.ru_maxrss as u64,
    }
}

/// The wall time of `cmd`.
fn timed(cmd: &mut Command, what: &str) -> Duration {
    measured(cmd, what).took
}

/// Measured runs: the median time and the largest peak RSS.
#[derive(Default)]
struct Runs(Vec<Run>);

impl Runs {
    fn push(&mut self, r: Run) {
        self.0.push(r);
    }
    fn p50(&self) -> Duration {
        let mut ts: Vec<Duration> = self.0.iter().map(|r| r.took).collect();
        median(&mut ts)
    }
    fn rss_mib(&self) -> f64 {
        self.0.iter().map(|r| r.rss_kib).max().unwrap_or(0) as f64 / 1024.0
    }
    fn row(&self, label: &str) -> String {
        format!(
            "{label:<52} {:>9.1} ms  {:>7.1} MiB",
            ms(self.p50()),
            self.rss_mib()
        )
    }
}

fn init(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    common::repo::init(&repo);
    repo
}

/// A library of `files` Markdown files of `sections` one-chunk sections, added and indexed.
fn library(work: &Path, name: &str, words: &mut Words, files: usize, sections: usize) -> PathBuf {
    let dir = work.join(format!("{name}-files"));
    std::fs::create_dir_all(&dir).unwrap();
    for n in 0..files {
        std::fs::write(
            dir.join(format!("doc{n:06}.md")),
            markdown(words, n, sections),
        )
        .unwrap();
    }
    let repo = init(&work.join(name).tap_mkdir());
    let add = timed(
        &mut cairn(&repo, &["library", "add", dir.to_str().unwrap()]),
        "add library",
    );
    let index = timed(&mut cairn(&repo, &["index"]), "index library");
    let out = cairn(&repo, &["--json", "status"])
        .output()
        .expect("status");
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    println!(
        "{name}: {files} files of {sections} sections, add {:.1} s, index {:.1} s, {} chunks in the index",
        add.as_secs_f64(),
        index.as_secs_f64(),
        status["data"]["kinds"]["library"]
    );
    repo
}

/// The repository `recall` is timed on, and the queries it is given in turn.
struct Reference<'a> {
    repo: &'a Path,
    queries: &'a [&'a str],
}

/// The library's search rows beside grep over its files and `recall` at as many records,
/// all timed in the same turns: a change in the machine's load falls on the library and its
/// references alike (recall timed in a pass of its own, minutes away from the library's, put
/// the ratio anywhere from 1.1 to 2.0 on a shared machine). Within a turn the library and
/// recall take turns at running first after the grep, which leaves the CPU's caches cold
/// for whatever runs next.
fn search_rows(name: &str, repo: &Path, queries: &[String], recall: &Reference) {
    let files = repo
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join(format!("{name}-files"));
    let (mut hybrid, mut words, mut grep) = (Runs::default(), Runs::default(), Runs::default());
    let (mut recall_h, mut recall_w) = (Runs::default(), Runs::default());
    for (i, q) in queries.iter().enumerate() {
        let rq = recall.queries[i % recall.queries.len()];
        let library_first = i % 2 == 0;
        for pass in 0..2 {
            if (pass == 0) == library_first {
                hybrid.push(measured(
                    &mut cairn(repo, &["search", "--library", q]),
                    "search",
                ));
                words.push(measured(
                    &mut cairn(repo, &["search", "--library", "--mode", "words", q]),
                    "search words",
                ));
            } else {
                recall_h.push(measured(&mut cairn(recall.repo, &["recall", rq]), "recall"));
                recall_w.push(measured(
                    &mut cairn(recall.repo, &["recall", "--mode", "words", rq]),
                    "recall words",
                ));
            }
        }
        let first = q.split(' ').next().unwrap();
        grep.push(measured(
            Command::new("grep")
                .args(["-r", "-c", "-F", first])
                .arg(&files),
            "grep",
        ));
    }
    let ratio = |a: &Runs, b: &Runs| ms(a.p50()) / ms(b.p50());
    for (runs, label) in [
        (
            &recall_h,
            "recall at as many records, p50 (hybrid)".to_string(),
        ),
        (
            &recall_w,
            "recall at as many records --mode words, p50".to_string(),
        ),
        (&hybrid, format!("{name}: search --library, p50 (hybrid)")),
        (
            &words,
            format!("{name}: search --library --mode words, p50"),
        ),
        (
            &grep,
            format!("{name}: grep -r -c WORD over the same files, p50"),
        ),
    ] {
        println!("{}", runs.row(&label));
    }
    println!(
        "{name}: hybrid {:.2}× recall, {:.2}× grep; words {:.2}× recall (words), {:.2}× grep   (targets ≤ 1.5× recall, ≤ 0.5× grep)",
        ratio(&hybrid, &recall_h),
        ratio(&hybrid, &grep),
        ratio(&words, &recall_w),
        ratio(&words, &grep),
    );
}

fn main() {
    let files = setting("--files", "CAIRN_BENCH_FILES", 1000usize);
    let pages = setting("--pages", "CAIRN_BENCH_PAGES", 300usize);
    let chunks = setting("--chunks", "CAIRN_BENCH_CHUNKS", 100_000usize);
    let runs = setting("--runs", "CAIRN_BENCH_RUNS", 5usize);
    let work = tempfile::Builder::new()
        .prefix("cairn-bench-library-")
        .tempdir()
        .expect("temp dir");
    println!(
        "cairn library bench: {files} Markdown files, a {pages}-page PDF, search at {chunks} chunks, {runs} runs; load {}",
        load()
    );
    let mut words = Words::new(7);

    // 1,000 Markdown files of 5 sections.
    let md_dir = work.path().join("md");
    std::fs::create_dir_all(&md_dir).unwrap();
    for n in 0..files {
        std::fs::write(
            md_dir.join(format!("doc{n:05}.md")),
            markdown(&mut words, n, 5),
        )
        .unwrap();
    }
    let (mut add, mut again, mut first_search) =
        (Runs::default(), Runs::default(), Runs::default());
    for r in 0..runs.clamp(1, 3) {
        let dir = work.path().join(format!("md-run{r}"));
        std::fs::create_dir_all(&dir).unwrap();
        let repo = init(&dir);
        let d = md_dir.to_str().unwrap();
        add.push(measured(&mut cairn(&repo, &["library", "add", d]), "add"));
        again.push(measured(
            &mut cairn(&repo, &["library", "add", d]),
            "re-add",
        ));
        first_search.push(measured(
            &mut cairn(&repo, &["search", "--library", "kalo minen"]),
            "first search",
        ));
    }
    println!("{:<52} {:>12}  {:>11}", "", "p50", "peak RSS");
    println!(
        "{}",
        add.row(&format!(
            "add {files} Markdown files ({} chunks)",
            files * 5
        ))
    );
    println!("{}", again.row("re-add them unchanged (a stat each)"));
    println!(
        "{}   (target ≤ 500 ms)",
        first_search.row("first library search (indexes the chunks)")
    );

    // A 300-page PDF, 30 lines a page.
    let pdf_pages: Vec<Vec<String>> = (0..pages)
        .map(|_| (0..30).map(|_| words.sentence(10)).collect())
        .collect();
    let pdf = work.path().join("manual.pdf");
    std::fs::write(&pdf, pdfgen::pdf(&pdf_pages)).unwrap();
    let mut pdf_add = Runs::default();
    for r in 0..runs.clamp(1, 3) {
        let dir = work.path().join(format!("pdf-run{r}"));
        std::fs::create_dir_all(&dir).unwrap();
        let repo = init(&dir);
        pdf_add.push(measured(
            &mut cairn(&repo, &["library", "add", pdf.to_str().unwrap()]),
            "add pdf",
        ));
    }
    println!(
        "{}",
        pdf_add.row(&format!(
            "add a {pages}-page PDF ({} KiB)",
            std::fs::metadata(&pdf).unwrap().len() / 1024
        ))
    );

    // The reference: `cairn recall` at as many records as the libraries have chunks.
    let recall_repo = init(&work.path().join("recall").tap_mkdir());
    common::repo::write_records(&recall_repo, chunks, None);
    common::repo::commit_all(&recall_repo, "records");
    timed(&mut cairn(&recall_repo, &["index"]), "index records");
    let recall_queries = [
        "deploy cache",
        "staging key",
        "clean tree host",
        "vpn root",
        "rollout restart",
    ];
    let recall = Reference {
        repo: &recall_repo,
        queries: &recall_queries,
    };

    // Search at 100,000 chunks on two kinds of library.
    let queries: Vec<String> = (0..runs.max(5) * 4)
        .map(|_| format!("{} {}", words.word(), words.word()))
        .collect();
    for (name, sections) in [("files-of-20", 20usize), ("files-of-50", 50)] {
        let repo = library(
            work.path(),
            name,
            &mut words,
            chunks.div_ceil(sections),
            sections,
        );
        search_rows(name, &repo, &queries, &recall);
    }
    if std::env::var_os("CAIRN_BENCH_KEEP").is_some() {
        let kept = work.keep();
        println!("kept {}", kept.display());
    }
}

trait TapMkdir {
    fn tap_mkdir(self) -> Self;
}

impl TapMkdir for PathBuf {
    fn tap_mkdir(self) -> Self {
        std::fs::create_dir_all(&self).expect("mkdir");
        self
    }
}
