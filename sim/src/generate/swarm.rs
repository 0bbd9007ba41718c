//! The misbehaviours, and swarm testing: which of them a seed turns on and how often, and
//! the fixed rates of the `edge-…` ones.

use crate::rng::SimRng;

macro_rules! misbehaviours {
    ($($variant:ident = $name:literal: $doc:literal;)*) => {
        /// A way the generated model (or its world) misbehaves.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Misbehaviour {
            $(#[doc = $doc] $variant,)*
        }

        impl Misbehaviour {
            /// Every misbehaviour.
            pub const ALL: &'static [Misbehaviour] = &[$(Misbehaviour::$variant),*];

            /// Its name in reports.
            pub fn name(self) -> &'static str {
                match self { $(Misbehaviour::$variant => $name,)* }
            }
        }
    };
}

misbehaviours! {
    NotOffered = "not-offered": "calls a tool not offered: a write in a read-only run, a switched-off tool, a made-up name";
    InvalidArgs = "invalid-args": "sends arguments its schema refuses (wrong types, missing, extra, out of range)";
    ManyErrors = "many-errors": "sends arguments with six or more errors at once";
    DuplicateKeys = "duplicate-keys": "repeats a key in the argument object";
    NotJson = "not-json": "sends argument text that is not JSON";
    HugeArgs = "huge-args": "sends more than 256 KiB of arguments";
    BadIds = "bad-ids": "sends empty, repeated or over-long call ids";
    MixedBatch = "mixed-batch": "mixes sequential and parallel tools in one batch";
    OverCap = "over-cap": "sends more calls than the batch cap";
    EndlessLoop = "endless-loop": "keeps calling tools past the turn limit";
    EchoSecret = "echo-secret": "puts a configured secret into arguments";
    FollowInjection = "follow-injection": "obeys an instruction injected through a tool result";
    ProviderErrors = "provider-errors": "fails requests with provider errors";
    ProviderTimeout = "provider-timeout": "answers after the provider timeout";
    Cancel = "cancel": "the user cancels the run at some moment";
    MultiRun = "multi-run": "several runs in one session, read-only and not";
    ToolFaults = "tool-faults": "tool bodies fail, panic or leak a configured secret";
    SlowTools = "slow-tools": "tool bodies outlast the inactivity deadline";
    AskUser = "ask-user": "asks the user, who answers late or never";
    RefusalTies = "refusal-ties": "one call meets two of R3's refusals at once (a bad id, an unknown tool, a write in a read-only run, a switched-off tool, oversized or secret-carrying or invalid arguments)";
    SecretsEverywhere = "secrets-everywhere": "a configured value, a fragment of one or 7 of its characters at the start or end of a call id, a tool name, an argument key or the reply's text, or as the whole of it";
    NestedSecrets = "nested-secrets": "plants secrets inside and across one another (a key as a credential or URL password, a configured value in a key or a user name, a value across a span's end)";
    EdgeErrors = "edge-errors": "an input with 4, 5 or 6 errors (the cap of 5, ± 1), flat or nested in an array's objects";
    EdgePayload = "edge-payload": "argument text of 256 KiB − 1, 256 KiB or 256 KiB + 1 bytes, padded with spaces or with two-byte characters (far fewer characters than bytes)";
    EdgeId = "edge-id": "a call id of 159, 160 or 161 characters";
    EdgeBatch = "edge-batch": "a batch of cap − 1, cap or cap + 1 calls";
    EdgeTurns = "edge-turns": "calls tools for the turn limit − 1, the limit or the limit + 1 turns";
    EdgeDeadline = "edge-deadline": "a tool that ends the inactivity timeout − 1, exactly or + 1 ms after the last activity, which may come 1 ms before the deadline";
    EdgeProviderTimeout = "edge-provider-timeout": "answers at the provider timeout − 1, exactly or + 1 ms";
    EdgeRetries = "edge-retries": "as many retryable errors in a row as retries allow, or one more; retry-after at 60 s ± 1 ms";
    EdgeSecrets = "edge-secrets": "a configured value of 7 or 8 characters (8 is the shortest); arguments echoing 7, 8 or 9 characters of one";
    EdgeKeys = "edge-keys": "a key of each R26 family at its rule's minimum length (12 after sk-), or an authorization value at each of R25's thresholds, in and out of header context, with an invisible character inside (R28)";
    EdgeBounds = "edge-bounds": "every keyword of the schema at its bound or one past it, at any depth and at several depths at once; lengths in one-, two- or four-byte characters";
    EdgeLimits = "edge-limits": "a limit at its range's bound − 1, the bound or the bound + 1 (out of range: refused at start)";
}

/// How often, per thousand decision points, an `edge-…` misbehaviour fires: 5 %, but 1 % for
/// batches at the cap (each adds about 32 calls) and 0.1 % for 256 KiB payloads, which cost a
/// campaign most (at 1 % they halved its throughput: callgrind, seeds 0..500).
pub const EDGE_PER_MILLE: u64 = 50;

impl Misbehaviour {
    /// Whether it puts a limit at its edge (fired at a fixed rate, not drawn by the swarm).
    pub fn is_edge(self) -> bool {
        self.name().starts_with("edge-")
    }

    /// The fixed rate of an edge, per thousand decision points.
    pub(super) fn edge_per_mille(self) -> u64 {
        match self {
            Misbehaviour::EdgePayload => 1,
            Misbehaviour::EdgeBatch => 10,
            _ => EDGE_PER_MILLE,
        }
    }
}

/// Which misbehaviours a seed turns on, and how often each fires (percent per decision
/// point; 0 is off).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Swarm {
    /// Rate per misbehaviour, in [`Misbehaviour::ALL`] order.
    rates: Vec<u64>,
}

impl Swarm {
    /// The swarm of a seed: each misbehaviour that is not an edge is on with even odds, at one
    /// of four rates.
    pub(super) fn draw(rng: &mut SimRng) -> Swarm {
        let rates = Misbehaviour::ALL
            .iter()
            .map(|misbehaviour| {
                if misbehaviour.is_edge() {
                    0
                } else if rng.percent(50) {
                    *rng.pick(&[8, 20, 40, 70])
                } else {
                    0
                }
            })
            .collect();
        Swarm { rates }
    }

    /// The rate of `misbehaviour`, percent per decision point (0: off).
    pub(super) fn rate(&self, misbehaviour: Misbehaviour) -> u64 {
        self.rates[misbehaviour as usize]
    }
}
