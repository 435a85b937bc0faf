//! End-to-end tests: every test runs the real `cairn` binary in a fresh temporary repository,
//! with an environment scrubbed of HOME, GIT_* and CAIRN_*.

mod support;

mod adr;
mod agent_budget;
mod agent_hooks;
mod agent_settings;
mod agents;
mod browser;
mod crash;
mod eval;
mod forget;
mod git;
mod home;
mod hooks;
mod hooks_git;
mod hostile;
mod init;
mod library;
mod load;
mod maintain;
mod mcp;
mod mcp_results;
mod memory;
mod note;
mod observe;
mod output;
mod pdfgen;
mod provider;
mod recall;
mod redact;
mod reflect;
mod relevance;
mod review;
mod rewrite;
mod serve;
mod sessions;
mod shell;
mod slog;
mod stats;
mod sync;
mod telemetry;
mod triage;
mod untrusted;
mod why;
