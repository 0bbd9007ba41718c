//! The named rules of the redactor (R24–R27) and sets of them.
//!
//! Every candidate span records which rule found it, so `ward redact --stats` can count
//! per rule and a merged span knows which placeholder it becomes (R29): `[LOCAL_PATH]` when
//! only [`Rule::HomePath`] took part, `[REDACTED]` as soon as any secret rule did. The names
//! are stable kebab-case strings; R28 (invisible format characters) is not a rule of its own
//! but a property of how every rule reads its input (see [`crate::redact`]).

use std::fmt;

use super::{LOCAL_PATH, REDACTED};

/// One redaction rule.
///
/// ```
/// use ward_core::redact::Rule;
///
/// assert_eq!(Rule::SkKey.name(), "sk-key");
/// assert_eq!(Rule::from_name("home-path"), Some(Rule::HomePath));
/// assert!(Rule::Jwt.is_secret());
/// assert!(!Rule::HomePath.is_secret());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// R24: an occurrence of a configured secret value.
    ExactValue,
    /// R25: a `Bearer`/`Basic` scheme word and its credential.
    AuthValue,
    /// R26: an `sk-` or `sk_` key.
    SkKey,
    /// R26: a GitHub token (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`).
    GithubToken,
    /// R26: an AWS access key id (`AKIA…`, `ASIA…`).
    AwsKeyId,
    /// R26: a Slack token (`xoxb-…`, `xoxp-…`, …).
    SlackToken,
    /// R26: a JSON Web Token (`eyJ….eyJ….…`).
    Jwt,
    /// R26: a PEM private key block.
    PemPrivateKey,
    /// R26: the password of a URL's userinfo (`scheme://user:PASSWORD@host`).
    UrlPassword,
    /// R27: the user part of a home directory path.
    HomePath,
}

impl Rule {
    /// Every rule, in the fixed order used for statistics.
    pub const ALL: [Rule; 10] = [
        Rule::ExactValue,
        Rule::AuthValue,
        Rule::SkKey,
        Rule::GithubToken,
        Rule::AwsKeyId,
        Rule::SlackToken,
        Rule::Jwt,
        Rule::PemPrivateKey,
        Rule::UrlPassword,
        Rule::HomePath,
    ];

    /// The number of rules.
    pub const COUNT: usize = Rule::ALL.len();

    /// The rule's stable kebab-case name.
    pub const fn name(self) -> &'static str {
        match self {
            Rule::ExactValue => "exact-value",
            Rule::AuthValue => "auth-value",
            Rule::SkKey => "sk-key",
            Rule::GithubToken => "github-token",
            Rule::AwsKeyId => "aws-key-id",
            Rule::SlackToken => "slack-token",
            Rule::Jwt => "jwt",
            Rule::PemPrivateKey => "pem-private-key",
            Rule::UrlPassword => "url-password",
            Rule::HomePath => "home-path",
        }
    }

    /// The rule of a name, if there is one.
    pub fn from_name(name: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|rule| rule.name() == name)
    }

    /// Whether the rule finds secrets (`[REDACTED]`) rather than local paths (`[LOCAL_PATH]`).
    pub const fn is_secret(self) -> bool {
        !matches!(self, Rule::HomePath)
    }

    /// The rule's position in [`Rule::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    const fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// A set of rules: the rules whose candidates formed one merged span.
///
/// ```
/// use ward_core::redact::{Rule, RuleSet};
///
/// let mut rules = RuleSet::single(Rule::HomePath);
/// assert_eq!(rules.placeholder(), "[LOCAL_PATH]");
/// rules.insert(Rule::ExactValue);
/// assert_eq!(rules.placeholder(), "[REDACTED]");
/// assert_eq!(rules.iter().collect::<Vec<_>>(), [Rule::ExactValue, Rule::HomePath]);
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RuleSet(u16);

impl RuleSet {
    /// The empty set.
    pub const EMPTY: RuleSet = RuleSet(0);

    /// The set holding one rule.
    pub const fn single(rule: Rule) -> RuleSet {
        RuleSet(rule.bit())
    }

    /// Adds a rule.
    pub fn insert(&mut self, rule: Rule) {
        self.0 |= rule.bit();
    }

    /// The union of two sets.
    pub const fn union(self, other: RuleSet) -> RuleSet {
        RuleSet(self.0 | other.0)
    }

    /// Whether the set holds `rule`.
    pub const fn contains(self, rule: Rule) -> bool {
        self.0 & rule.bit() != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether any secret rule is in the set.
    pub const fn has_secret(self) -> bool {
        self.0 & !Rule::HomePath.bit() != 0
    }

    /// The placeholder a merged span of these rules becomes (R29).
    pub const fn placeholder(self) -> &'static str {
        if self.has_secret() {
            REDACTED
        } else {
            LOCAL_PATH
        }
    }

    /// The rules of the set, in [`Rule::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Rule> {
        Rule::ALL
            .into_iter()
            .filter(move |rule| self.contains(*rule))
    }
}

impl fmt::Debug for RuleSet {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_set()
            .entries(self.iter().map(Rule::name))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        let mut names: Vec<_> = Rule::ALL.iter().map(|rule| rule.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Rule::COUNT);
        for (index, rule) in Rule::ALL.into_iter().enumerate() {
            assert_eq!(Rule::from_name(rule.name()), Some(rule));
            assert_eq!(rule.index(), index);
        }
        assert_eq!(Rule::from_name("bearer"), None);
    }
}
