//! Deliveries that carry their instant (SPEC §15 P3, version 2): a `modelReply`,
//! `modelError`, `bodyResult`, `bodyPanic`, `answer` or `cancel` due after the runtime's
//! clock may name that instant in `atMs`, and the runtime first moves its clock there as
//! `advance` does when no timer of its own is due before it; the timers due at `atMs` fire
//! after the delivery is handed over. ward sends one only when the runtime's last `idle` said
//! no timer of its is due before that instant ([`NextTimer::allows`]), so one exchange does
//! what an `advance` and a delivery did, with the same trace. An instant on any other
//! message, or one before the runtime's clock, is a misuse the adapter refuses.

use serde_json::Value;

use super::{NextTimer, ToAdapter};

/// The field a delivery's instant travels in.
const AT_MS: &str = "atMs";

impl ToAdapter {
    /// Whether the message is one of ward's deliveries, which may carry their instant.
    pub fn is_delivery(&self) -> bool {
        match self {
            ToAdapter::ModelReply { .. }
            | ToAdapter::ModelError { .. }
            | ToAdapter::BodyResult { .. }
            | ToAdapter::BodyPanic { .. }
            | ToAdapter::Answer { .. }
            | ToAdapter::Cancel => true,
            ToAdapter::Hello { .. }
            | ToAdapter::Reset { .. }
            | ToAdapter::StartRun(_)
            | ToAdapter::Advance { .. }
            | ToAdapter::Crash
            | ToAdapter::Recover { .. } => false,
        }
    }
}

/// `message` as one line of the protocol, a delivery with the instant `at_ms` it is due at.
pub fn encode(message: &ToAdapter, at_ms: Option<u64>) -> Result<String, String> {
    let Some(at_ms) = at_ms else {
        return serde_json::to_string(message).map_err(|error| error.to_string());
    };
    if !message.is_delivery() {
        return Err(format!(
            "an instant on {message:?}, which is not a delivery"
        ));
    }
    let mut value = serde_json::to_value(message).map_err(|error| error.to_string())?;
    if let Value::Object(fields) = &mut value {
        fields.insert(AT_MS.to_owned(), Value::from(at_ms));
    }
    Ok(value.to_string())
}

/// One line from ward as its message and the instant it carries.
pub fn decode(line: &str) -> Result<(ToAdapter, Option<u64>), String> {
    let mut value: Value = serde_json::from_str(line).map_err(|error| error.to_string())?;
    let at = match &mut value {
        Value::Object(fields) => fields.remove(AT_MS),
        _ => None,
    };
    let message: ToAdapter = serde_json::from_value(value).map_err(|error| error.to_string())?;
    let at_ms = match at {
        None => None,
        Some(at) if !message.is_delivery() => {
            return Err(format!(
                "`{AT_MS}: {at}` on a message that is not a delivery"
            ));
        }
        Some(at) => Some(
            at.as_u64()
                .ok_or_else(|| format!("`{AT_MS}: {at}` is not an instant in ms"))?,
        ),
    };
    Ok((message, at_ms))
}

/// Whether a runtime whose last `idle` said `next` may take a delivery due at `at_ms` with
/// its instant: it speaks version 2 and no timer of its is due before then.
pub fn may_carry(protocol: u64, next: NextTimer, at_ms: u64) -> bool {
    protocol >= 2 && next.allows(at_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_carries_its_instant_both_ways() {
        let cancel = ToAdapter::Cancel;
        let line = encode(&cancel, Some(40)).expect("encodes");
        assert!(line.contains(r#""atMs":40"#), "{line}");
        assert_eq!(decode(&line), Ok((cancel.clone(), Some(40))));
        let plain = encode(&cancel, None).expect("encodes");
        assert_eq!(decode(&plain), Ok((cancel, None)));
    }

    #[test]
    fn an_instant_anywhere_else_is_refused() {
        let advance = ToAdapter::Advance { to_ms: 5 };
        assert!(encode(&advance, Some(5)).is_err());
        let refused = decode(r#"{"type":"advance","toMs":5,"atMs":5}"#).unwrap_err();
        assert!(refused.contains("not a delivery"), "{refused}");
        let refused = decode(r#"{"type":"cancel","atMs":-1}"#).unwrap_err();
        assert!(refused.contains("not an instant"), "{refused}");
        assert!(decode(r#"{"type":"bodyPanic","bodyId":"b0","atMs":1,"extra":2}"#).is_err());
    }

    #[test]
    fn only_a_timer_at_or_after_the_instant_lets_it_through() {
        assert!(may_carry(2, NextTimer::None, 10));
        assert!(may_carry(2, NextTimer::At(10), 10));
        assert!(!may_carry(2, NextTimer::At(9), 10));
        assert!(!may_carry(2, NextTimer::Unknown, 10));
        assert!(!may_carry(1, NextTimer::None, 10));
    }
}
