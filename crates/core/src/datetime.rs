//! Date-times without a clock or a date library: the absolute times of the Azure traces read
//! ([`parse_datetime`]) and the UTC times of the exports written ([`iso8601`]), both over the
//! one proleptic Gregorian calendar here.
//!
//! Accepted by [`parse_datetime`]: `YYYY-MM-DD HH:MM:SS` (or a `T` between date and time), an optional fraction of
//! 1 to 9 digits, then optionally `Z` or a UTC offset `±HH:MM` / `±HHMM`. Without an offset the
//! time is taken as UTC; only differences between rows matter to a trace.

/// A parsed date-time: nanoseconds since 1970-01-01 UTC, and whether the text named an offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DateTime {
    pub unix_ns: i64,
    pub has_offset: bool,
}

/// What [`parse_datetime`] accepts, for error messages.
pub const DATETIME_SYNTAX: &str =
    "a date-time `YYYY-MM-DD HH:MM:SS[.fraction][+HH:MM]` (e.g. 2023-11-16 18:17:03.9799600)";

/// Parses one date-time, or `None` if it is not in the accepted syntax or out of range.
pub fn parse_datetime(text: &str) -> Option<DateTime> {
    let b = text.trim().as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = b.get(range)?;
        let mut v: i64 = 0;
        for &d in digits {
            if !d.is_ascii_digit() {
                return None;
            }
            v = v * 10 + i64::from(d - b'0');
        }
        Some(v)
    };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b' ' | b'T') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut i = 19;
    let mut frac_ns: i64 = 0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        let mut end = start;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        let digits = end - start;
        if digits == 0 || digits > 9 {
            return None;
        }
        frac_ns = num(start..end)? * 10i64.pow((9 - digits) as u32);
        i = end;
    }
    let mut offset_s: i64 = 0;
    let mut has_offset = false;
    match b.get(i) {
        None => {}
        Some(b'Z') if i + 1 == b.len() => has_offset = true,
        Some(&sign @ (b'+' | b'-')) => {
            let (h, m) = match b.len() - i {
                6 if b[i + 3] == b':' => (num(i + 1..i + 3)?, num(i + 4..i + 6)?),
                5 => (num(i + 1..i + 3)?, num(i + 3..i + 5)?),
                _ => return None,
            };
            if h > 23 || m > 59 {
                return None;
            }
            offset_s = (h * 60 + m) * 60 * if sign == b'-' { -1 } else { 1 };
            has_offset = true;
        }
        Some(_) => return None,
    }
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    let unix_ns = secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)?;
    Some(DateTime { unix_ns, has_offset })
}

/// UTC `YYYY-MM-DDTHH:MM:SS.ffffffZ` of nanoseconds since the Unix epoch.
pub fn iso8601(ns: u128) -> String {
    let secs = (ns / 1_000_000_000).min(i64::MAX as u128) as i64;
    let micros = (ns % 1_000_000_000) / 1000;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date `(year, month, day)` of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`, the inverse of [`days_from_civil`]).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        // 2023-11-16 18:17:03 UTC = 1700158623 s (Unix time, computed independently with `date -u -d`).
        let t = parse_datetime("2023-11-16 18:17:03.9799600").unwrap();
        assert_eq!(t, DateTime { unix_ns: 1_700_158_623_979_960_000, has_offset: false });
        let t = parse_datetime("2024-05-10 00:00:00.009930+00:00").unwrap();
        assert_eq!(t, DateTime { unix_ns: 1_715_299_200_009_930_000, has_offset: true });
        assert_eq!(parse_datetime("1970-01-01T00:00:00Z").unwrap().unix_ns, 0);
        assert_eq!(parse_datetime("2024-02-29 12:00:00+02:00").unwrap().unix_ns, 1_709_200_800_000_000_000);
        assert_eq!(parse_datetime("2024-02-29 12:00:00-0130").unwrap().unix_ns, 1_709_213_400_000_000_000);
    }

    #[test]
    fn rejects_what_is_not_a_datetime() {
        for bad in [
            "",
            "2023-11-16",
            "2023-13-01 00:00:00",
            "2023-02-29 00:00:00",
            "2023-11-16 24:00:00",
            "2023-11-16 18:17:03.",
            "2023-11-16 18:17:03.1234567890",
            "2023-11-16 18:17:03+1",
            "2023-11-16 18:17:03 x",
            "2023/11/16 18:17:03",
        ] {
            assert_eq!(parse_datetime(bad), None, "{bad}");
        }
    }

    #[test]
    fn iso_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(iso8601(1_700_000_000_123_456_000), "2023-11-14T22:13:20.123456Z");
        assert!(!iso8601(u128::MAX).is_empty());
    }

    #[test]
    fn days_and_dates_are_inverse() {
        for days in (-800_000..800_000).step_by(7).chain([-719_468, -1, 0, 1, 11_016, 19_782]) {
            let (y, m, d) = civil_from_days(days);
            assert!((1..=12).contains(&m) && d >= 1 && d <= days_in_month(y, m), "{days}: {y}-{m}-{d}");
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
