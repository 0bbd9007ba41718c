//! `ward redact` as a user runs it: standard input to standard output, exit codes, stats.

mod common;

use std::io::Write;
use std::process::{Output, Stdio};

use common::{folder, spawn_ward, stderr, ward_with_input};

fn ward_redact(args: &[&str], input: &[u8]) -> Output {
    ward_with_input(&[&["redact"], args].concat(), input)
}

#[test]
fn a_bearer_credential_goes_a_plain_word_after_basic_stays_a_short_secret_is_refused() {
    let output = ward_redact(&[], b"Authorization: Bearer abc$def;x\n");
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(output.stdout, b"Authorization: [REDACTED];x\n");

    let output = ward_redact(&[], b"Explain the basic concepts\n");
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(output.stdout, b"Explain the basic concepts\n");

    let output = ward_redact(&["--secret", "abc"], b"abc\n");
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let message = stderr(&output);
    assert!(
        message.contains("secret #1") && message.contains("at least 8"),
        "{message}"
    );
}

#[test]
fn secrets_from_flags_and_file_with_stats() {
    let directory = folder("secrets");
    let file = directory.join("secrets.txt");
    std::fs::write(
        &file,
        "search-key-abcdefghij\r\n\nprovider-key-0123456789\n",
    )
    .expect("write secrets");
    let file_arg = file.to_string_lossy().into_owned();
    let output = ward_redact(
        &["--secret", "flag-secret-987654321", "--secrets-file", &file_arg, "--stats"],
        b"a provider-key-0123456789 b search-key-abcdefghij c flag-secret-987654321 d C:\\Users\\Eve Doe\\x\n",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        output.stdout,
        b"a [REDACTED] b [REDACTED] c [REDACTED] d [LOCAL_PATH]\\x\n"
    );
    let stats = stderr(&output);
    assert!(
        stats.contains("exact-value\t3\n") && stats.contains("home-path\t1\n"),
        "{stats}"
    );
    assert!(
        stats.contains("sk-key\t0\n") && stats.ends_with("placeholders\t4\n"),
        "{stats}"
    );
    std::fs::remove_dir_all(&directory).expect("clean up");
}

#[test]
fn problems_exit_2_with_a_message_naming_them() {
    let missing = ward_redact(&["--secrets-file", "/nonexistent/ward/secrets.txt"], b"x");
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("cannot read the secrets file /nonexistent/ward/secrets.txt"),
        "{}",
        stderr(&missing)
    );

    let placeholder = ward_redact(&["--secret", "REDACTED"], b"x");
    assert_eq!(placeholder.status.code(), Some(2));
    assert!(
        stderr(&placeholder).contains("placeholder"),
        "{}",
        stderr(&placeholder)
    );

    let bad_flag = ward_redact(&["--no-such-flag"], b"x");
    assert_eq!(bad_flag.status.code(), Some(2));
    assert!(
        stderr(&bad_flag).contains("--no-such-flag"),
        "{}",
        stderr(&bad_flag)
    );

    let missing_value = ward_redact(&["--secret"], b"x");
    assert_eq!(missing_value.status.code(), Some(2));
}

#[test]
fn bytes_that_are_not_utf8_pass_through() {
    let output = ward_redact(
        &[],
        b"\xFF\xFE key sk-abcdefghijklmnop \xC3\x28 /home/bob/\xE2\x80\n",
    );
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        output.stdout,
        b"\xFF\xFE key [REDACTED] \xC3\x28 [LOCAL_PATH]/\xE2\x80\n"
    );
}

#[test]
fn large_input_is_redacted_whole_and_unchanged_elsewhere() {
    // 8 MiB with findings at the start, at every 64 KiB boundary and at the end.
    let block = "Moving averages lag; oscillators measure speed. ".repeat(1400);
    let mut input = String::from("sk-startabcdefghijkl ");
    while input.len() < 8 << 20 {
        input.push_str(&block[..(64 << 10) - 30]);
        input.push_str(" Bearer abcdefgh12345678 ");
    }
    input.push_str("/home/last");
    let output = ward_redact(&["--secret", "never-present-value"], input.as_bytes());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let expected = input
        .replace("sk-startabcdefghijkl", "[REDACTED]")
        .replace("Bearer abcdefgh12345678", "[REDACTED]")
        .replace("/home/last", "[LOCAL_PATH]");
    assert_eq!(output.stdout.len(), expected.len());
    assert!(output.stdout == expected.as_bytes());
}

#[test]
fn a_reader_that_goes_away_ends_the_stream_quietly() {
    // The output is written behind, on a thread of its own: a closed pipe there still ends
    // the program with status 141 and no message, however far the input has been read.
    let input = "sk-abcdefghijkl1234 and prose around it\n".repeat(200_000);
    for _attempt in 0..3 {
        let mut child = spawn_ward(&["redact"], Stdio::piped());
        drop(child.stdout.take());
        let mut stdin = child.stdin.take().expect("stdin");
        let bytes = input.clone().into_bytes();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
        let output = child.wait_with_output().expect("ward runs");
        writer.join().expect("writer");
        assert_eq!(output.status.code(), Some(141), "{}", stderr(&output));
        assert!(output.stderr.is_empty(), "{}", stderr(&output));
    }
}
