//! The wording R6 and R7 give input errors, as the oracle reads them (I4): three tables of
//! data, each row two cells written as the core's validation docs write them
//! (`core/src/validation/mod.rs`), so that a test compares them row for row with the core's
//! and fails when the two differ. A message is a code span of a row's second cell: `{n}` is
//! the bound as the schema writes it (JSON), `{s}` is `s` unless the bound is 1, `{y}` is `y`
//! when it is 1 and `ies` otherwise; a list joins the schema's values with `, `, a string
//! written bare, anything else as JSON. A span that does not start a sentence (`a number`)
//! reads after `must be`.

/// The structural keywords, in the order their errors at one path come (the documented order).
pub(crate) const STRUCTURAL: &[(&str, &str)] = &[
    (
        "`type`",
        "`must be a string`, `a number`, `an integer`, `a boolean`, `an object`, `an array`, `null`",
    ),
    ("`const`", "`must be {value}`"),
    ("`enum`", "`must be one of: {values}` (1 to 16 values)"),
    ("`minLength`", "`must be at least {n} character{s} long`"),
    ("`maxLength`", "`must be at most {n} character{s} long`"),
    ("`pattern`", "`must match the pattern {pattern}`"),
    ("`minimum`", "`must be at least {n}`"),
    ("`exclusiveMinimum`", "`must be greater than {n}`"),
    ("`maximum`", "`must be at most {n}`"),
    ("`exclusiveMaximum`", "`must be less than {n}`"),
    ("`minItems`", "`must have at least {n} item{s}`"),
    ("`maxItems`", "`must have at most {n} item{s}`"),
    ("`uniqueItems`", "`must not contain duplicate items`"),
    ("`minProperties`", "`must have at least {n} propert{y}`"),
    ("`maxProperties`", "`must have at most {n} propert{y}`"),
    ("`required`", "`missing required property '{name}'`"),
    ("`additionalProperties`", "`is not an allowed property`"),
];

/// Every other keyword, whose messages are not predicted but must be one of these (a list of keywords: every one of them; a placeholder: anything).
pub(crate) const OTHER: &[(&str, &str)] = &[
    ("`type` (several)", "`must be one of the types: {types}`"),
    ("`enum` (no value)", "`is not allowed`"),
    (
        "`enum` (more than 16)",
        "`must be one of the allowed values`",
    ),
    ("`format`", "`must be a valid {format}`"),
    ("`multipleOf`", "`must be a multiple of {n}`"),
    ("`required` (not a name)", "`missing a required property`"),
    (
        "`anyOf`, `oneOf` (none)",
        "`must match one of the allowed forms`",
    ),
    (
        "`oneOf` (several)",
        "`must match exactly one of the allowed forms`",
    ),
    ("`not`", "`must not match the excluded form`"),
    ("`false`", "`is not allowed`"),
    ("`contains`", "`must contain at least one matching item`"),
    (
        "`propertyNames`",
        "`has a property name that is not allowed`",
    ),
    ("`additionalItems`", "`must have at most {n} item{s}`"),
    (
        "`unevaluatedItems`",
        "`must have no items beyond those the schema allows`",
    ),
    ("`unevaluatedProperties`", "`is not an allowed property`"),
    ("`contentEncoding`", "`must be encoded as {encoding}`"),
    ("`contentMediaType`", "`must be valid {media type} content`"),
    ("`contentEncoding` (text)", "`must decode to UTF-8 text`"),
    ("a custom keyword", "`must satisfy the keyword {keyword}`"),
    (
        "`pattern` (not checkable)",
        "`could not be checked against the pattern`",
    ),
    (
        "`$ref` (not resolvable)",
        "`could not be checked: a reference of the schema does not resolve`",
    ),
];

/// The parser's reasons: the syntax errors `serde_json` reports, and when.
pub(crate) const REASONS: &[(&str, &str)] = &[
    (
        "`EOF while parsing a list`",
        "the text ends inside an array",
    ),
    (
        "`EOF while parsing an object`",
        "the text ends inside an object",
    ),
    (
        "`EOF while parsing a string`",
        "the text ends inside a string",
    ),
    (
        "`EOF while parsing a value`",
        "the text ends where a value should start",
    ),
    ("`` expected `:` ``", "a key is not followed by a colon"),
    (
        "`` expected `,` or `]` ``",
        "an item is not followed by a comma or the array's end",
    ),
    (
        "`` expected `,` or `}` ``",
        "a member is not followed by a comma or the object's end",
    ),
    (
        "`expected ident`",
        "a word other than `true`, `false` or `null`",
    ),
    ("`expected value`", "something that starts no value"),
    (
        r#"`` expected `"` ``"#,
        "a key that does not start with a quote",
    ),
    ("`invalid escape`", "a backslash that starts no escape"),
    ("`invalid number`", "a number that does not read as one"),
    (
        "`number out of range`",
        "a number too large for a 64-bit float",
    ),
    (
        "`invalid unicode code point`",
        r#"a `\u` escape that names no code point"#,
    ),
    (
        "`unexpected end of hex escape`",
        r#"a `\u` escape of fewer than four digits"#,
    ),
    (
        "`lone leading surrogate in hex escape`",
        r#"a `\u` high surrogate without its low one"#,
    ),
    (
        r#"`control character (\u0000-\u001F) found while parsing a string`"#,
        "a raw control character in a string",
    ),
    ("`key must be a string`", "a key that is not a string"),
    ("`trailing comma`", "a comma before `]` or `}`"),
    ("`trailing characters`", "text after the value"),
    (
        "`recursion limit exceeded`",
        "more than 128 nested arrays and objects",
    ),
];
