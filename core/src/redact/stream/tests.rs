//! The streaming redactor against whole-text redaction, on the hard cases one by one: spans
//! crossing a window's end, spans far longer than the window, look-behind and look-ahead
//! across a cut, merging across a cut, invisible characters, CRLF and UTF-8 split anywhere.

use std::io::{self, Read};

use super::super::window::{self, TAIL_PATTERNS};
use super::super::{auth, home, invisible, tokens};
use super::*;

/// A reader that hands out its bytes in the given chunk sizes, in turn (never 0, which
/// would mean the end), with an `Interrupted` error before every third chunk.
struct Chunked<'a> {
    bytes: &'a [u8],
    sizes: Vec<usize>,
    turn: usize,
}

impl Read for Chunked<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        self.turn += 1;
        if self.turn.is_multiple_of(3) {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let size = self.sizes[self.turn % self.sizes.len()]
            .max(1)
            .min(buffer.len())
            .min(self.bytes.len());
        buffer[..size].copy_from_slice(&self.bytes[..size]);
        self.bytes = &self.bytes[size..];
        Ok(size)
    }
}

/// Streams `input` in windows of `window_bytes`, read in the chunk `sizes` given in turn,
/// and checks the output, the counts, the placeholders and the byte counts against
/// whole-text redaction; returns the stream's report.
#[track_caller]
fn stream_agrees(
    redactor: &Redactor,
    input: &[u8],
    window_bytes: usize,
    sizes: &[usize],
) -> StreamReport {
    let whole = redactor.redact_report(input);
    let mut output = Vec::new();
    let reader = Chunked {
        bytes: input,
        sizes: sizes.to_vec(),
        turn: 0,
    };
    let options = StreamOptions {
        window_bytes,
        count_rules: true,
    };
    let report = redactor
        .redact_stream_with(reader, &mut output, &options)
        .expect("in-memory streams do not fail");
    assert!(
        output == *whole.output,
        "window {window_bytes}:\n  input  {:?}\n  stream {:?}\n  whole  {:?}",
        String::from_utf8_lossy(input).trim(),
        String::from_utf8_lossy(&output).trim(),
        String::from_utf8_lossy(&whole.output).trim(),
    );
    assert_eq!(
        report.counts,
        whole.counts,
        "counts, window {window_bytes}, input {:?}",
        String::from_utf8_lossy(input).trim()
    );
    assert_eq!(report.placeholders, whole.spans.len() as u64);
    assert_eq!(report.bytes_read, input.len() as u64);
    assert_eq!(report.bytes_written, output.len() as u64);
    report
}

/// Streams `input` after amounts of padding from 0 to [`CUT_STEP_MAX`] in steps of
/// `stride`, with 16-byte windows, so that cuts fall at offsets inside and around it (a
/// window settles nothing in its last [`TAIL_PATTERNS`] bytes, so an input shorter than a
/// kilobyte on its own would go through one window); and once whole in a 4 KiB window.
#[track_caller]
fn agrees_across_cuts(redactor: &Redactor, input: &[u8], stride: usize) {
    let tail = vec![b' '; CUT_STEP_MAX];
    for pad in (0..CUT_STEP_MAX).step_by(stride) {
        let padded = [&vec![b' '; pad][..], b"\n", input, b"\n", &tail].concat();
        let report = stream_agrees(redactor, &padded, 16, &[61, 3]);
        // A redactor with nothing to find copies its input through without windows.
        assert!(
            report.windows == 0 || report.windows >= 3,
            "{} windows: no cut to test",
            report.windows
        );
    }
    stream_agrees(redactor, input, 4096, &[4096]);
}

/// [`agrees_across_cuts`] at 31 offsets across a step between cuts.
#[track_caller]
fn agrees(redactor: &Redactor, input: &[u8]) {
    agrees_across_cuts(redactor, input, CUT_STEP_MAX / 31);
}

fn patterns() -> Redactor {
    Redactor::new(["provider-key-0123456789", "search-key-abcdefghij"]).expect("valid secrets")
}

#[test]
fn examples_of_every_rule() {
    let redactor = patterns();
    for input in [
        "",
        "plain text with nothing to redact\r\n",
        "Authorization: Bearer abc$def;x\n",
        "use provider-key-0123456789 now",
        "key sk-proj-abcdefghijk- and ghp_abcdefghijklmnopqrstuvwxyz0123456789 AKIAIOSFODNN7EXAMPLE!",
        "xoxb-123456789012-abcdefghijkl jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl.",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n+/def==\n-----END RSA PRIVATE KEY-----\nafter",
        "postgres://admin:p4ss@w0rd@db.local:5432/x redis://:hunter2pw@cache",
        r"open /Users/alice/notes.txt cd /home/bob && C:\Users\John Smith\Desktop \\?\UNC\fs\share\Users\ivan\x",
        r"/Users/://s\Users\i and /Users/://h\Users\://k\Users\Users\x and //host/Users/carol/x",
        "Bearer x-proxy-authorization=bearer aA!*aaaaaaa0aA ok Bearer abc123de\u{201D} said",
        "Explain the basic concepts. The bearer duplicates... Basic abc123",
        "/home/provider-key-0123456789/x sk-abcdefghijklmnop,provider-key-0123456789",
        "provider-key-0123456789search-key-abcdefghij",
        "Bea\u{200B}rer abc123456789 s\u{2060}k-abcdefghijklmnop \u{200B}sk-abcdefghijklmnop\u{200B} x",
    ] {
        agrees(&redactor, input.as_bytes());
    }
}

#[test]
fn a_deterministic_mix_of_shapes() {
    let redactor = patterns();
    let shapes: &[&str] = &[
        "Authorization: Bearer ",
        "Bearer ",
        "basic ",
        "\"authorization\": \"",
        "sk-",
        "sk-proj-abcdefghijklmnop",
        "ghp_abcdefghijklmnopqrstuvwxyz0123",
        "AKIAIOSFODNN7EXAMPLE",
        "eyJhbGciOiJI.eyJzdWIiOiIx.sig",
        "eyJhbGciOiJI.eyJzdWIiOiIx.",
        "-----BEGIN PRIVATE KEY-----\n",
        "MIIEabcdef==\n",
        "-----END PRIVATE KEY-----",
        "https://u:p@ss@",
        "://",
        "/Users/",
        "/home/",
        "C:\\Users\\",
        "\\\\fs01\\share\\users\\",
        "bob",
        "John Smith",
        "/",
        "\\",
        " ",
        "\n",
        "\r\n",
        ":",
        "=",
        "\"",
        "provider-key-0123456789",
        "search-key-abcdefghij",
        "\u{200B}",
        "\u{AD}",
        "\u{FEFF}",
        "é",
        "\u{201D}",
        "\u{3000}",
        "abc123",
        "12345678",
        "words and more words",
    ];
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..300 {
        let mut input = String::new();
        for _ in 0..40 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            input.push_str(shapes[(state % shapes.len() as u64) as usize]);
        }
        agrees(&redactor, input.as_bytes());
    }
}

/// Streams `input` in windows of 64 bytes, one read per 1 to 97 bytes (see
/// [`stream_agrees`]).
#[track_caller]
fn streamed(redactor: &Redactor, input: &[u8]) -> StreamReport {
    stream_agrees(redactor, input, 64, &[97, 1, 31, 64, 5])
}

/// The buffer of a 64-byte window with its look-behind and the tail it re-reads: a span
/// longer than this went through without being held.
const SMALL_BUFFER_BYTES: usize = 4096;

#[test]
fn spans_far_longer_than_the_window_stream_in_bounded_memory() {
    let redactor = patterns();
    let long = 200_000;
    let cases: Vec<Vec<u8>> = vec![
        // A credential after a header context, and one that looks like a credential.
        format!("Authorization: Bearer {} tail", "A".repeat(long)).into_bytes(),
        format!("x Bearer {}, tail", "a1".repeat(long / 2)).into_bytes(),
        // Certain for good once 20 characters hold a character no plain word has (R25).
        format!("Bearer {}", "Z_".repeat(long / 2)).into_bytes(),
        format!("Basic x{} tail", "-".repeat(long)).into_bytes(),
        format!("basic {}9.", "ab+".repeat(long / 3)).into_bytes(),
        // Keys.
        format!("key sk-{} tail", "a".repeat(long)).into_bytes(),
        format!("sk-{}", "b-".repeat(long / 2)).into_bytes(),
        format!("ghp_{}!", "c".repeat(long)).into_bytes(),
        format!("AKIA{}x", "D".repeat(long)).into_bytes(),
        format!("xoxb-{}.", "e".repeat(long)).into_bytes(),
        // A configured value repeated back to back: touching spans merge into one.
        format!("<{}>", "provider-key-0123456789".repeat(long / 23)).into_bytes(),
        format!(
            "{}search-key-abcdefghij",
            "provider-key-0123456789".repeat(long / 23)
        )
        .into_bytes(),
        // JWT payloads and signatures.
        format!("eyJhbGciOiJI.eyJ{} .", "p".repeat(long)).into_bytes(),
        format!("eyJhbGciOiJI.eyJzdWIiOiIx.{}.x", "s".repeat(long)).into_bytes(),
        format!("eyJhbGciOiJI.eyJ{}.{}", "p".repeat(long), "s".repeat(long)).into_bytes(),
        // PEM bodies without an END line in the first 64 KiB.
        format!(
            "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----\nafter",
            "MIIEabcdefghijklmnopqrstuvwxyz0123456789+/==\n".repeat(long / 44)
        )
        .into_bytes(),
        format!(
            "-----BEGIN PRIVATE KEY-----\\n{}\\n tail",
            "MIIEabcdefghijkl\\n".repeat(long / 18)
        )
        .into_bytes(),
    ];
    for input in &cases {
        let report = streamed(&redactor, input);
        // A PEM block's END line is searched for over 64 KiB after its header: the window
        // grows to hold that search once, then the body streams.
        let bound = if input.starts_with(b"-----BEGIN") {
            2 * (tokens::PEM_LEN_MAX + SMALL_BUFFER_BYTES)
        } else {
            SMALL_BUFFER_BYTES
        };
        assert!(
            report.buffer_bytes_max <= bound,
            "buffer grew to {} bytes for {:?}…",
            report.buffer_bytes_max,
            String::from_utf8_lossy(&input[..40])
        );
    }
}

#[test]
fn stretches_that_wait_on_a_later_byte_wait_a_bounded_distance() {
    // A URL's userinfo, a JWT header, the white space after a scheme word, a credential
    // that is a plain word so far (R25: letters, and single `-` `/` `.` between them), the
    // words of a spaced user name and a chain of uncertain credentials are decided by what
    // follows them. Each rule reads a bounded distance ahead (its bound beside each case),
    // so the window grows at most to hold that distance, and the output stays exact.
    let redactor = patterns();
    let long = 100_000;
    let userinfo = tokens::USERINFO_LEN_MAX;
    let jwt_header = tokens::JWT_HEADER_LEN_MAX;
    let gap = auth::SCHEME_GAP_MAX;
    let plain = auth::PLAIN_WORD_LEN_MAX;
    let chain =
        |link: &str, last: &str| format!("Bearer {}{last} x", link.repeat(long / link.len()));
    let cases = [
        (
            format!("https://user:{}@host/x", "p".repeat(long)),
            userinfo,
        ),
        (
            format!("https://user:{} host/x", "p".repeat(long)),
            userinfo,
        ),
        (
            format!("https://user:pw@{}@host and more", "q".repeat(long)),
            userinfo,
        ),
        (format!("https://{}", "u:p@".repeat(long / 4)), userinfo),
        (
            format!("eyJ{}.eyJzdWIiOiIx.sig", "h".repeat(long)),
            jwt_header,
        ),
        (format!("eyJ{} alone", "h".repeat(long)), jwt_header),
        (format!("Authorization: Bearer{}x1", " ".repeat(long)), gap),
        (format!("Authorization: Bearer{}\"", " ".repeat(long)), gap),
        (format!("Bearer{}\nabc12345", " ".repeat(long)), gap),
        (
            format!("Authorization: Bearer{}\n  \nabc", " ".repeat(long)),
            gap,
        ),
        (
            format!(
                "Authorization: Bearer{}\n{}abc x",
                " ".repeat(long),
                " ".repeat(long)
            ),
            gap,
        ),
        (
            format!("x Bearer{}\u{3000}\t{}", " ".repeat(long), "é".repeat(long)),
            gap,
        ),
        (format!("Bearer {}", "Z".repeat(long)), plain),
        (format!("Bearer {}1 x", "Z".repeat(long)), plain),
        (format!("Basic {}/ab.", "word-".repeat(long / 5)), plain),
        (format!("Basic {}=", "abcd".repeat(long / 4)), plain),
        (format!("basic a{} b", ".".repeat(long)), plain),
        // Certain wherever a window ends after a `-` or `/` (20 characters, not a plain
        // word), and a plain word in the end (a window ends after a separator at one of
        // these paddings) until it is too long to be one.
        (format!("Bearer {}d", "abc-".repeat(long / 4)), plain),
        (format!(" Bearer {}d", "abc-".repeat(long / 4)), plain),
        (format!("  Bearer {}d", "abc-".repeat(long / 4)), plain),
        (format!("   Bearer {}d", "abc-".repeat(long / 4)), plain),
        (format!("Basic {}c x", "ab/".repeat(long / 3)), plain),
        (format!(" Basic {}c x", "ab/".repeat(long / 3)), plain),
        (format!("  Basic {}c x", "ab/".repeat(long / 3)), plain),
        (format!("/home/bob {}/x", "w".repeat(long)), 0),
        (format!("/home/bob {} x", "w".repeat(long)), 0),
        // Long user names, in a URL's path and after a `:` too, taken or not: the decision
        // reads what precedes them, and a span taken grows with the name.
        (format!("C:\\Users\\{}", "=".repeat(long)), 0),
        (format!("see https://host/home/{}/x", "n".repeat(long)), 0),
        (format!("see https://host/Users/{}/x", "n".repeat(long)), 0),
        (format!("a://h/Users/{}\\rest x", "n".repeat(long)), 0),
        (
            format!(
                "sk-abcdefghijklmnophttps://host/home/{}/x",
                "n".repeat(long)
            ),
            0,
        ),
        (
            format!(
                "key provider-key-0123456789://h/Users/{} x",
                "n".repeat(long)
            ),
            0,
        ),
        // Each link's credential holds the next scheme word.
        (chain("=bearer ", "abcdefg1"), 0),
        (chain("aaaaaaaaaa=bearer ", "abcdefg1"), 0),
        (chain("aaaaaaaaaa=bearer ", "abcdefg"), 0),
        (chain("aaaaaaaaaa=basic\t", "x"), 0),
        (chain("a-bearer ", "a"), 0),
        // Invisible characters: a run longer than R28's bound stays in the view, and up to
        // that bound between every two bytes widens a look-ahead 49 times.
        ("\u{200B}".repeat(long), 0),
        (
            format!(
                "x Bearer {}",
                format!("a-b{}", "\u{200B}".repeat(16)).repeat(long / 51)
            ),
            49 * plain,
        ),
        (
            format!(
                "/home/{}",
                format!("/home/{}", "\u{FEFF}".repeat(16)).repeat(long / 54)
            ),
            0,
        ),
        (format!("sk-abc{}defghijklmnop", "\u{FEFF}".repeat(long)), 0),
        (
            format!("provider-key-012{}3456789", "\u{AD}".repeat(long)),
            0,
        ),
    ];
    for (input, look_ahead) in &cases {
        let report = streamed(&redactor, input.as_bytes());
        // Every bound counts bytes of the R28 view: invisible characters widen it.
        let expansion = input.len().div_ceil(invisible::strip(input).len().max(1));
        let bound = 2 * expansion * (look_ahead + SMALL_BUFFER_BYTES);
        assert!(
            report.buffer_bytes_max <= bound,
            "buffer grew to {} bytes (bound {bound}) for {:?}…",
            report.buffer_bytes_max,
            String::from_utf8_lossy(&input.as_bytes()[..40])
        );
    }
}

#[test]
fn the_look_ahead_bounds_decide_the_same_in_whole_text() {
    // Just within each bound, and just past it (whole text, so the bound is a rule, not a
    // property of the window).
    let redactor = patterns();
    let redact = |text: String| redactor.redact(&text).into_owned();
    let userinfo = tokens::USERINFO_LEN_MAX;
    // The `@` is the last byte searched, then the first byte not searched.
    let fits = format!("https://u:{}@h", "p".repeat(userinfo - 3));
    assert_eq!(redact(fits), "https://u:[REDACTED]@h");
    let too_far = format!("https://u:{}@h", "p".repeat(userinfo - 2));
    assert_eq!(redact(too_far.clone()), too_far);
    // The last `@` within the bound ends the password.
    let two = format!("https://u:p@{}@h", "q".repeat(userinfo));
    assert_eq!(
        redact(two),
        format!("https://u:[REDACTED]@{}@h", "q".repeat(userinfo))
    );

    let header = |length: usize| format!("eyJ{}.eyJzdWIiOiIx.sig x", "h".repeat(length - 3));
    assert_eq!(redact(header(tokens::JWT_HEADER_LEN_MAX)), "[REDACTED] x");
    let long_header = header(tokens::JWT_HEADER_LEN_MAX + 1);
    assert_eq!(redact(long_header.clone()), long_header);

    // White space wider than the bound after a scheme word: redacted with whatever follows
    // (the seed, R29 (b), reads any white space there), up to a line break it may not hold.
    let gap = |length: usize, after: &str| format!("a Bearer{}{after}", " ".repeat(length));
    let narrow = gap(auth::SCHEME_GAP_MAX, "concepts x");
    assert_eq!(redact(narrow.clone()), narrow);
    assert_eq!(
        redact(gap(auth::SCHEME_GAP_MAX + 1, "concepts x")),
        "a [REDACTED] x"
    );
    assert_eq!(
        redact(gap(auth::SCHEME_GAP_MAX + 1, "\nnext")),
        "a [REDACTED]\nnext"
    );
    let refused = gap(auth::SCHEME_GAP_MAX, "\nnext");
    assert_eq!(redact(refused.clone()), refused);
    let header = format!(
        "Authorization: Basic{}\n{}x",
        " ".repeat(300),
        " ".repeat(300)
    );
    assert_eq!(redact(header), "Authorization: [REDACTED]");

    // A plain word of `length` bytes (`ab-a-a-…-a`, or `abc-a-…-a` when odd).
    let plain = |length: usize| {
        let head = if length.is_multiple_of(2) {
            "ab"
        } else {
            "abc"
        };
        format!("a basic {head}{} x", "-a".repeat((length - head.len()) / 2))
    };
    let word = plain(auth::PLAIN_WORD_LEN_MAX);
    assert_eq!(redact(word.clone()), word);
    assert_eq!(
        redact(plain(auth::PLAIN_WORD_LEN_MAX + 1)),
        "a [REDACTED] x"
    );

    // A user name's further words add at most 64 bytes with their spaces.
    let name = |length: usize| format!("/home/bob {}/x", "w".repeat(length - 1));
    assert_eq!(redact(name(64)), "[LOCAL_PATH]/x");
    assert_eq!(
        redact(name(65)),
        format!("[LOCAL_PATH] {}/x", "w".repeat(64))
    );
}

#[test]
fn a_pem_block_within_its_search_limit_is_redacted_to_its_end_line() {
    let redactor = patterns();
    let body = "MIIEabcdefghijklmnopqrstuvwxyz0123456789+/==\n".repeat(1_000);
    for end in [
        "-----END RSA PRIVATE KEY-----",
        "-----END RSA",
        "-----END Rsk-proj-abcdefghijklmnop tail",
        "",
    ] {
        let input = format!("x -----BEGIN RSA PRIVATE KEY-----\n{body}{end}\nafter");
        streamed(&redactor, input.as_bytes());
    }
}

/// The longest step between two cuts with 16-byte windows: a window cuts
/// [`window::TAIL_PATTERNS`] bytes before its end (plus the values' length, here 23), and
/// reads about twice that before cutting again.
const CUT_STEP_MAX: usize = 2 * (TAIL_PATTERNS + 23) + 64;

/// Streams `shape` after every amount of padding from 0 to [`CUT_STEP_MAX`] (see
/// [`agrees_across_cuts`]), so that a cut falls at every offset inside and around it.
#[track_caller]
fn across_cuts(redactor: &Redactor, shape: &str) {
    agrees_across_cuts(redactor, shape.as_bytes(), 1);
}

#[test]
fn a_cut_at_every_offset_of_each_shape() {
    let redactor = patterns();
    for shape in [
        "Bea\u{200B}rer abc123456789",
        "sk-abcdef\u{AD}ghijklmnop\u{200B}\u{200B} x",
        "provider-key-01234\u{200B}56789",
        "zzzz sk-abcdefghijklmnop",
        "xsk-abcdefghijklmnop",
        "AKIAIOSFODNN7EXAMPLE!",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2ln",
        "https://www.1024cores.net/home/lock-free",
        "file:///home/alice/x",
        r"\\fileserver\home$\Users\grace\x",
        r"/Users/://h\Users\://k\Users\Users\x",
        "C:\\Users\\John Smith\\Desktop",
        "/Users/bob is in here and/or there",
        "-----BEGIN PRIVATE KEY----------END Rsk--sk-sk-sk-sk",
        "Bearer x=bearer y=bearer z=bearer abcdefg1",
        "Bearer =bearer =bearer =bearer =bearer x",
        "a\u{201C}Bearer abc123de\u{201D}",
    ] {
        across_cuts(&redactor, shape);
    }
}

#[test]
fn invalid_utf8_and_characters_split_anywhere() {
    let redactor = patterns();
    let mut input = Vec::new();
    for round in 0..200u32 {
        input.extend_from_slice("é—”“\u{3000}\u{200B}\u{FEFF}\u{AD}".as_bytes());
        input.extend_from_slice(&[0xE2, 0x80, 0xFF, 0xC3, b'(', 0xF0, 0x9F, 0x98]);
        input.extend_from_slice(
            b"Bearer \xE2\x80\x8Babc123456789 sk-\xC2\xADabcdefghijklmnop /home/\xFFname/x\r\n",
        );
        input.extend_from_slice(&round.to_le_bytes());
    }
    agrees(&redactor, &input);
    agrees(&redactor, &input[1..]);
    agrees(&redactor, &input[..input.len() - 1]);
}

#[test]
fn values_only_and_empty_redactors_stream_too() {
    let guard = Redactor::values_only(["provider-key-0123456789", "aaaaaaaa"]).expect("valid");
    agrees(
        &guard,
        b"Bearer provider-key-0123456789 aaaaaaaaaaaa /home/x provider-key-0123456789provider-key-0123456789",
    );
    let five = Redactor::values_only([
        "value-one-1",
        "value-two-2",
        "value-three",
        "value-4444",
        "valu5-five",
    ])
    .expect("valid");
    agrees(
        &five,
        "value-one-1value-two-2 value-three x value-4444value-4444".as_bytes(),
    );
    let empty = Redactor::values_only(Vec::<String>::new()).expect("valid");
    agrees(&empty, b"sk-abcdefghijklmnop stays");
}

#[test]
fn streaming_work_is_linear_on_adversarial_inputs() {
    // R29 (f) for streams: re-reading the look-behind and the undecided tail of each window,
    // and the doubling windows of undecided stretches, keep the work linear.
    let redactor = Redactor::new(["aaaaaaaa", "zzzzzzzx"]).expect("valid");
    let work = |text: &str| {
        let options = StreamOptions {
            window_bytes: 64,
            count_rules: true,
        };
        redactor
            .redact_stream_with(text.as_bytes(), io::sink(), &options)
            .expect("in-memory streams do not fail")
            .work
            .total()
    };
    for unit in [
        "sk-",
        "Bearer ",
        "Bearer\u{3000}",
        "Authorization: Bearer ",
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n",
        "://u:",
        "https://u:p@",
        "eyJ-",
        "eyJabcdefgh.eyJ",
        "/Users/",
        "/home/a b c/",
        "\\\\h\\s\\users\\",
        "aaaa",
        "zzzzzzzxsk-",
        "\u{200B}",
        "a",
    ] {
        let small = work(&unit.repeat(8_000 / unit.len()));
        let large = work(&unit.repeat(32_000 / unit.len()));
        assert!(
            large <= 5 * small + 20_000,
            "{unit:?}: {small} then {large}"
        );
    }
}

/// Streams `input` with every read one byte long and windows of 16 and 64 bytes (see
/// [`stream_agrees`]).
#[track_caller]
fn byte_by_byte(redactor: &Redactor, input: &[u8]) {
    for window_bytes in [16, 64] {
        stream_agrees(redactor, input, window_bytes, &[1]);
    }
}

#[test]
fn a_header_context_and_its_credential_in_different_windows() {
    // The header is read back from the scheme word (R25, up to 145 bytes): a window that
    // starts at the scheme word still sees it, and a credential that would not look like
    // one on its own is still redacted.
    let redactor = patterns();
    let gap = " ".repeat(60);
    for shape in [
        format!("Authorization:{gap}Bearer abc"),
        format!("\"authorization\":{gap}\"Basic abc\""),
        format!("Authorization:\r\n{gap}Bearer\r\n abc\r\n"),
        "Authorization: x Bearer abc".to_string(),
        "headers['Authorization'] = 'Bearer short'".to_string(),
        // The longest header context: both gaps at their 64 bytes.
        format!(
            "headers[\"authorization\"]{g}={g}'Bearer x'",
            g = " ".repeat(64)
        ),
    ] {
        across_cuts(&redactor, &shape);
        byte_by_byte(&redactor, shape.as_bytes());
    }
}

#[test]
fn touching_spans_merge_across_a_cut() {
    // R29: touching spans become one placeholder, so the placeholder of a span reaching a
    // cut waits for what touches it; a home path (`[LOCAL_PATH]`) joined by a value turns
    // `[REDACTED]`.
    let redactor = patterns();
    for shape in [
        format!("/home/bob{}", "provider-key-0123456789".repeat(3)),
        format!("/Users/{}/x", "search-key-abcdefghij".repeat(3)),
        "/Users//provider-key-0123456789".to_string(),
        "sk-abcdefghijklmnop,provider-key-0123456789".to_string(),
        "provider-key-0123456789sk-abcdefghijklmnop".to_string(),
        "provider-key-0123456789search-key-abcdefghij".to_string(),
    ] {
        across_cuts(&redactor, &shape);
    }
    // Far longer than a window.
    let pad = "x ".repeat(500);
    streamed(
        &redactor,
        format!("{pad}/home/bob{}", "provider-key-0123456789".repeat(400)).as_bytes(),
    );
    streamed(
        &redactor,
        format!("{pad}/home/{}x/y", "a".repeat(3000)).as_bytes(),
    );
}

#[test]
fn crlf_and_multi_byte_characters_split_between_reads() {
    let redactor = patterns();
    for shape in [
        "Bearer\r\nabcdefgh1\r\n",
        "Bearer\u{3000}abcdefgh1\r\n",
        "\u{201C}Bearer abc123de\u{201D}\r\n",
        "/home/José/x\r\n",
        "é sk-abcdefghijkl\r\n",
    ] {
        across_cuts(&redactor, shape);
        byte_by_byte(&redactor, format!("{}{shape}", "é—".repeat(300)).as_bytes());
    }
}

#[test]
fn invisible_characters_split_between_reads() {
    let redactor = patterns();
    for shape in [
        "Bea\u{200B}rer abc123456789 x",
        "s\u{2060}k-abcdef\u{AD}ghijklmnop\u{FEFF}\u{200B} x",
        "provider-key-01234\u{200B}56789\u{200B}",
    ] {
        across_cuts(&redactor, shape);
        byte_by_byte(
            &redactor,
            format!("{}{shape}", "\u{200B}a".repeat(300)).as_bytes(),
        );
    }
    // Look-behind through a run of invisible characters longer than the context: the
    // context is kept as the view, without them.
    across_cuts(
        &redactor,
        &format!("Authorization:{}Bearer abc", "\u{200B}".repeat(2000)),
    );
}

#[test]
fn a_url_password_found_before_a_cut_is_written_after_it() {
    // A URL's password starts after its `://`: the candidate is found before the cut while
    // its span starts after it, so the next window finds it again.
    let redactor = patterns();
    across_cuts(&redactor, "https://user:pw@  @host/x");
    across_cuts(
        &redactor,
        &format!("https://{}:secret-pass@db/x", "u".repeat(300)),
    );
}

/// Configured values that cover parts of a URL's `scheme://` (R27) and of credentials.
fn url_values() -> Redactor {
    Redactor::new([
        "tok-https",
        "ps://h/a",
        "://host/",
        "provider-key-0123456789",
        "dXNlcjpw",
    ])
    .expect("valid secrets")
}

#[test]
fn home_paths_in_urls_across_cuts() {
    // R27: a home root inside a URL's path stays, unless a span covers part of that URL's
    // `scheme://`; the URL and the spans covering it may lie in the look-behind.
    let redactor = url_values();
    for shape in [
        "https://h/a/home/x",
        "see https://h/a/home/bob/x and /home/bob/y",
        "file:///home/alice/x",
        "FILE://h/home/alice/x",
        "x://h/home/bob and ab://h/home/bob",
        "1ab://h/Users/bob/x",
        "C://Users/bob/x",
        "https://h/a b/home/bob",
        "https://h/a\"/home/bob",
        "https://h/a\u{200B}/home/bob/x",
        "https://h/a\u{A0}/home/bob/x https://h/a\u{3000}/Users/bob/x",
        "tok-https://h/home/bob/x",
        "xtok-https://h/Users/bob/x",
        "https://h/a/home/bob/ tok-https://h/home/carol",
        "htt\u{200B}ps://h/a/home/bob",
        "ps://h/a/home/bob/x",
        "https://host/home/x",
        "sk-abcdefghijklmnophttps://h/home/bob/x",
        "/home/ab://h/home/y",
        "https://h/home/ab://x/home/y",
        "Bearer https://h/home/bob/x",
        "Authorization: Bearer https://h/home/bob/x",
        "git+ssh://h/home/bob/x ftp://h//srv/Users/bob/x",
        "https://h/Users/John Smith/Desktop",
    ] {
        across_cuts(&redactor, shape);
    }
}

#[test]
fn the_url_path_bound_across_cuts() {
    // A root more than `home::URL_PATH_MAX` bytes after its `://` is a local path, in
    // whole-text and streaming redaction alike.
    let redactor = url_values();
    for extra in [0, 1, 2, 3, 4, 5] {
        // `://h/` then the filler: the root starts 2 + filler bytes after the `://`.
        let filler = "a".repeat(home::URL_PATH_MAX + extra - 4);
        let text = format!("https://k/{filler}/home/bob/x");
        assert_eq!(
            redactor.redact(&text).contains("/home/bob"),
            extra <= 2,
            "filler of {} bytes",
            filler.len()
        );
        for prefix in ["", "tok-", "x "] {
            let input = format!("{prefix}https://k/{filler}/home/bob/x and C:\\Users\\ann\\x");
            streamed(&redactor, input.as_bytes());
            byte_by_byte(&redactor, input.as_bytes());
            if extra == 2 || extra == 3 {
                // A cut at every offset: the `://`, and the value covering its scheme, in
                // the look-behind of the window that finds the root.
                across_cuts(&redactor, &input);
            }
        }
        let input = format!(
            "https://k/{}\u{200B}\u{200B}/home/bob/x",
            "a".repeat(home::URL_PATH_MAX + extra - 4)
        );
        streamed(&redactor, input.as_bytes());
        byte_by_byte(&redactor, input.as_bytes());
    }
}

#[test]
fn credentials_of_every_kind_across_cuts() {
    // R25 without a header context: plain words never, base64 of `user:password`, padding,
    // the JWT shape, 8 characters with a digit (Bearer), 20 characters; no line break after
    // the scheme, one after a header context.
    let redactor = url_values();
    for shape in [
        "Bearer single-threaded loop",
        "basic mips/mipsel support",
        "Explain the basic concepts.",
        "other than basic\n(i.e. digest)",
        "Bearer abc- def",
        "Bearer extraordinarily-long-compound-word-",
        "Bearer extraordinarily-long-compound-words!",
        "Bearer extraordinarily--long-compound-words",
        "Bearer -extraordinarily-long-compound-words",
        "Basic dXNlcjpwYXNzMQ==",
        "Basic dXNlcjpwYXNzMQ==x",
        "Basic dTpwMTI=",
        "Basic YWI6MQ.",
        "Basic dXNlcjpwYXNz",
        "Basic abc12345",
        "Basic abcdefghijklmnopqrs1",
        "Bearer dG9rZW4=",
        "Bearer dG9rZW4=x",
        "Bearer abc==.",
        "Bearer eyJhbGc.eyJzdWI.sig_nat-ure",
        "Bearer eyJhbGc.eyJzdWI.sig.x",
        "Bearer a.b.",
        "Bearer abc12345",
        "Bearer abc1234",
        "Bearer abc1234.",
        "Bearer abcdefgh1",
        "Bearer\nabc12345",
        "Bearer \u{2028}abc12345",
        "Bearer\u{85}abc12345",
        "Bearer \r\n abc12345",
        "Authorization: Bearer\r\n abc",
        "Authorization: Bearer\n\nabc",
        "Authorization: Basic\n  concepts",
        "\"authorization\": \"Bearer\nword\"",
        "Bearer x_y_z_w_v_u_t_s_r_q",
        "Bearer tok-httpsabc",
        "Basic dXNlcjpwYXNzMQ",
        "Bearer provider-key-0123456789",
        "Basic word provider-key-0123456789",
        "Basic abcdefghij-provider-key-0123456789",
    ] {
        across_cuts(&redactor, shape);
    }
}

#[test]
fn ordinary_text_streams_in_one_window_and_its_look_behind() {
    // SPEC §7: memory bounded by a window, not by the input. Several mebibytes of log-like
    // text dense with every rule's secrets, at the default window: the buffer never holds
    // more than the window, its look-behind and the tail it reads again.
    let redactor = patterns();
    let line = "2026-12-01T10:00:00Z GET /v1/bars Authorization: Bearer abc123def456 \
        key=sk-proj-abcdefghijklmnop user=/home/alice/x url=https://u:pw12345@h/p \
        provider-key-0123456789 eyJhbGciOiJI.eyJzdWIiOiIx.sig plain words here\n";
    let input = line.repeat((6 << 20) / line.len());
    let mut output = Vec::new();
    let report = redactor
        .redact_stream(input.as_bytes(), &mut output)
        .expect("in-memory streams do not fail");
    assert_eq!(output, *redactor.redact_report(input.as_bytes()).output);
    let bound = WINDOW_BYTES_DEFAULT + 2 * TAIL_PATTERNS + window::LOOK_BEHIND_MAX + 64;
    assert!(
        report.buffer_bytes_max <= bound,
        "{} bytes held, bound {bound}",
        report.buffer_bytes_max
    );
}

/// Pieces of every rule but PEM blocks (whose END line is searched for over 64 KiB, held
/// to its own bound above), and of what ends or joins their matches.
const MOTIF_PIECES: [&str; 49] = [
    "Bearer",
    "bearer",
    "Basic",
    "basic",
    " ",
    "\t",
    "\n",
    "\r\n",
    "=",
    "a",
    "Z",
    "1",
    "-",
    "/",
    ".",
    "_",
    "+",
    "eyJ",
    "://",
    "https://",
    "file://",
    "u:",
    ":",
    "@",
    "sk-",
    "ghp_",
    "github_pat_",
    "AKIA",
    "xoxb-",
    "/home/",
    "/Users/",
    "C:\\Users\\",
    "/mnt/c/Users/",
    "\\",
    "\\\\",
    "Authorization: ",
    "\"authorization\":",
    "\u{200B}",
    "\"",
    "'",
    ",",
    ";",
    "[",
    "]",
    "é",
    "\u{3000}",
    "[REDACTED]",
    "provider-key-0123456789",
    "w",
];

/// The farthest a verdict waits, but for PEM blocks: a JWT header or a URL's userinfo.
const LOOK_AHEAD_BUT_PEM: usize = max(tokens::USERINFO_LEN_MAX, tokens::JWT_HEADER_LEN_MAX);

const fn max(a: usize, b: usize) -> usize {
    if a > b { a } else { b }
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(
        // `PROPTEST_CASES` for a longer run, as for the other properties.
        std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(48),
    ))]

    /// SPEC §7 for any input: a stretch that stays undecided is one a rule reads ahead
    /// over, and every rule reads a bounded distance ahead, so however an opening and a
    /// motif repeated over many look-ahead lengths combine, the buffer stays within twice
    /// the farthest look-ahead and a small window's own buffer.
    #[test]
    fn any_motif_repeated_streams_in_bounded_memory(
        opening in proptest::collection::vec(proptest::sample::select(&MOTIF_PIECES[..]), 0..4),
        motif in proptest::collection::vec(proptest::sample::select(&MOTIF_PIECES[..]), 1..5),
    ) {
        let redactor = patterns();
        let motif = motif.concat();
        let length = 6 * (LOOK_AHEAD_BUT_PEM + SMALL_BUFFER_BYTES);
        let input = [opening.concat(), motif.repeat(length / motif.len() + 1)].concat();
        let options = StreamOptions { window_bytes: 64, count_rules: false };
        let mut output = Vec::new();
        let report = redactor
            .redact_stream_with(input.as_bytes(), &mut output, &options)
            .expect("in-memory streams do not fail");
        let whole = redactor.redact(&input);
        proptest::prop_assert_eq!(&output, whole.as_bytes());
        // The rules' bounds are in bytes of the R28 view: invisible characters they skip
        // take room in the buffer too.
        let view_len = invisible::strip(&input).len().max(1);
        let expansion = input.len().div_ceil(view_len);
        let bound = 2 * expansion * (LOOK_AHEAD_BUT_PEM + SMALL_BUFFER_BYTES);
        proptest::prop_assert!(
            report.buffer_bytes_max <= bound,
            "buffer grew to {} bytes (bound {}) for {:?} then {:?} repeated",
            report.buffer_bytes_max,
            bound,
            opening.concat(),
            motif
        );
    }
}

#[test]
fn a_run_of_invisible_characters_at_a_windows_end_waits_for_its_end() {
    // Whether R28 removes a run is known only once it ends or passes its bound: a window
    // that ends inside one leaves it to the next, including after a span still growing.
    let redactor = patterns();
    for run in [1, 15, 16, 17, 20] {
        let zw = "\u{200B}".repeat(run);
        for (head, length, tail) in [
            ("sk-", 131_059, " hello world tail\n"),
            ("Authorization: Bearer ", 131_041, " tail\n"),
            ("sk-", 131_060, "\n"),
            ("sk-", 131_050, " sk-bbbbbbbbbbbbbbbb tail"),
        ] {
            let input = format!("{head}{}{zw}{tail}", "a".repeat(length));
            let mut output = Vec::new();
            redactor
                .redact_stream(input.as_bytes(), &mut output)
                .expect("in-memory streams do not fail");
            assert_eq!(
                output,
                redactor.redact(&input).as_bytes(),
                "{head} {length} {run}"
            );
        }
        for length in (580..1000).step_by(7) {
            let input = format!("sk-{}{zw}\nafter", "a".repeat(length));
            for window in [16, 20, 31, 64] {
                stream_agrees(&redactor, input.as_bytes(), window, &[1, 7]);
            }
        }
    }
}
