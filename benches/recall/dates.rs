//! Dates (UTC, as cairn names day files): today, timestamps, and civil days to and from
//! day numbers.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn now_unix() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

pub(super) fn utc_today() -> String {
    civil_from_days((now_unix().as_secs() / 86_400) as i64)
}

pub(super) fn utc_ms_of_day() -> u64 {
    (now_unix().as_millis() % 86_400_000) as u64
}

pub(super) fn timestamp(day: &str, ms: u64) -> String {
    let ms = ms.min(86_399_999);
    format!(
        "{day}T{:02}:{:02}:{:02}.{:03}Z",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// Days since 1970-01-01 to `YYYY-MM-DD` (Howard Hinnant's algorithm).
pub(super) fn civil_from_days(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

pub(super) fn days_from_civil(date: &str) -> i64 {
    let y: i64 = date[..4].parse().expect("year");
    let m: i64 = date[5..7].parse().expect("month");
    let d: i64 = date[8..10].parse().expect("day");
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
