//! Civil dates and the synthetic trading calendar of the chart domain (SPEC §8).
//!
//! Dates are proleptic Gregorian, written `YYYY-MM-DD`. Trading days are the weekdays of the
//! loaded range; intraday sessions run 09:30–11:30 and 13:00–15:00 (240 one-minute bars).
//! Nothing here reads the wall clock: the calendar is fixed, so every chart is reproducible.

use std::fmt;

/// A calendar date.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    /// Days since 1970-01-01 (negative before).
    days: i64,
}

/// The first day of the loaded range.
pub const FIRST_TRADING_DAY: Date = Date::from_ymd_const(2024, 1, 2);
/// The last day of the loaded range.
pub const LAST_TRADING_DAY: Date = Date::from_ymd_const(2025, 12, 31);

/// Minutes of one trading session day.
pub const SESSION_MINUTES: u32 = 240;

impl Date {
    const fn from_ymd_const(year: i64, month: u32, day: u32) -> Date {
        // Days from civil, after the well-known era-based derivation (400-year cycles).
        let year = if month <= 2 { year - 1 } else { year };
        let era = if year >= 0 { year } else { year - 399 } / 400;
        let year_of_era = year - era * 400;
        let month_index = if month > 2 { month - 3 } else { month + 9 } as i64;
        let day_of_year = (153 * month_index + 2) / 5 + day as i64 - 1;
        let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
        Date {
            days: era * 146_097 + day_of_era - 719_468,
        }
    }

    /// The date of `year-month-day`, or `None` when no such day exists.
    pub fn from_ymd(year: i64, month: u32, day: u32) -> Option<Date> {
        if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
            return None;
        }
        Some(Date::from_ymd_const(year, month, day))
    }

    /// Parses `YYYY-MM-DD`; `None` for any other shape or an impossible day.
    pub fn parse(text: &str) -> Option<Date> {
        let bytes = text.as_bytes();
        if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
            return None;
        }
        let number = |range: std::ops::Range<usize>| -> Option<u32> {
            let digits = &text[range];
            digits
                .bytes()
                .all(|byte| byte.is_ascii_digit())
                .then(|| digits.parse().ok())?
        };
        Date::from_ymd(i64::from(number(0..4)?), number(5..7)?, number(8..10)?)
    }

    /// (year, month, day).
    pub fn ymd(self) -> (i64, u32, u32) {
        let z = self.days + 719_468;
        let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
        let day_of_era = z - era * 146_097;
        let year_of_era =
            (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
        let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
        let month_index = (5 * day_of_year + 2) / 153;
        let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
        let month = if month_index < 10 {
            month_index + 3
        } else {
            month_index - 9
        } as u32;
        let year = year_of_era + era * 400 + i64::from(month <= 2);
        (year, month, day)
    }

    /// Monday is 0, Sunday 6.
    pub fn weekday(self) -> u32 {
        // 1970-01-01 was a Thursday (3).
        (self.days + 3).rem_euclid(7) as u32
    }

    /// Whether the date is a weekday.
    pub fn is_weekday(self) -> bool {
        self.weekday() < 5
    }

    /// The day `count` days later (earlier when negative).
    pub const fn add_days(self, count: i64) -> Date {
        Date {
            days: self.days + count,
        }
    }

    /// Days since 1970-01-01 (negative before).
    pub fn days_since_epoch(self) -> i64 {
        self.days
    }

    /// Whether the date is a trading day of the loaded range.
    pub fn is_trading_day(self) -> bool {
        self.is_weekday() && (FIRST_TRADING_DAY..=LAST_TRADING_DAY).contains(&self)
    }
}

impl Date {
    /// `YYYY-MM-DD`, appended to `text` (years 0–9999; the calendar holds nothing else).
    pub fn push_to(self, text: &mut String) {
        let (year, month, day) = self.ymd();
        let year = year.clamp(0, 9999) as u32;
        push_digits(text, year, 4);
        text.push('-');
        push_digits(text, month, 2);
        text.push('-');
        push_digits(text, day, 2);
    }
}

/// Appends `value` as exactly `width` decimal digits (bars are formatted by the thousand;
/// this skips the formatting machinery).
fn push_digits(text: &mut String, value: u32, width: u32) {
    for position in (0..width).rev() {
        let digit = value / 10u32.pow(position) % 10;
        text.push(char::from(b'0' + digit as u8));
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = String::with_capacity(10);
        self.push_to(&mut text);
        f.write_str(&text)
    }
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The trading days of the loaded range, oldest first.
pub fn trading_days() -> impl DoubleEndedIterator<Item = Date> {
    let span = LAST_TRADING_DAY.days - FIRST_TRADING_DAY.days;
    (0..=span)
        .map(|offset| FIRST_TRADING_DAY.add_days(offset))
        .filter(|date| date.is_weekday())
}

/// The `HH:MM` end time of session minute `index` (0–239): 09:31 … 11:30, 13:01 … 15:00.
pub fn session_minute(index: u32) -> String {
    let mut text = String::with_capacity(5);
    push_session_minute(&mut text, index);
    text
}

/// [`session_minute`], appended to `text`.
pub fn push_session_minute(text: &mut String, index: u32) {
    let minute_of_day = if index < 120 {
        9 * 60 + 31 + index
    } else {
        13 * 60 + 1 + (index - 120)
    };
    push_digits(text, minute_of_day / 60, 2);
    text.push(':');
    push_digits(text, minute_of_day % 60, 2);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip_and_know_their_weekday() {
        let date = Date::parse("2024-02-29").unwrap();
        assert_eq!(date.to_string(), "2024-02-29");
        assert_eq!(date.weekday(), 3, "2024-02-29 was a Thursday");
        assert_eq!(Date::parse("1970-01-01").unwrap().weekday(), 3);
        assert!(Date::parse("2023-02-29").is_none());
        assert!(Date::parse("2024-13-01").is_none());
        assert!(Date::parse("2024-1-01").is_none());
        assert!(Date::parse("+024-01-01").is_none());
        for offset in -1000..1000 {
            let date = FIRST_TRADING_DAY.add_days(offset);
            assert_eq!(Date::parse(&date.to_string()), Some(date));
        }
    }

    #[test]
    fn the_calendar_holds_weekdays_of_the_loaded_range() {
        let days: Vec<Date> = trading_days().collect();
        assert_eq!(days.first(), Some(&FIRST_TRADING_DAY));
        assert_eq!(days.last(), Some(&LAST_TRADING_DAY));
        assert!(days.iter().all(|day| day.is_weekday()));
        assert_eq!(days.len(), 522);
        assert_eq!(session_minute(0), "09:31");
        assert_eq!(session_minute(119), "11:30");
        assert_eq!(session_minute(120), "13:01");
        assert_eq!(session_minute(239), "15:00");
    }
}
