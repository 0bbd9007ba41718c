//! Input validation (SPEC §3, R5–R8).
//!
//! Every tool's `parameters` schema is compiled once, at registration, into a
//! [`ToolSchema`]: the `jsonschema` validator for the whole schema (the verdict), plus a tree
//! of validators for its object and array sub-schemas (the bounded error walk of R8).
//!
//! # Parsing (R6)
//!
//! [`parse_arguments`] turns the raw argument text into a [`Value`](serde_json::Value): empty or all-white-space
//! text means `{}`; text that is not JSON gives one error at `/` with the parser's line and
//! column; an object that repeats a key gives one error at that object's path (parsers
//! disagree on which value wins, so ward refuses to guess). A key is named as repeated only in
//! text that is JSON all through: text that repeats a key and further on stops being JSON is
//! text that is not JSON.
//!
//! Text that is not JSON reads `is not valid JSON: <reason> (line L, column C)`, the reason
//! being `serde_json`'s for its syntax error, which describes the grammar, never the text:
//!
//! <!-- wording: reasons -->
//! | reason | `serde_json`'s error code |
//! |---|---|
//! | `EOF while parsing a list` | `EofWhileParsingList` |
//! | `EOF while parsing an object` | `EofWhileParsingObject` |
//! | `EOF while parsing a string` | `EofWhileParsingString` |
//! | `EOF while parsing a value` | `EofWhileParsingValue` |
//! | `` expected `:` `` | `ExpectedColon` |
//! | `` expected `,` or `]` `` | `ExpectedListCommaOrEnd` |
//! | `` expected `,` or `}` `` | `ExpectedObjectCommaOrEnd` |
//! | `expected ident` | `ExpectedSomeIdent` |
//! | `expected value` | `ExpectedSomeValue` |
//! | `` expected `"` `` | `ExpectedDoubleQuote` |
//! | `invalid escape` | `InvalidEscape` |
//! | `invalid number` | `InvalidNumber` |
//! | `number out of range` | `NumberOutOfRange` |
//! | `invalid unicode code point` | `InvalidUnicodeCodePoint` |
//! | `unexpected end of hex escape` | `UnexpectedEndOfHexEscape` |
//! | `lone leading surrogate in hex escape` | `LoneLeadingSurrogateInHexEscape` |
//! | `control character (\u0000-\u001F) found while parsing a string` | `ControlCharacterWhileParsingString` |
//! | `key must be a string` | `KeyMustBeAString` |
//! | `trailing comma` | `TrailingComma` |
//! | `trailing characters` | `TrailingCharacters` |
//! | `recursion limit exceeded` | `RecursionLimitExceeded` |
//! <!-- wording: end reasons -->
//!
//! # Verdict and errors (R6–R8)
//!
//! The verdict is always `jsonschema`'s `is_valid` on the whole schema. Only an invalid input
//! pays for error reporting, and only for the first [`FIELD_ERRORS_MAX`] errors: the walk
//! skips every sub-tree whose own validator says it is valid and stops at the limit, so a
//! 100,000-element array with an error in every element costs five element checks, not
//! 100,000 error records (the crate's `iter_errors` collects everything before returning).
//!
//! # The documented order
//!
//! Errors come in a fixed order over the input: its values are visited in pre-order
//! (object members in key order, byte-wise, as parsed objects keep them; array items by
//! index); at each value, its own
//! errors come first, ranked by keyword (`type`, `const`, `enum`, string bounds and
//! `pattern`, number bounds, array bounds, object bounds, then missing `required` properties
//! in the schema's order); an unexpected property is reported at `/<key>` where that key
//! stands among its siblings. [`ToolSchema::all_errors`] produces the complete list in this
//! order from `iter_errors` (an unbounded baseline for tests and benches); the bounded walk
//! returns exactly its first five.
//!
//! # Messages (R7)
//!
//! ward writes every message from the error kind and the schema: `must be a string`,
//! `must be at most 798`, `must be one of: daily, weekly`, `missing required property
//! 'symbol'`. No message quotes a value taken from the input; object keys from the input
//! appear only in paths. The structural keywords' messages, in the documented order, where
//! `{n}` is the bound as the schema writes it (JSON), `{s}` is `s` unless the bound is 1, `{y}`
//! is `y` when it is 1 and `ies` otherwise, and a list joins the schema's values with `, `
//! (a string bare, anything else as JSON):
//!
//! <!-- wording: begin -->
//! | keyword | message |
//! |---|---|
//! | `type` | `must be a string`, `a number`, `an integer`, `a boolean`, `an object`, `an array`, `null` |
//! | `const` | `must be {value}` |
//! | `enum` | `must be one of: {values}` (1 to 16 values) |
//! | `minLength` | `must be at least {n} character{s} long` |
//! | `maxLength` | `must be at most {n} character{s} long` |
//! | `pattern` | `must match the pattern {pattern}` |
//! | `minimum` | `must be at least {n}` |
//! | `exclusiveMinimum` | `must be greater than {n}` |
//! | `maximum` | `must be at most {n}` |
//! | `exclusiveMaximum` | `must be less than {n}` |
//! | `minItems` | `must have at least {n} item{s}` |
//! | `maxItems` | `must have at most {n} item{s}` |
//! | `uniqueItems` | `must not contain duplicate items` |
//! | `minProperties` | `must have at least {n} propert{y}` |
//! | `maxProperties` | `must have at most {n} propert{y}` |
//! | `required` | `missing required property '{name}'` |
//! | `additionalProperties` | `is not an allowed property` |
//! <!-- wording: end -->
//!
//! `format` ranks between `pattern` and `minimum`, `multipleOf` after `exclusiveMaximum`. The
//! other messages (a list of keywords: every one of them; a placeholder: anything):
//!
//! <!-- wording: other -->
//! | keyword | message |
//! |---|---|
//! | `type` (several) | `must be one of the types: {types}` |
//! | `enum` (no value) | `is not allowed` |
//! | `enum` (more than 16) | `must be one of the allowed values` |
//! | `format` | `must be a valid {format}` |
//! | `multipleOf` | `must be a multiple of {n}` |
//! | `required` (not a name) | `missing a required property` |
//! | `anyOf`, `oneOf` (none) | `must match one of the allowed forms` |
//! | `oneOf` (several) | `must match exactly one of the allowed forms` |
//! | `not` | `must not match the excluded form` |
//! | `false` | `is not allowed` |
//! | `contains` | `must contain at least one matching item` |
//! | `propertyNames` | `has a property name that is not allowed` |
//! | `additionalItems` | `must have at most {n} item{s}` |
//! | `unevaluatedItems` | `must have no items beyond those the schema allows` |
//! | `unevaluatedProperties` | `is not an allowed property` |
//! | `contentEncoding` | `must be encoded as {encoding}` |
//! | `contentMediaType` | `must be valid {media type} content` |
//! | `contentEncoding` (text) | `must decode to UTF-8 text` |
//! | a custom keyword | `must satisfy the keyword {keyword}` |
//! | `pattern` (not checkable) | `could not be checked against the pattern` |
//! | `$ref` (not resolvable) | `could not be checked: a reference of the schema does not resolve` |
//! <!-- wording: end other -->
//!
//! The simulator's I4 oracle carries the same tables, written on its own, and predicts every
//! error list of the structural keywords from the first: a change here without it is a
//! violation.
//!
//! Sub-schemas that use keywords outside the structural set this walk understands
//! (`anyOf`, `oneOf`, `allOf`, `not`, `if`, `patternProperties`, tuple `items`, …)
//! are treated as leaves: their errors come from `iter_errors` on that sub-tree alone,
//! sorted into the same order. ward's own tool schemas use none of them.
//!
//! # Any schema (R8a)
//!
//! Runtime developers register schemas of their own, often without `$schema` (TypeBox and Zod
//! emit none). [`ToolSchema::compile`] reads such a schema as draft 2020-12;
//! [`ToolSchema::compile_as`] names the draft to assume instead (`$schema` still wins).
//!
//! - **References.** A sub-schema compiled on its own loses the document around it, so a
//!   `$ref` inside it (`#/properties/foo`, `#`, an anchor, a `$defs` entry, a `$dynamicRef`)
//!   would resolve against the wrong root. A document that holds a reference keyword
//!   anywhere is therefore never split: its whole schema is one leaf, and its errors come
//!   from `iter_errors` of the whole document, where every reference resolves as it does
//!   for the verdict.
//! - **Remote documents.** ward never fetches a document (R5: no network). A schema whose
//!   reference needs one is refused at registration with an error naming the document.
//! - **Messages.** Every error kind of the validator has a message that states its rule
//!   (`unevaluatedProperties` and `additionalProperties` name the key in the path,
//!   `additionalItems` and `unevaluatedItems` the extra item, `dependentRequired` the missing
//!   property, `contains` the rule, `propertyNames` the key); the match over kinds is
//!   exhaustive, so a new kind cannot fall back to a generic message unnoticed.
//!
//! # Files
//!
//! | file | what it holds |
//! |---|---|
//! | `parse.rs` | the argument text to a [`Value`](serde_json::Value) (R6): empty text, parser errors, repeated keys |
//! | `schema.rs` | [`ToolSchema`]: compiling (R2, R8a), the verdict and the bounded walk (R6, R8) |
//! | `messages.rs` | the documented order's keyword ranks and every message (R7) |
//! | `tests.rs` | the unit tests |

mod messages;
mod parse;
mod schema;
#[cfg(test)]
mod tests;

pub use parse::{parse_arguments, push_pointer_segment};
pub use schema::ToolSchema;

/// At most this many field errors go back to the model (R6).
pub const FIELD_ERRORS_MAX: usize = 5;

/// The largest argument text accepted, in bytes (R3, `PAYLOAD_TOO_LARGE`).
pub const ARGUMENT_BYTES_MAX: usize = 256 * 1024;

/// The JSON Schema draft a schema without `$schema` is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Draft {
    /// Draft 7 (`http://json-schema.org/draft-07/schema#`).
    Draft7,
    /// Draft 2020-12 (`https://json-schema.org/draft/2020-12/schema`), the default.
    #[default]
    Draft202012,
}

impl Draft {
    fn engine(self) -> jsonschema::Draft {
        match self {
            Draft::Draft7 => jsonschema::Draft::Draft7,
            Draft::Draft202012 => jsonschema::Draft::Draft202012,
        }
    }
}

/// A schema that cannot be compiled (R2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the parameters schema does not compile: {reason}")]
pub struct SchemaError {
    /// What the compiler said.
    pub reason: String,
}
