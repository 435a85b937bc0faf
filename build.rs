//! Links the `cairn` binary as a position-dependent executable on Linux.
//!
//! A position-independent one (rustc's default) starts by applying about 70,000 relocations,
//! one for each pointer in its read-only data (vtables, panic locations, the tables of its
//! dependencies): a copy of each of those pages per process, about 1.8 ms of a 3 ms start
//! here, paid by every command an agent runs (ADR 60). The libraries' code is still compiled
//! position-independent; only the executable's own load address is fixed. `CAIRN_PIE=1`
//! at build time keeps the default, for a packager who wants the address randomized.

fn main() {
    println!("cargo:rerun-if-env-changed=CAIRN_PIE");
    println!("cargo:rerun-if-changed=build.rs");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let pie = std::env::var("CAIRN_PIE").is_ok_and(|v| v == "1");
    if linux && !pie {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
