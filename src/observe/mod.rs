//! Turning text into observations: the observers, the write gate and the category.
//!
//! [`builtin`] distills facts from turn cards offline; [`llm`] holds the LLM observer's prompt
//! and the strict parser of its XML reply; [`said`] reads what a sentence of a prompt says; every fact then passes [`gate`] and gets its
//! [`category`] before [`admit`] dedups and keeps it.

pub mod admit;
pub mod builtin;
pub mod category;
pub mod dedup;
pub mod gate;
pub mod llm;
pub mod said;
pub mod write;
