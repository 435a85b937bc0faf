//! The document library at scale: adding 1,000 Markdown files and a 300-page PDF, re-adding
//! them unchanged, and `cairn search --library` at 100,000 chunks beside `rg` over the same
//! files.
//!
//! Run with `scripts/bench-library` (or `cargo bench --bench library -- [--files N]
//! [--pages N] [--chunks N] [--runs N]`; `CAIRN_BENCH_FILES`, `CAIRN_BENCH_PAGES`,
//! `CAIRN_BENCH_CHUNKS`, `CAIRN_BENCH_RUNS` set the defaults). Every figure is the median of
//! whole-process wall times. The documents are generated: nested headings and paragraphs of
//! words drawn from a fixed vocabulary (so a query's words occur in a known share of chunks),
//! and a PDF made with lopdf (the same code the tests use).

use std::path::{Path, PathBuf};
use std::process::Command;
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

/// Runs `cmd`, returning its wall time; panics when it fails.
fn timed(cmd: &mut Command, what: &str) -> Duration {
    let t = Instant::now();
    let out = cmd.output().expect(what);
    let took = t.elapsed();
    assert!(
        out.status.success() || out.status.code() == Some(1),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

fn init(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    common::repo::init(&repo);
    repo
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
    let (mut add, mut again, mut first_search) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..runs.clamp(1, 3) {
        let dir = work.path().join(format!("md-run{r}"));
        std::fs::create_dir_all(&dir).unwrap();
        let repo = init(&dir);
        let d = md_dir.to_str().unwrap();
        add.push(timed(&mut cairn(&repo, &["library", "add", d]), "add"));
        again.push(timed(&mut cairn(&repo, &["library", "add", d]), "re-add"));
        first_search.push(timed(
            &mut cairn(&repo, &["search", "--library", "kalo minen"]),
            "first search",
        ));
    }
    println!(
        "add {files} Markdown files ({} chunks):       {:>9.1} ms",
        files * 5,
        ms(median(&mut add))
    );
    println!(
        "re-add them unchanged (a stat each):        {:>9.1} ms",
        ms(median(&mut again))
    );
    println!(
        "first library search (indexes the chunks):  {:>9.1} ms",
        ms(median(&mut first_search))
    );

    // A 300-page PDF, 30 lines a page.
    let pdf_pages: Vec<Vec<String>> = (0..pages)
        .map(|_| (0..30).map(|_| words.sentence(10)).collect())
        .collect();
    let pdf = work.path().join("manual.pdf");
    std::fs::write(&pdf, pdfgen::pdf(&pdf_pages)).unwrap();
    let mut pdf_add = Vec::new();
    for r in 0..runs.clamp(1, 3) {
        let dir = work.path().join(format!("pdf-run{r}"));
        std::fs::create_dir_all(&dir).unwrap();
        let repo = init(&dir);
        pdf_add.push(timed(
            &mut cairn(&repo, &["library", "add", pdf.to_str().unwrap()]),
            "add pdf",
        ));
    }
    println!(
        "add a {pages}-page PDF ({} KiB):              {:>9.1} ms",
        std::fs::metadata(&pdf).unwrap().len() / 1024,
        ms(median(&mut pdf_add))
    );

    // Search at 100,000 chunks: files of 20 one-chunk sections.
    let big_dir = work.path().join("big");
    std::fs::create_dir_all(&big_dir).unwrap();
    let per_file = 20;
    let big_files = chunks.div_ceil(per_file);
    for n in 0..big_files {
        std::fs::write(
            big_dir.join(format!("doc{n:06}.md")),
            markdown(&mut words, n, per_file),
        )
        .unwrap();
    }
    let repo = init(&work.path().join("big-repo").tap_mkdir());
    let t = Instant::now();
    timed(
        &mut cairn(&repo, &["library", "add", big_dir.to_str().unwrap()]),
        "add big",
    );
    let big_add = t.elapsed();
    let t = Instant::now();
    let out = cairn(&repo, &["--json", "index"]).output().expect("index");
    assert!(
        out.status.success(),
        "index: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let big_index = t.elapsed();
    let out = cairn(&repo, &["--json", "status"])
        .output()
        .expect("status");
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    println!(
        "add {big_files} files ({chunks} chunks):            {:>9.1} ms, then indexing {:>9.1} ms",
        ms(big_add),
        ms(big_index)
    );
    if let Some(n) = status["data"]["kinds"]["library"].as_u64() {
        println!("library chunks in the index: {n}");
    }
    let queries: Vec<String> = (0..runs.max(5) * 4)
        .map(|_| format!("{} {}", words.word(), words.word()))
        .collect();
    let mut search = Vec::new();
    let mut search_words = Vec::new();
    let mut rg = Vec::new();
    let have_rg = Command::new("rg").arg("--version").output().is_ok();
    for q in &queries {
        search.push(timed(
            &mut cairn(&repo, &["search", "--library", q]),
            "search",
        ));
        search_words.push(timed(
            &mut cairn(&repo, &["search", "--library", "--mode", "words", q]),
            "search words",
        ));
        let first = q.split(' ').next().unwrap();
        let mut c = if have_rg {
            let mut c = Command::new("rg");
            c.args(["-c", "-F", first]);
            c
        } else {
            let mut c = Command::new("grep");
            c.args(["-rcF", first]);
            c
        };
        c.arg(&big_dir);
        rg.push(timed(&mut c, "rg"));
    }
    println!(
        "search --library at {chunks} chunks, p50 (hybrid): {:>9.1} ms",
        ms(median(&mut search))
    );
    println!(
        "search --library --mode words, p50:          {:>9.1} ms",
        ms(median(&mut search_words))
    );
    println!(
        "{} -c WORD over the same files, p50:          {:>9.1} ms",
        if have_rg { "rg" } else { "grep -r" },
        ms(median(&mut rg))
    );
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
