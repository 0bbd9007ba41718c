//! The manifests of `deploy/` (SPEC §13: a campaign split over machines on an existing
//! engine). There is no cluster, Docker daemon or GitHub runner here, so these tests check
//! what can run locally: the manifests parse and carry the shard arithmetic, and the shell
//! scripts of the Kubernetes pods and of the GitHub Actions jobs, run here as the engines
//! would run them (one process per shard, with the index the engine sets), leave summaries
//! that `ward merge` combines into the whole campaign.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{folder, last_line, merge, repository};
use serde_norway::Value as Yaml;

fn read(relative: &str) -> String {
    std::fs::read_to_string(repository().join(relative))
        .unwrap_or_else(|error| panic!("{relative}: {error}"))
}

/// Every document of a YAML file.
fn documents(relative: &str) -> Vec<Yaml> {
    let text = read(relative);
    serde_norway::Deserializer::from_str(&text)
        .map(|document| {
            serde::Deserialize::deserialize(document)
                .unwrap_or_else(|error| panic!("{relative}: {error}"))
        })
        .collect()
}

/// The value at a path of keys and indices, written `a.b.0.c`.
fn at<'y>(value: &'y Yaml, path: &str) -> &'y Yaml {
    path.split('.').fold(value, |value, key| {
        let next = match key.parse::<usize>() {
            Ok(index) => value.get(index),
            Err(_) => value.get(key),
        };
        next.unwrap_or_else(|| panic!("no {key} in {path}"))
    })
}

fn text<'y>(value: &'y Yaml, path: &str) -> &'y str {
    at(value, path)
        .as_str()
        .unwrap_or_else(|| panic!("{path} is not text"))
}

fn number(value: &Yaml, path: &str) -> u64 {
    at(value, path)
        .as_u64()
        .unwrap_or_else(|| panic!("{path} is not a number"))
}

/// `PATH` with the built `ward` first.
fn path_with_ward() -> String {
    let ward = Path::new(env!("CARGO_BIN_EXE_ward"));
    let folder = ward.parent().unwrap().display().to_string();
    match std::env::var("PATH") {
        Ok(path) => format!("{folder}:{path}"),
        Err(_) => folder,
    }
}

/// The shard count `N` of `--shard "K/N"` in a script, where `K` is written `index`.
fn shard_count(script: &str, index: &str) -> u64 {
    let marker = format!("--shard \"{index}/");
    let from = script
        .find(&marker)
        .unwrap_or_else(|| panic!("no {marker} in {script}"))
        + marker.len();
    let digits: String = script[from..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap()
}

#[test]
fn the_kubernetes_job_is_indexed_and_its_pods_run_every_shard_once() {
    let manifests = documents("deploy/kubernetes/campaign.yaml");
    let job = manifests
        .iter()
        .find(|document| text(document, "kind") == "Job")
        .expect("a Job");
    let claim = manifests
        .iter()
        .find(|document| text(document, "kind") == "PersistentVolumeClaim")
        .expect("a PersistentVolumeClaim");
    assert_eq!(text(job, "apiVersion"), "batch/v1");
    assert_eq!(text(job, "spec.completionMode"), "Indexed");
    let completions = number(job, "spec.completions");
    assert!(number(job, "spec.parallelism") <= completions);
    let pod = at(job, "spec.template.spec");
    assert_eq!(text(pod, "restartPolicy"), "Never");
    let container = at(pod, "containers.0");
    let script = text(container, "command.2");
    assert_eq!(text(container, "command.0"), "sh");
    assert_eq!(
        shard_count(script, "$((JOB_COMPLETION_INDEX + 1))"),
        completions,
        "the shard count is the Job's completions"
    );
    assert!(script.contains("ward run --seeds \"$SEEDS\" --shard "));
    assert!(script.contains("--json"));
    let mount = text(container, "volumeMounts.0.mountPath");
    let volume = text(pod, "volumes.0.persistentVolumeClaim.claimName");
    assert_eq!(volume, text(claim, "metadata.name"));
    let results = &documents("deploy/kubernetes/results.yaml")[0];
    assert_eq!(
        text(results, "spec.volumes.0.persistentVolumeClaim.claimName"),
        volume
    );
    assert_eq!(
        text(results, "spec.containers.0.image"),
        text(container, "image")
    );
    let environment = at(container, "env").as_sequence().unwrap();
    let variable = |name: &str| {
        environment
            .iter()
            .find(|variable| text(variable, "name") == name)
            .map(|variable| text(variable, "value").to_owned())
            .unwrap_or_else(|| panic!("no {name}"))
    };
    assert_eq!(variable("RESULTS"), mount);
    ward_sim::cli::run::parse_seeds(&variable("SEEDS")).unwrap();

    // Each pod's script, as the Job runs it: the index in JOB_COMPLETION_INDEX, the
    // environment of the manifest but a small seed range and a local folder for the volume.
    let volume = folder("kubernetes");
    let pods: Vec<_> = (0..completions)
        .map(|index| {
            Command::new("sh")
                .args(["-c", script])
                .env("PATH", path_with_ward())
                .env("JOB_COMPLETION_INDEX", index.to_string())
                .env("SEEDS", "0..48")
                .env("BUG", "")
                .env("RESULTS", &volume)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (index, pod) in pods.into_iter().enumerate() {
        let output = pod.wait_with_output().unwrap();
        let log = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{log}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        // The summary is the last line of the pod's log too.
        assert_eq!(last_line(&log)["shard"]["index"], index + 1);
    }
    let summaries: Vec<PathBuf> = (1..=completions)
        .map(|shard| volume.join(format!("shard-{shard}/summary.json")))
        .collect();
    let output = merge(&summaries);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let merged = last_line(&String::from_utf8_lossy(&output.stdout));
    assert_eq!(merged["seeds"], 48);
    std::fs::remove_dir_all(&volume).unwrap();
}

/// The `run` script of the step whose name holds `name_part`.
fn step_script(job: &Yaml, name_part: &str) -> String {
    at(job, "steps")
        .as_sequence()
        .unwrap()
        .iter()
        .find(|step| {
            step.get("name")
                .and_then(Yaml::as_str)
                .is_some_and(|name| name.contains(name_part))
        })
        .map(|step| text(step, "run").to_owned())
        .unwrap_or_else(|| panic!("no step named …{name_part}…"))
}

/// Runs a workflow script with bash as GitHub Actions runs `shell: bash` steps.
fn run_step(script: &str, folder: &Path, seeds: &str, bug: &str) -> Output {
    Command::new("bash")
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
        .current_dir(folder)
        .env("SEEDS", seeds)
        .env("BUG", bug)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn the_github_workflow_runs_a_matrix_of_shards_and_merges_them() {
    let workflow = &documents("deploy/github-actions/campaign.yml")[0];
    assert!(at(workflow, "on").get("workflow_dispatch").is_some());
    assert_eq!(text(workflow, "defaults.run.shell"), "bash");
    let jobs = at(workflow, "jobs");
    let shard_job = at(jobs, "shard");
    let matrix: Vec<u64> = at(shard_job, "strategy.matrix.shard")
        .as_sequence()
        .unwrap()
        .iter()
        .map(|shard| shard.as_u64().unwrap())
        .collect();
    let shard_script = step_script(shard_job, "Run shard");
    let shards = shard_count(&shard_script, "${{ matrix.shard }}");
    assert_eq!(
        matrix,
        (1..=shards).collect::<Vec<_>>(),
        "the matrix is 1..N"
    );
    assert_eq!(
        at(shard_job, "strategy.fail-fast").as_bool(),
        Some(false),
        "every shard runs to the end"
    );
    assert!(shard_script.contains("--json"));
    let uploads: Vec<&str> = at(shard_job, "steps")
        .as_sequence()
        .unwrap()
        .iter()
        .filter(|step| {
            step.get("uses")
                .and_then(Yaml::as_str)
                .is_some_and(|uses| uses.starts_with("actions/upload-artifact@"))
        })
        .map(|step| text(step, "with.name"))
        .collect();
    assert_eq!(
        uploads,
        ["shard-${{ matrix.shard }}"],
        "one artifact per shard"
    );
    let merge_job = at(jobs, "merge");
    assert_eq!(text(merge_job, "needs"), "shard");
    let merge_script = step_script(merge_job, "Merge");
    assert!(merge_script.contains("ward merge"));

    // The shard steps as the runners run them (each in its own workspace), the artifacts
    // laid out as download-artifact lays them out, then the merge step: it fails on a
    // violation.
    for (bug, status) in [("", 0), ("readonly-offers-writes", 1)] {
        let runner = folder(if bug.is_empty() {
            "github"
        } else {
            "github-bug"
        });
        std::fs::create_dir_all(runner.join("bin")).unwrap();
        link_ward(&runner.join("bin/ward"));
        for &shard in &matrix {
            let workspace = runner.join(format!("shards/shard-{shard}"));
            std::fs::create_dir_all(workspace.join("bin")).unwrap();
            link_ward(&workspace.join("bin/ward"));
            let script = shard_script.replace("${{ matrix.shard }}", &shard.to_string());
            let output = run_step(&script, &workspace, "0..48", bug);
            assert_eq!(
                output.status.code(),
                Some(0),
                "a violation is a finding, not a failed shard: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            // The artifact holds what the step left in results/.
            std::fs::remove_dir_all(workspace.join("bin")).unwrap();
            let results = workspace.join("results");
            for entry in std::fs::read_dir(&results).unwrap() {
                let entry = entry.unwrap();
                std::fs::rename(entry.path(), workspace.join(entry.file_name())).unwrap();
            }
        }
        let output = run_step(&merge_script, &runner, "0..48", bug);
        assert_eq!(
            output.status.code(),
            Some(status),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let merged = last_line(&std::fs::read_to_string(runner.join("merged.json")).unwrap());
        assert_eq!(merged["seeds"], 48);
        assert_eq!(merged["violations"].as_u64().unwrap() > 0, status == 1);
        std::fs::remove_dir_all(&runner).unwrap();
    }
}

/// Puts the built `ward` at `path`, as the artifact download of a workflow job does.
fn link_ward(path: &Path) {
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_ward"), path).unwrap();
}

#[test]
fn the_dockerfile_builds_ward_with_the_campaign_profile_into_a_slim_image() {
    let dockerfile = read("deploy/Dockerfile");
    let stages: Vec<&str> = dockerfile
        .lines()
        .filter(|line| line.starts_with("FROM "))
        .collect();
    assert_eq!(stages.len(), 2, "a build stage and a runtime stage");
    assert!(stages[0].starts_with("FROM rust:") && stages[0].ends_with(" AS build"));
    assert!(stages[1].contains("slim"));
    let manifest = read("Cargo.toml");
    assert!(manifest.contains("[profile.campaign]"));
    assert!(dockerfile.contains("cargo build --locked --profile campaign -p ward-sim --bin ward"));
    assert!(dockerfile.contains("target/campaign/ward"));
    assert!(dockerfile.contains("ENTRYPOINT [\"ward\"]"));
    // The Rust of the build stage is at least the workspace's rust-version.
    let version =
        |text: &str| -> Vec<u64> { text.split('.').map(|part| part.parse().unwrap()).collect() };
    let image = stages[0]["FROM rust:".len()..].split('-').next().unwrap();
    let required = manifest
        .lines()
        .find_map(|line| line.strip_prefix("rust-version = "))
        .unwrap()
        .trim_matches('"');
    assert!(version(image) >= version(required), "{image} < {required}");
    // The image the Kubernetes manifests run is the one the Dockerfile says to tag.
    assert!(dockerfile.contains("-t ward:local"));
    let ignored = read(".dockerignore");
    assert!(ignored.lines().any(|line| line == "/target"));
}
