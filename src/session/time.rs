//! ISO 8601 timestamps as the Node.js `pi` writes them (`2026-12-02T09:34:49.681Z`).
//!
//! Entries and headers carry UTC timestamps with millisecond precision; file names use the same
//! text with `:` and `.` replaced by `-`. Message timestamps inside entries stay in epoch
//! milliseconds (that is the agent's own unit). Formatting and parsing are done here by hand
//! (days-from-civil arithmetic) so the crate needs no date library.

use crate::agent::protocol::types::now_ms;

/// Days since 1970-01-01 → (year, month 1..=12, day 1..=31), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// (year, month, day) → days since 1970-01-01.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for epoch milliseconds.
pub fn iso_from_ms(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, mo, d) = civil_from_days(days);
    let (h, mi, s, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
}

/// The current time as an ISO timestamp.
pub(crate) fn iso_now() -> String {
    iso_from_ms(now_ms())
}

/// `YYYY-MM-DD_HH-MM-SS` in the local time zone, for names of files a person saves (exports);
/// UTC where the zone cannot be read.
pub(crate) fn local_file_stamp(ms: i64) -> String {
    let secs = ms.div_euclid(1000) as libc::time_t;
    // SAFETY: `localtime_r` only writes the `tm` it is given, which is zero-initialised and
    // lives for the call; `secs` is a valid `time_t`.
    let local = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        (!libc::localtime_r(&secs, &mut tm).is_null()).then_some(tm)
    };
    match local {
        Some(tm) => format!(
            "{:04}-{:02}-{:02}_{:02}-{:02}-{:02}",
            i64::from(tm.tm_year) + 1900,
            tm.tm_mon + 1,
            tm.tm_mday,
            tm.tm_hour,
            tm.tm_min,
            tm.tm_sec
        ),
        None => {
            let iso = iso_from_ms(ms);
            format!("{}_{}", &iso[..10], iso[11..19].replace(':', "-"))
        }
    }
}

/// The file-name form of an ISO timestamp: `:` and `.` become `-`.
pub fn file_stamp(iso: &str) -> String {
    iso.replace([':', '.'], "-")
}

fn digits(s: &[u8], at: usize, n: usize) -> Option<i64> {
    let part = s.get(at..at + n)?;
    part.iter().try_fold(0i64, |acc, b| {
        b.is_ascii_digit().then(|| acc * 10 + i64::from(b - b'0'))
    })
}

/// Epoch milliseconds of an ISO 8601 timestamp (`YYYY-MM-DDTHH:MM[:SS[.fff]]` with `Z`, an
/// offset, or nothing for UTC). `None` when it does not parse.
pub fn ms_from_iso(s: &str) -> Option<i64> {
    let b = s.trim().as_bytes();
    let year = digits(b, 0, 4)?;
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return None;
    }
    let month = digits(b, 5, 2)? as u32;
    let day = digits(b, 8, 2)? as u32;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let mut ms = days_from_civil(year, month, day) * 86_400_000;
    if b.len() == 10 {
        return Some(ms);
    }
    if !matches!(b.get(10), Some(b'T' | b't' | b' ')) || b.get(13) != Some(&b':') {
        return None;
    }
    ms += digits(b, 11, 2)? * 3_600_000 + digits(b, 14, 2)? * 60_000;
    let mut i = 16;
    if b.get(i) == Some(&b':') {
        ms += digits(b, 17, 2)? * 1000;
        i = 19;
        if b.get(i) == Some(&b'.') {
            i += 1;
            let start = i;
            let mut frac = 0i64;
            while let Some(c) = b.get(i).filter(|c| c.is_ascii_digit()) {
                if i - start < 3 {
                    frac = frac * 10 + i64::from(c - b'0');
                }
                i += 1;
            }
            if i == start {
                return None;
            }
            for _ in (i - start)..3 {
                frac *= 10;
            }
            ms += frac;
        }
    }
    match b.get(i) {
        None | Some(b'Z' | b'z') if b.len() <= i + 1 => Some(ms),
        Some(sign @ (b'+' | b'-')) => {
            let h = digits(b, i + 1, 2)?;
            let m = match b.get(i + 3) {
                Some(b':') => digits(b, i + 4, 2)?,
                _ => digits(b, i + 3, 2).unwrap_or(0),
            };
            let off = (h * 60 + m) * 60_000;
            Some(if *sign == b'+' { ms - off } else { ms + off })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_stamps_read_as_dates_for_file_names() {
        let s = local_file_stamp(1_764_000_000_000);
        assert_eq!(s.len(), 19, "{s}");
        assert!(s.starts_with("2025-11-2"), "{s}");
        assert_eq!(&s[10..11], "_");
        assert!(!s.contains(':'));
    }

    #[test]
    fn formats_like_javascript_to_iso_string() {
        assert_eq!(iso_from_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_from_ms(1_796_204_089_681), "2026-12-02T09:34:49.681Z");
        assert_eq!(iso_from_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(
            file_stamp("2026-12-02T09:34:49.681Z"),
            "2026-12-02T09-34-49-681Z"
        );
    }

    #[test]
    fn parses_what_it_formats_and_common_variants() {
        for ms in [0, 1, 951_782_400_000, 1_796_204_089_681, 4_102_444_800_123] {
            assert_eq!(ms_from_iso(&iso_from_ms(ms)), Some(ms));
        }
        assert_eq!(ms_from_iso("2026-12-02T09:34:49Z"), Some(1_796_204_089_000));
        assert_eq!(
            ms_from_iso("2026-12-02T10:34:49.681+01:00"),
            Some(1_796_204_089_681)
        );
        assert_eq!(
            ms_from_iso("2026-12-02T09:34:49.681123Z"),
            Some(1_796_204_089_681)
        );
        assert_eq!(ms_from_iso("1970-01-01"), Some(0));
        for bad in [
            "",
            "yesterday",
            "2026-13-01T00:00Z",
            "2026-12-02T09:34:49.Z",
            "2026-12-02Tx",
        ] {
            assert_eq!(ms_from_iso(bad), None, "{bad}");
        }
    }
}
