//! Times as users type them, and as cairn writes them.
//!
//! Accepted: RFC 3339 (`2026-11-30T17:00:00Z`, any offset, turned into UTC), a bare date
//! (`2026-11-30`, midnight UTC), and for spans back from now `30m`, `12h`, `7d`, `2w`.
//! Written: RFC 3339 UTC with milliseconds and a `Z`.

use chrono::{DateTime, Duration, NaiveDate, SecondsFormat, Utc};

/// Formats a time the way every cairn record stores it.
pub fn format(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parses an absolute time or a span back from `now`.
pub fn parse(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    if let Ok(d) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc());
    }
    if let Some(span) = parse_span(text) {
        return Ok(now - span);
    }
    Err(format!(
        "cannot read time `{text}`: use RFC 3339 (2026-11-30T17:00:00Z), a date (2026-11-30) \
         or a span back from now (30m, 12h, 7d, 2w)"
    ))
}

fn parse_span(text: &str) -> Option<Duration> {
    let unit = text.chars().last()?;
    let n: i64 = text[..text.len() - unit.len_utf8()].parse().ok()?;
    match unit {
        'm' => Some(Duration::minutes(n)),
        'h' => Some(Duration::hours(n)),
        'd' => Some(Duration::days(n)),
        'w' => Some(Duration::weeks(n)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_users_type() {
        let now = parse("2026-11-30T12:00:00Z", Utc::now()).unwrap();
        let cases = [
            ("2026-11-30T12:00:00+02:00", "2026-11-30T10:00:00.000Z"),
            ("2026-11-01", "2026-11-01T00:00:00.000Z"),
            ("7d", "2026-11-23T12:00:00.000Z"),
            ("12h", "2026-11-30T00:00:00.000Z"),
            ("30m", "2026-11-30T11:30:00.000Z"),
            ("2w", "2026-11-16T12:00:00.000Z"),
        ];
        for (input, want) in cases {
            assert_eq!(format(parse(input, now).unwrap()), want, "{input}");
        }
        assert!(parse("yesterday", now).is_err());
        assert!(parse("5y", now).is_err());
    }
}
