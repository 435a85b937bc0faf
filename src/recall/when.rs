//! Time in the query: the span a question names ("in May", "last week", "on 21 May, 2023",
//! "in 2023", "yesterday"), read against `now`, and the boost recall gives the records whose
//! time falls in it.
//!
//! Owns the parser ([`window`]) and the factor a record in it gets ([`factor`]); the index's record
//! times and the ranked lists are recall's. A question that names no time ("when did…", "what
//! is…") has no window and nothing changes: a window only ever adds weight, it never filters,
//! so a fact stated on another day than the question assumes is still found by its words.
//!
//! Read, in English: a date (`2023-05-21`, `21 May 2023`, `May 21, 2023`, `8th December,
//! 2023`, `21 May`, `May 21`), a month (`May 2023`, `in May`), a year (`in 2023`, not
//! `port 2049`), `today`, `yesterday`, `this|last week|month|year`, `N days|weeks|months ago`. A date
//! or month without a year takes the one year the query names, else it is its latest occurrence
//! not after `now` (agent memory looks back).
//! When several are named ("between August 11 and August 15 2023") the window spans them all.

use chrono::{DateTime, Datelike, Duration, NaiveDate, Utc};

/// A span of time, `start` inclusive, `end` exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
}

impl Window {
    fn days(start: NaiveDate, days: i64) -> Window {
        let start = start
            .and_hms_opt(0, 0, 0)
            .expect("midnight exists")
            .and_utc();
        Window {
            start,
            end: start + Duration::days(days),
        }
    }

    fn union(self, other: Window) -> Window {
        Window {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// Whether `t` falls in the window widened by `slack` on each side.
    pub fn contains(&self, t: DateTime<Utc>, slack: Duration) -> bool {
        t >= self.start - slack && t < self.end + slack
    }
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

fn month(word: &str) -> Option<u32> {
    // The whole name, or its first three letters ("Dec"), or "Sept".
    MONTHS
        .iter()
        .position(|m| *m == word || (word.len() == 3 && m.starts_with(word)))
        .or_else(|| (word == "sept").then_some(8))
        .map(|i| i as u32 + 1)
}

/// Month names that are more often other words ("you may", "to mar", "Jan said"): alone they
/// need a preposition before them to be read as a month.
fn ambiguous(word: &str) -> bool {
    matches!(word, "may" | "march" | "mar" | "jan")
}

/// Words before a month or a year alone that make it a time ("in May", "since 2023").
fn time_preposition(word: &str) -> bool {
    matches!(
        word,
        "in" | "of" | "during" | "since" | "from" | "until" | "last" | "throughout"
    )
}

fn year(word: &str) -> Option<i32> {
    (word.len() == 4 && word.bytes().all(|b| b.is_ascii_digit()))
        .then(|| word.parse().ok())
        .flatten()
        .filter(|y| (1970..=2200).contains(y))
}

/// `21`, `21st`, `8th` → a day of the month.
fn day(word: &str) -> Option<u32> {
    let digits = word
        .strip_suffix("st")
        .or_else(|| word.strip_suffix("nd"))
        .or_else(|| word.strip_suffix("rd"))
        .or_else(|| word.strip_suffix("th"))
        .unwrap_or(word);
    (!digits.is_empty() && digits.len() <= 2 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
        .filter(|d| (1..=31).contains(d))
}

/// The number a word spells, for "N days ago".
fn count(word: &str) -> Option<i64> {
    let small = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ];
    match small.iter().position(|w| *w == word) {
        Some(i) => Some(i as i64 + 1),
        None if word == "a" || word == "an" => Some(1),
        None => word.parse().ok().filter(|n| (1..=400).contains(n)),
    }
}

fn first_of_month(y: i32, m: u32) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(y, m, 1)
}

fn month_window(y: i32, m: u32) -> Option<Window> {
    let start = first_of_month(y, m)?;
    let next = if m == 12 {
        first_of_month(y + 1, 1)?
    } else {
        first_of_month(y, m + 1)?
    };
    Some(Window::days(start, (next - start).num_days()))
}

/// The latest year in which month `m` (and day `d`) is not after `today`.
fn latest_year(today: NaiveDate, m: u32, d: Option<u32>) -> i32 {
    let y = today.year();
    let this = NaiveDate::from_ymd_opt(y, m, d.unwrap_or(1));
    match this {
        Some(date) if date <= today => y,
        _ => y - 1,
    }
}

/// The window the query names, if it names one (see the module's list).
pub fn window(query: &str, now: DateTime<Utc>) -> Option<Window> {
    let lower = query.to_lowercase();
    // Words and numbers, with `2023-05-21` kept whole.
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .flat_map(|w| {
            if w.len() == 10 && w.as_bytes()[4] == b'-' {
                vec![w]
            } else {
                w.split('-').collect()
            }
        })
        .filter(|w| !w.is_empty())
        .collect();
    let today = now.date_naive();
    // A date without a year takes the one year the query names ("between August 11 and
    // August 15 2023"), else its latest occurrence.
    let mut years: Vec<i32> = words.iter().filter_map(|w| year(w)).collect();
    years.dedup();
    let named_year = match years.as_slice() {
        [y] if *y <= today.year() + 1 => Some(*y),
        _ => None,
    };
    let year_of = |m: u32, d: Option<u32>| named_year.unwrap_or_else(|| latest_year(today, m, d));
    let mut found: Option<Window> = None;
    let mut add = |w: Option<Window>| {
        if let Some(w) = w {
            found = Some(found.map_or(w, |f| f.union(w)));
        }
    };
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        let next = |k: usize| words.get(i + k).copied().unwrap_or("");
        // 2023-05-21
        if w.len() == 10
            && let Ok(d) = NaiveDate::parse_from_str(w, "%Y-%m-%d")
        {
            add(Some(Window::days(d, 1)));
            i += 1;
            continue;
        }
        // 21 May [2023]
        if let (Some(d), Some(m)) = (day(w), month(next(1))) {
            let y = year(next(2)).unwrap_or_else(|| year_of(m, Some(d)));
            add(NaiveDate::from_ymd_opt(y, m, d).map(|d| Window::days(d, 1)));
            i += if year(next(2)).is_some() { 3 } else { 2 };
            continue;
        }
        if let Some(m) = month(w) {
            let after_in = i > 0 && time_preposition(words[i - 1]);
            // May 21[,] [2023]
            if let Some(d) = day(next(1)) {
                let y = year(next(2)).unwrap_or_else(|| year_of(m, Some(d)));
                add(NaiveDate::from_ymd_opt(y, m, d).map(|d| Window::days(d, 1)));
                i += if year(next(2)).is_some() { 3 } else { 2 };
                continue;
            }
            // May 2023
            if let Some(y) = year(next(1)) {
                add(month_window(y, m));
                i += 2;
                continue;
            }
            if !ambiguous(w) || after_in {
                add(month_window(year_of(m, None), m));
            }
            i += 1;
            continue;
        }
        // A year alone needs a preposition: "port 2049" is not a time.
        if let Some(y) = year(w).filter(|_| i > 0 && time_preposition(words[i - 1])) {
            add(first_of_month(y, 1).map(|d| {
                let end = first_of_month(y + 1, 1).unwrap_or(d);
                Window::days(d, (end - d).num_days())
            }));
            i += 1;
            continue;
        }
        match (w, next(1)) {
            ("today", _) => add(Some(Window::days(today, 1))),
            ("yesterday", _) => add(Some(Window::days(today - Duration::days(1), 1))),
            ("this" | "last" | "past", unit @ ("week" | "month" | "year")) => {
                let back = if w == "this" { 0 } else { 1 };
                add(relative(today, unit, back));
                i += 2;
                continue;
            }
            (n, unit) if count(n).is_some() && next(2) == "ago" => {
                let n = count(n).expect("checked");
                let unit = unit.trim_end_matches('s');
                let d = match unit {
                    "day" => Some(Duration::days(n)),
                    "week" => Some(Duration::days(7 * n)),
                    "month" => Some(Duration::days(30 * n)),
                    _ => None,
                };
                if let Some(d) = d {
                    // "three weeks ago": the week around that day.
                    let at = today - d;
                    let half = match unit {
                        "day" => 0,
                        "week" => 3,
                        _ => 15,
                    };
                    add(Some(Window::days(at - Duration::days(half), 2 * half + 1)));
                    i += 3;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// `this|last week|month|year`: the calendar unit `back` units before today's (ISO weeks start
/// on Monday). "Last week" then means the week before this one, as people say it.
fn relative(today: NaiveDate, unit: &str, back: i64) -> Option<Window> {
    match unit {
        "week" => {
            let monday = today - Duration::days(i64::from(today.weekday().num_days_from_monday()));
            Some(Window::days(monday - Duration::days(7 * back), 7))
        }
        "month" => {
            let (mut y, mut m) = (today.year(), today.month() as i64 - back);
            if m < 1 {
                m += 12;
                y -= 1;
            }
            month_window(y, m as u32)
        }
        "year" => {
            let y = today.year() - back as i32;
            let start = first_of_month(y, 1)?;
            let end = first_of_month(y + 1, 1)?;
            Some(Window::days(start, (end - start).num_days()))
        }
        _ => None,
    }
}

/// The factor a record in the window gets, like a decay factor: `factor` when its time falls
/// in the window widened by `slack`, else 1. A factor of 1 (or less) turns the boost off.
pub fn factor(window: &Window, time: DateTime<Utc>, factor: f64, slack: Duration) -> f64 {
    if factor > 1.0 && window.contains(time, slack) {
        factor
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn span(q: &str, now: &str) -> Option<(String, String)> {
        window(q, at(now)).map(|w| {
            (
                w.start.format("%Y-%m-%d").to_string(),
                w.end.format("%Y-%m-%d").to_string(),
            )
        })
    }

    fn pair(a: &str, b: &str) -> Option<(String, String)> {
        Some((a.to_string(), b.to_string()))
    }

    #[test]
    fn windows_from_queries() {
        // now: Wednesday 2 December 2026
        let now = "2026-12-02T10:00:00Z";
        let cases: &[(&str, Option<(String, String)>)] = &[
            ("what did we decide about nfs", None),
            ("when did the deploy fail", None),
            ("you may want the cache", None),
            ("what broke in May", pair("2026-05-01", "2026-06-01")),
            ("what broke in may", pair("2026-05-01", "2026-06-01")),
            ("what broke in December", pair("2026-12-01", "2027-01-01")),
            // A month after now's is last year's.
            (
                "the outage of december 2025",
                pair("2025-12-01", "2026-01-01"),
            ),
            ("the migration in 2023", pair("2023-01-01", "2024-01-01")),
            ("nfs listens on port 2049", None),
            ("the march of progress", None),
            (
                "Which team did John sign with on 21 May, 2023?",
                pair("2023-05-21", "2023-05-22"),
            ),
            (
                "the book he finished on 8th December, 2023",
                pair("2023-12-08", "2023-12-09"),
            ),
            (
                "the picture shared on December 1,2023",
                pair("2023-12-01", "2023-12-02"),
            ),
            ("the deploy on 2026-11-30", pair("2026-11-30", "2026-12-01")),
            ("the note of 3 Dec", pair("2025-12-03", "2025-12-04")),
            ("yesterday's incident", pair("2026-12-01", "2026-12-02")),
            ("today", pair("2026-12-02", "2026-12-03")),
            ("errors last week", pair("2026-11-23", "2026-11-30")),
            ("errors this week", pair("2026-11-30", "2026-12-07")),
            ("what changed last month", pair("2026-11-01", "2026-12-01")),
            ("what changed last year", pair("2025-01-01", "2026-01-01")),
            ("the fix two weeks ago", pair("2026-11-15", "2026-11-22")),
            ("the fix 3 days ago", pair("2026-11-29", "2026-11-30")),
            (
                "Where was John between August 11 and August 15 2023?",
                pair("2023-08-11", "2023-08-16"),
            ),
        ];
        for (q, want) in cases {
            assert_eq!(&span(q, now), want, "{q}");
        }
        // Last month in January is December of the year before.
        assert_eq!(
            span("last month", "2027-01-10T00:00:00Z"),
            pair("2026-12-01", "2027-01-01")
        );
    }

    #[test]
    fn factor_applies_inside_the_widened_window() {
        let w = window("on 21 May, 2023", at("2024-01-01T00:00:00Z")).unwrap();
        let slack = Duration::hours(12);
        assert_eq!(factor(&w, at("2023-05-21T13:56:00Z"), 2.0, slack), 2.0);
        assert_eq!(factor(&w, at("2023-05-22T11:00:00Z"), 2.0, slack), 2.0);
        assert_eq!(factor(&w, at("2023-05-22T12:00:00Z"), 2.0, slack), 1.0);
        assert_eq!(factor(&w, at("2023-05-20T11:00:00Z"), 2.0, slack), 1.0);
        // A factor of 1 or less is off.
        assert_eq!(factor(&w, at("2023-05-21T13:56:00Z"), 1.0, slack), 1.0);
        assert_eq!(factor(&w, at("2023-05-21T13:56:00Z"), 0.5, slack), 1.0);
    }
}
