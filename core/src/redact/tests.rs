//! Positive and negative examples for every rule and hardening (fake values only).

use std::borrow::Cow;

use super::*;

fn redactor() -> Redactor {
    Redactor::new(["provider-key-0123456789", "search-key-abcdefghij"]).expect("valid secrets")
}

#[track_caller]
fn redacts(input: &str, expected: &str) {
    assert_eq!(redactor().redact(input), expected, "input {input:?}");
}

#[track_caller]
fn keeps(input: &str) {
    let output = redactor().redact(input);
    assert!(
        matches!(output, Cow::Borrowed(_)),
        "input {input:?} became {output:?}"
    );
}

#[test]
fn the_issue_examples() {
    redacts(
        "Authorization: Bearer abc$def;x\n",
        "Authorization: [REDACTED];x\n",
    );
    keeps("Explain the basic concepts\n");
    assert!(matches!(
        Redactor::new(["abc"]),
        Err(RedactError::SecretTooShort { .. })
    ));
}

#[test]
fn exact_values_r24() {
    redacts("use provider-key-0123456789 now", "use [REDACTED] now");
    redacts(
        "provider-key-0123456789provider-key-0123456789",
        "[REDACTED]",
    );
    // A value partly inside another rule's span is still covered entirely.
    redacts(
        "sk-abcdefghijklmnop search-key-abcdefghij",
        "[REDACTED] [REDACTED]",
    );
    redacts("/home/search-key-abcdefghij/x", "[REDACTED]/x");
    // The value goes; `Bearer` before a plain word stays (R25).
    redacts("Bearer search-key-abcdefghij", "Bearer [REDACTED]");
    // A value with an invisible character inside it is still found.
    redacts("provider-key-01234\u{200B}56789", "[REDACTED]");
    keeps("provider-key-012345678 is close but not equal");
    keeps("provider-key-01234");
}

#[test]
fn values_touching_patterns_leave_no_fragment() {
    let redactor = Redactor::new(["zzzzzzzx"]).expect("valid");
    // The key after the value is still a key: the value's last letter becomes `]`.
    assert_eq!(redactor.redact("zzzzzzzxsk-abcdefghijklmnop"), "[REDACTED]");
    assert_eq!(redactor.redact("zzzzzzzxBearer abcdefgh1"), "[REDACTED]");
    assert_eq!(
        redactor.redact("zzzzzzzxeyJhbGciOiJI.eyJzdWIiOiIx.sig"),
        "[REDACTED]"
    );
    let overlapping = Redactor::new(["abcdefgh12", "gh12345678", "5678-tail"]).expect("valid");
    assert_eq!(
        overlapping.redact("<abcdefgh12345678-tail>"),
        "<[REDACTED]>"
    );
}

#[test]
fn authorization_values_r25() {
    redacts(
        "curl -H 'Authorization: Bearer eyJabc.def'",
        "curl -H 'Authorization: [REDACTED]'",
    );
    redacts(
        "authorization=basic dXNlcjpwYXNz",
        "authorization=[REDACTED]",
    );
    redacts(
        r#"{"Authorization": "Bearer abc"}"#,
        r#"{"Authorization": "[REDACTED]"}"#,
    );
    redacts(
        r#"{"proxy-authorization":"Basic abc"}"#,
        r#"{"proxy-authorization":"[REDACTED]"}"#,
    );
    redacts(
        "headers['Authorization'] = 'Bearer short'",
        "headers['Authorization'] = '[REDACTED]'",
    );
    redacts("token: Bearer abcdefg1, next", "token: [REDACTED], next");
    redacts("BEARER abc.defg1", "[REDACTED]");
    // Without header context: no line break, and plain words are never credentials.
    keeps("BEARER abc.defgh");
    keeps("Set up and run a basic single-threaded spawner loop");
    keeps("//! Basic number distributions");
    keeps("basic mips/mipsel support");
    keeps("other than basic\n(i.e. digest)");
    keeps("a bearer\nabcdefgh12345 token");
    redacts(
        "Authorization: Bearer\r\n  abcdefgh",
        "Authorization: [REDACTED]",
    );
    keeps("Authorization: Bearer\n\nabcdefgh");
    redacts("use basic dXNlcjpwYXNzMQ== here", "use [REDACTED] here");
    redacts("use bearer dG9rZW4= here", "use [REDACTED] here");
    redacts("bEaReR\u{3000}abcdefghij-klmnop_qrstu)", "[REDACTED])");
    keeps("bEaReR\u{3000}abcdefghijklmnopqrstu)");
    redacts("use Bearer 12345678 there", "use [REDACTED] there");
    redacts("(Bearer abc~defg1)", "([REDACTED])");
    keeps("(Bearer abc~defgh)");
    redacts(
        "Bearer x-proxy-authorization=bearer aA!*aaaaaaa0aA ok",
        "[REDACTED] ok",
    );
    redacts("Bearer abc123de\u{201D} said", "[REDACTED]\u{201D} said");
    // Ordinary words after the scheme stay.
    keeps("Explain the basic concepts");
    keeps("Explain the basic concepts. The bearer duplicates...");
    keeps("Bearer abcd.efgh.");
    redacts("Bearer abcd.efg1.", "[REDACTED]");
    redacts("Bearer abcdefgh1.", "[REDACTED]");
    keeps("Bearer bonds and basic shares");
    keeps("The bearer instrument pays basic interest; basic: yes");
    keeps("Basic abc123");
    keeps("BasicAuth abcdefgh1");
    keeps("xBearer abcdefgh1");
    keeps("Bearer");
    keeps("Authorization: Bearer");
    keeps("Authorization: Bearer \"");
}

#[test]
fn sk_keys_r26() {
    redacts("key sk-abcdefghijk-", "key [REDACTED]");
    redacts("sk-proj-abcdefghijklmnop end", "[REDACTED] end");
    redacts("sk-ant-api03-abcdefghijklmnop_XYZ", "[REDACTED]");
    redacts("STRIPE=sk_live_abcdefghijklmnop", "STRIPE=[REDACTED]");
    redacts("é sk-abcdefghijkl", "é [REDACTED]");
    redacts("sk-sk-sk-sk-sk-sk-", "[REDACTED]");
    keeps("task-management and risk-adjusted-return-on-capital");
    keeps("sk-abcdefghijk");
    keeps("Sk-abcdefghijklmnop");
    keeps("ask-abcdefghijklmnop");
}

#[test]
fn extended_token_families_r26() {
    redacts(
        "gh auth ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "gh auth [REDACTED]",
    );
    redacts(
        "github_pat_11ABCDEFG0abcdefghijklmn_opqrstuvwxyz",
        "[REDACTED]",
    );
    redacts("id AKIAIOSFODNN7EXAMPLE!", "id [REDACTED]!");
    redacts("xoxb-123456789012-abcdefghijkl", "[REDACTED]");
    redacts(
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl.",
        "jwt [REDACTED].",
    );
    redacts(
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n+/def==\n-----END RSA PRIVATE KEY-----\nafter",
        "[REDACTED]\nafter",
    );
    redacts(
        "-----BEGIN PRIVATE KEY-----\\nMIIEabc\\nxyz== thanks",
        "[REDACTED] thanks",
    );
    redacts(
        "postgres://admin:p4ss@w0rd@db.local:5432/x",
        "postgres://admin:[REDACTED]@db.local:5432/x",
    );
    redacts("redis://:hunter2pw@cache", "redis://:[REDACTED]@cache");
    keeps("ghp_short and github_pat_short");
    keeps("AKIAIOSFODNN7EXAMPL and ASIA-Pacific markets");
    keeps("xoxo- hugs and xoxb-short");
    keeps("eyJhbGciOiJIUzI1NiJ9 alone, eyJ.eyJ.");
    keeps("-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----");
    keeps("https://user@example.com:8080/a and https://example.com/x:y@z");
    keeps("see https://example.com/");
}

#[test]
fn home_paths_r27() {
    redacts("open /Users/alice/notes.txt", "open [LOCAL_PATH]/notes.txt");
    redacts("cd /home/bob && ls", "cd [LOCAL_PATH] && ls");
    redacts(r"C:\Users\carol\AppData", r"[LOCAL_PATH]\AppData");
    redacts(r"c:\users\carol\AppData", r"[LOCAL_PATH]\AppData");
    redacts(r"C:\USERS\carol", "[LOCAL_PATH]");
    redacts("D:/Users/dave/x", "[LOCAL_PATH]/x");
    redacts(
        r#"{"p":"C:\\Users\\erin\\x"}"#,
        r#"{"p":"[LOCAL_PATH]\\x"}"#,
    );
    redacts(r"\\?\C:\Users\frank\x", r"\\?\[LOCAL_PATH]\x");
    redacts(r"\\fileserver\home$\Users\grace\x", r"[LOCAL_PATH]\x");
    redacts(r"\\fileserver\users\heidi\x", r"[LOCAL_PATH]\x");
    redacts(r"\\?\UNC\fs\share\Users\ivan\x", r"[LOCAL_PATH]\x");
    redacts("/mnt/c/Users/judy/x", "[LOCAL_PATH]/x");
    redacts(r"C:\Users\John Smith\Desktop", r"[LOCAL_PATH]\Desktop");
    redacts("/Users/Mary Ann Lee/Documents", "[LOCAL_PATH]/Documents");
    redacts("/home/José/x", "[LOCAL_PATH]/x");
    redacts("/Users/U\u{200B}sers/x", "[LOCAL_PATH]/x");
    redacts("C:\\U\u{AD}sers\\kim\\x", r"[LOCAL_PATH]\x");
    redacts("/Users//Users/x", "[LOCAL_PATH]");
    redacts(
        "/Users/bob is in here and/or there",
        "[LOCAL_PATH] is in here and/or there",
    );
    keeps("https://api.example.com/users/42/profile");
    keeps("/srv/users/alice and /etc/homes/x");
    keeps(r"C:\Program Files\Users\x");
    keeps("the users/groups table");
    keeps("/Users/ and /home/");
    // A URL's path on a server stays; `file://` paths and paths after the URL do not.
    keeps("see http://www.1024cores.net/home/lock-free-algorithms");
    keeps("https://host:8080/Users/x/y and http://h/a/b/home/c/d");
    keeps("<a href=\"https://example.org/home/user/index.html\">");
    redacts("file:///home/alice/x", "file://[LOCAL_PATH]/x");
    redacts("FILE:///Users/alice/x", "FILE://[LOCAL_PATH]/x");
    redacts(
        "curl http://h/x /home/alice/y",
        "curl http://h/x [LOCAL_PATH]/y",
    );
    redacts("\"http://h/x\"/home/alice", "\"http://h/x\"[LOCAL_PATH]");
    // Any white space ends a URL, a no-break or ideographic space too.
    redacts(
        "curl http://h/x\u{A0}/home/alice/y",
        "curl http://h/x\u{A0}[LOCAL_PATH]/y",
    );
    redacts(
        "postgres://h:5432/x\u{3000}/Users/alice/y",
        "postgres://h:5432/x\u{3000}[LOCAL_PATH]/y",
    );
    redacts("C://home/alice", "C:/[LOCAL_PATH]");
    // A span over the URL's `scheme://` leaves no URL in the output: the path goes too.
    let redactor = Redactor::new(["zzzhttps://h"]).expect("valid");
    assert_eq!(redactor.redact("zzzhttps://h/home/alice/x"), "[REDACTED]/x");
    let redactor = Redactor::new(["yzhttps:"]).expect("valid");
    let once = redactor.redact("xyzhttps://h/a/home/alice/x");
    assert_eq!(once, "x[REDACTED]//h/a[LOCAL_PATH]/x");
    assert_eq!(redactor.redact(&once), once);
    // ward's bound: a root at most 1,024 bytes after the `://` (invisible characters not
    // counted) lies in the URL's path; farther in, it is a local path.
    let path = "a/".repeat(511);
    keeps(&format!("https://h/{path}/home/alice/x"));
    keeps(&format!("https://h/{path}\u{200B}/home/alice/x"));
    redacts(
        &format!("https://h/{path}a/home/alice/x"),
        &format!("https://h/{path}a[LOCAL_PATH]/x"),
    );
    let once = Redactor::new(Vec::<String>::new())
        .expect("valid")
        .redact(&format!("https://h/{path}a/home/alice/x/home/bob"))
        .into_owned();
    assert_eq!(once, format!("https://h/{path}a[LOCAL_PATH]/x[LOCAL_PATH]"));
}

#[test]
fn invisible_characters_r28() {
    redacts("Bea\u{200B}rer abc123456789", "[REDACTED]");
    redacts(
        "Authori\u{200D}zation: Bea\u{FEFF}rer x",
        "Authori\u{200D}zation: [REDACTED]",
    );
    redacts("s\u{2060}k-abcdefghijklmnop", "[REDACTED]");
    redacts("sk-abcdef\u{AD}ghijklmnop", "[REDACTED]");
    redacts(
        "eyJhbGciOiJIUzI1NiJ9.\u{200C}eyJzdWIiOiIxMjM0In0",
        "[REDACTED]",
    );
    // Invisible characters before a span stay, those right after it go with it;
    // typographic punctuation is not touched.
    redacts(
        "\u{200B}sk-abcdefghijklmnop\u{200B} x",
        "\u{200B}[REDACTED] x",
    );
    keeps("\u{201C}Quoted\u{201D} \u{2014} a soft\u{AD}hyphen and a zero\u{200B}width space");
}

#[test]
fn merged_spans_take_one_placeholder() {
    let redactor = redactor();
    redacts("/home/provider-key-0123456789/x", "[REDACTED]/x");
    let spans = redactor.redact_spans("Bearer sk-abc123defghijklmnop and /home/x");
    assert_eq!(spans.len(), 2);
    assert_eq!(
        spans[0].rules.iter().collect::<Vec<_>>(),
        [Rule::AuthValue, Rule::SkKey]
    );
    assert_eq!(spans[1].rules, RuleSet::single(Rule::HomePath));
    // Touching spans merge: no fragment between them.
    redacts(
        "sk-abcdefghijklmnop,provider-key-0123456789",
        "[REDACTED],[REDACTED]",
    );
    redacts("provider-key-0123456789search-key-abcdefghij", "[REDACTED]");
}

#[test]
fn idempotence_edge_cases() {
    let redactor = Redactor::new(["\"abcdefgh", "/abcdefgh", "ab/cdefgh"]).expect("valid");
    for input in [
        "Authorization: Bearer \"abcdefgh",
        "/Users//abcdefgh",
        "https://u:ab/cdefgh@host",
        "Bearer xxxxxxxxxxx(Bearer abc12345",
        r"Bearer abcC:\Users\bob",
        r"AKIAABCDEFGHIJKLMNOPC:\Users\x",
        // A `//` after a `:` that another span covers is a UNC root like any other.
        r"/Users/://s\Users\i",
        r"/Users/://s\users\://r\users\h",
        "/Users/bob://host/Users/carol/docs",
        "value /abcdefgh://host/Users/carol/docs",
        // An END line cut short covers the rest of its word.
        "-----BEGIN PRIVATE KEY----------END Rsk--sk-sk-sk-sk",
        "-----BEGIN PRIVATE KEY----------END Axoxp-Y---rt-BEG",
    ] {
        let once = redactor.redact(input).into_owned();
        assert_eq!(redactor.redact(&once), once, "input {input:?}");
    }
}

#[test]
fn decisions_that_do_not_wait_stay_idempotent() {
    // Nameless roots followed by roots, taken whatever the later root's decision, may cover
    // a URL's `://`: the URL check reads them. Long names in a URL's path grow with the
    // placeholders a second pass sees and are still decided the same way. A root read
    // across Unicode white space lies in no URL.
    let redactor = Redactor::new(["secret12"]).expect("valid");
    let x = |count: usize| "x".repeat(count);
    let a = |count: usize| "a".repeat(count);
    for input in [
        "ab:///h/Users//Users//home/bob".to_string(),
        "see https:///host/Users//Users//home/bob/notes".to_string(),
        "aa://home//home//home/r".to_string(),
        format!("ps:///home/{}/home//home/", x(245)),
        format!("https://h/home/{}secret12ysecret12/x", x(238)),
        format!("ps:///home/Basic {}Basic\"ome{}", a(1020), a(243)),
        format!("://C\\Users\\secret12:{}", x(246)),
        "ps:////\u{3000}sk-efghijklmnop/Users/e".to_string(),
        "aa:///a/Users//home/Users/".to_string(),
        "aa:///a/Users//Users/Users/".to_string(),
        "aa:///a/Users//Users/a/Users/".to_string(),
    ] {
        let once = redactor.redact(&input).into_owned();
        assert_eq!(redactor.redact(&once), once, "input {input:?}");
    }
    redacts("ab:///h/Users//Users//home/bob", "ab:/[LOCAL_PATH]");
    redacts("/home//home/ x", "[LOCAL_PATH]/home/ x");
}

#[test]
fn a_url_colon_blocks_a_unc_root_only_while_it_stays() {
    redacts(r"/Users/://s\Users\i", "[LOCAL_PATH]");
    // A URL's path on a server is not a local path (R27).
    keeps("see https://host/Users/carol ok");
    redacts("a://host/users/carol", "a://host/users/carol");
    redacts("//host/Users/carol/x", "[LOCAL_PATH]/x");
    redacts(r"/Users/://h\Users\://k\Users\Users\x", r"[LOCAL_PATH]");
}

#[test]
fn a_home_whose_name_runs_into_a_urls_scheme_takes_that_urls_home_too() {
    // The home in the first URL's path is taken (a span covers that URL's scheme), and its
    // name `is:` covers the second URL's scheme: the output shows no second URL, so the
    // home in its path is taken too, or a second pass would take it (R29 (d)).
    redacts(
        r"/Users/hs://\\s\users\is:///Users/\",
        "[LOCAL_PATH]//[LOCAL_PATH]//[LOCAL_PATH]",
    );
    // The same with a root after a `:` whose name runs into the next scheme.
    redacts(
        r"\\h\users\ÿ://s\users\is://\\h\users\x",
        "[LOCAL_PATH]//[LOCAL_PATH]",
    );
}

#[test]
fn a_pem_end_line_cut_short_covers_a_glued_token_and_no_next_word() {
    let header = "-----BEGIN PRIVATE KEY-----\nMIIEabc\n";
    redacts(
        &format!("{header}-----END Rsk-proj-abcdefghijklmnopqrstuvwxyz123456 tail"),
        "[REDACTED] tail",
    );
    redacts(
        &format!("{header}-----END PRIVATE KEY and the rest"),
        "[REDACTED] and the rest",
    );
}

#[test]
fn bytes_mode_passes_invalid_utf8_through() {
    let redactor = redactor();
    let input = b"\xC3\x28 sk-abcdefghijklmnop \xE2\x80 /home/\xFFname/x \xF0";
    let output = redactor.redact_bytes(input);
    assert_eq!(
        &*output,
        b"\xC3\x28 [REDACTED] \xE2\x80 [LOCAL_PATH]/x \xF0"
    );
    assert!(matches!(
        redactor.redact_bytes(b"\xFF\xFE plain"),
        Cow::Borrowed(_)
    ));
}

#[test]
fn values_only_applies_no_pattern() {
    let guard = Redactor::values_only(["provider-key-0123456789"]).expect("valid");
    assert_eq!(
        guard.redact("Bearer provider-key-0123456789"),
        "Bearer [REDACTED]"
    );
    assert!(matches!(
        guard.redact("Bearer abcdefgh12 /home/x sk-abcdefghijklmnop"),
        Cow::Borrowed(_)
    ));
    let empty = Redactor::values_only(Vec::<String>::new()).expect("valid");
    assert!(matches!(
        empty.redact("sk-abcdefghijklmnop"),
        Cow::Borrowed(_)
    ));
}

#[test]
fn redactor_is_send_sync_and_clone() {
    fn assert_traits<T: Send + Sync + Clone + std::fmt::Debug>() {}
    assert_traits::<Redactor>();
}

#[test]
fn small_and_large_inputs_find_the_same_spans() {
    // Inputs under 16 KiB search the values on their own, larger ones weave them into the
    // anchor search: the spans must not depend on which.
    let values = ["provider-key-0123456789", "search-key-abcdefgh12"];
    let redactor = Redactor::new(values).expect("valid");
    let head = "a provider-key-0123456789sk-abcdefghijklmnop, Bearer search-key-abcdefgh12 and \
                /home/alice/x with search-key-abcdefgh1 and provider-key-0123456789 end";
    let small = redactor.redact_spans(head);
    let padded = format!("{head}{}", " plain".repeat(4000));
    assert!(padded.len() > 1024 && head.len() < 1024);
    assert_eq!(redactor.redact_spans(&padded), small);
    assert_eq!(small.len(), 4, "{small:?}");
}

#[test]
fn unicode_white_space_ends_a_url() {
    redacts(
        "postgres://db.example:5432/x\u{a0}/Users/alice/y",
        "postgres://db.example:5432/x\u{a0}[LOCAL_PATH]/y",
    );
    redacts(
        "https://h/x\u{2028}/home/alice",
        "https://h/x\u{2028}[LOCAL_PATH]",
    );
}

#[test]
fn every_occurrence_of_a_value_counts_whichever_search_finds_it() {
    // Small inputs search the values on their own, larger ones along the anchor search:
    // both count each occurrence, overlapping ones included.
    let redactor = Redactor::new(["aaaaaaaa", "provider-key-0123456789"]).expect("valid");
    let head = "aaaaaaaaaa provider-key-0123456789provider-key-0123456789";
    let padded = format!("{head}{}", " plain".repeat(400));
    assert!(head.len() < 1024 && padded.len() > 1024);
    assert_eq!(
        redactor
            .redact_report(head.as_bytes())
            .count(Rule::ExactValue),
        5
    );
    assert_eq!(
        redactor
            .redact_report(padded.as_bytes())
            .count(Rule::ExactValue),
        5
    );
}
