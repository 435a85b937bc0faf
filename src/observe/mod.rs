//! Turning text into observations: the write gate and the category, pure functions over text.
//!
//! The observer that reads transcripts comes later; `cairn remember` and
//! `cairn import observations` already pass through [`gate`] and [`category`].

pub mod category;
pub mod gate;
