//! Links the `cairn` binary as a position-dependent executable on Linux.
//!
//! A position-independent one (rustc's default) starts by applying about 70,000 relocations,
//! one for each pointer in its read-only data (vtables, panic locations, the tables of its
//! dependencies): a copy of each of those pages per process, about 1.8 ms of a 3 ms start
//! here, paid by every command an agent runs (ADR 60). The libraries' code is still compiled
//! position-independent; only the executable's own load address is fixed. `CAIRN_PIE=1`
//! at build time keeps the default, for a packager who wants the address randomized.
//!
//! It also builds the built-in model's vocabulary table (`src/embed/vocab_table.rs`) into
//! `OUT_DIR/vocab_table.rs`, so that no process spends a millisecond building it at load.

#[path = "src/embed/vocab_table.rs"]
#[allow(dead_code)]
mod vocab_table;

const VOCAB: &str = "model/potion-base-8M/vocab.txt";

fn main() {
    println!("cargo:rerun-if-env-changed=CAIRN_PIE");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/embed/vocab_table.rs");
    println!("cargo:rerun-if-changed={VOCAB}");
    let text = std::fs::read_to_string(VOCAB).expect("the built-in model's vocab.txt");
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let table = vocab_table::to_rust(&vocab_table::build(&text));
    std::fs::write(out.join("vocab_table.rs"), table).expect("OUT_DIR is writable");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let pie = std::env::var("CAIRN_PIE").is_ok_and(|v| v == "1");
    if linux && !pie {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
