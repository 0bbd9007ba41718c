//! Crash plan files: a [`Plan`] as JSON, checked against `sim/crash-plan.schema.json` (embedded
//! as [`CRASH_PLAN_SCHEMA`]) before it is read, the way scenario files are (SPEC §10). `ward
//! run --crashes` writes its first failure's plan, shrunk, as one; `ward replay FILE` explores
//! it again. A bad file is refused with the JSON Pointer of its fault.
//!
//! ```json
//! {"version": 1, "bug": "write-replayed-on-resume",
//!  "crashPlan": {"seed": 21, "secrets": ["cfgA2b3C4d5E6f7G8h9J0k1"], "planted": ["Q6x…"],
//!   "runs": [{"prompt": "Mark the last swing high.", "readOnly": false, "turnsMax": 2,
//!             "disabled": [], "replies": [[{"id": "call_1", "name": "drawing_create",
//!             "arguments": "{\"kind\":\"horizontal-line\",\"paneId\":\"main\",\"anchors\":[{\"price\":7}]}"}], []]}],
//!   "crashes": [{"at": 17, "kind": "kill"}]}}
//! ```
//!
//! Beyond the schema, a plan's secrets must be values a run accepts (R24), its call ids,
//! with their secrets redacted as the runtime names them (R22), unique in the session (the
//! explorer names a body by its run and its id), and no call may say 8 characters of a
//! planted credential: I18 takes those for what only the prompt holds, so a model that says
//! them would make every runtime fail it.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use ward_core::fault::Fault;
use ward_core::guard::SecretGuard;
use ward_core::redact::Redactor;

use super::plan::{CrashKind, Plan};
use crate::catalogue::SECRET_RUN_CHARS_MIN;
use crate::scenario::{self, ScenarioError};

/// The JSON Schema of crash plan files.
pub const CRASH_PLAN_SCHEMA: &str = include_str!("../../crash-plan.schema.json");

/// A crash plan file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanFile {
    /// The file format's version: 1.
    pub version: u32,
    /// What the plan shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The seeded bug switched on, by name.
    #[serde(default)]
    pub bug: Option<String>,
    /// The plan.
    pub crash_plan: Plan,
}

impl PlanFile {
    /// A file holding `plan`, with `bug` switched on.
    pub fn new(plan: Plan, bug: Option<Fault>, description: String) -> PlanFile {
        PlanFile {
            version: 1,
            description: Some(description),
            bug: bug.map(|bug| bug.name().to_owned()),
            crash_plan: plan,
        }
    }

    /// Whether `value` is meant as a crash plan file (it names `crashPlan`), not a scenario.
    pub fn is_plan(value: &serde_json::Value) -> bool {
        value.get("crashPlan").is_some()
    }

    /// Reads a crash plan file; `path` names it in errors (a bad file is refused as a bad
    /// scenario file is).
    pub fn from_json(text: &str, path: &str) -> Result<PlanFile, ScenarioError> {
        Self::from_value(scenario::parse_json(text, path)?, path)
    }

    /// Reads a crash plan file already parsed as JSON.
    pub fn from_value(value: serde_json::Value, path: &str) -> Result<PlanFile, ScenarioError> {
        static VALIDATOR: OnceLock<Result<jsonschema::Validator, String>> = OnceLock::new();
        let invalid = |pointer: String, reason: String| ScenarioError::Invalid {
            path: path.to_owned(),
            pointer,
            reason,
        };
        let file: PlanFile =
            scenario::read_checked(value, path, (&VALIDATOR, CRASH_PLAN_SCHEMA, "crash plan"))?;
        if let Err(reason) = file.fault() {
            return Err(invalid("/bug".to_owned(), reason));
        }
        // Crash `n` is process `n`'s, so they come in order; and a plan crashes at storage
        // calls of ward's core or at lockstep boundaries of any runtime, never both.
        let crashes = &file.crash_plan.crashes;
        if let Some(index) = (1..crashes.len()).find(|&i| crashes[i].at < crashes[i - 1].at) {
            return Err(invalid(
                format!("/crashPlan/crashes/{index}/at"),
                "the crashes are not in order of `at`".to_owned(),
            ));
        }
        let drops = crashes
            .iter()
            .filter(|crash| crash.kind == CrashKind::Drop)
            .count();
        if drops > 0 && drops < crashes.len() {
            return Err(invalid(
                "/crashPlan/crashes".to_owned(),
                "drops (at lockstep boundaries) are mixed with crashes at storage calls".to_owned(),
            ));
        }
        // The secrets as a run takes them (R14, R24): a value the core refuses would stop every
        // run at its start, which is a bad file, not a finding.
        let redactor = Redactor::new(&file.crash_plan.secrets)
            .map_err(|error| invalid("/crashPlan/secrets".to_owned(), error.to_string()))?;
        // Bodies are named by their guarded ids (R22): two ids that differ only in a secret
        // would name one body.
        let guard = SecretGuard::for_redactor(&redactor);
        let mut ids = BTreeSet::new();
        for (run, script) in file.crash_plan.runs.iter().enumerate() {
            for (turn, calls) in script.replies.iter().enumerate() {
                for (index, call) in calls.iter().enumerate() {
                    let at = format!("/crashPlan/runs/{run}/replies/{turn}/{index}");
                    let fields = [("id", &call.id), ("name", &call.name)];
                    let arguments = [("arguments", &call.arguments)];
                    for (field, text) in fields.into_iter().chain(arguments) {
                        if let Some(part) = says_a_planted_part(text, &file.crash_plan.planted) {
                            return Err(invalid(
                                format!("{at}/{field}"),
                                format!(
                                    "the model says 8 characters of planted credential {part}: I18 takes a planted credential for what only the prompt holds"
                                ),
                            ));
                        }
                    }
                    if !ids.insert(guard.text(&call.id).into_owned()) {
                        return Err(invalid(
                            format!("{at}/id"),
                            format!(
                                "call id {:?} is used twice (with its secrets redacted): a plan's call ids are unique in its session",
                                call.id
                            ),
                        ));
                    }
                }
            }
        }
        Ok(file)
    }

    /// The file as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The seeded bug, parsed.
    pub fn fault(&self) -> Result<Option<Fault>, String> {
        crate::scenario::fault_named(self.bug.as_deref())
    }
}

/// The index of a planted credential of which `text` holds 8 consecutive characters (all of
/// it, when it is shorter), if one.
fn says_a_planted_part(text: &str, planted: &[String]) -> Option<usize> {
    planted.iter().position(|part| {
        let starts: Vec<usize> = part
            .char_indices()
            .map(|(at, _)| at)
            .chain([part.len()])
            .collect();
        let width = SECRET_RUN_CHARS_MIN.min(starts.len() - 1);
        starts
            .windows(width + 1)
            .any(|window| text.contains(&part[window[0]..window[width]]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crash::generate;

    #[test]
    fn a_plan_file_reads_back_as_written() {
        let mut plan = generate(21);
        plan.draw_crashes(40);
        let file = PlanFile::new(plan, "write-replayed-on-resume".parse().ok(), "a".into());
        let read = PlanFile::from_json(&file.to_json(), "plan.json").unwrap();
        assert_eq!(read, file);
        assert!(PlanFile::is_plan(
            &serde_json::from_str(&file.to_json()).unwrap()
        ));
    }

    #[test]
    fn a_bad_plan_file_is_refused_at_the_pointer_of_its_fault() {
        let mut file = serde_json::to_value(PlanFile::new(generate(3), None, "b".into())).unwrap();
        file["crashPlan"]["crashes"] = serde_json::json!([{"at": 3, "kind": "meteor"}]);
        let refused = PlanFile::from_value(file.clone(), "plan.json").unwrap_err();
        assert!(
            matches!(&refused, ScenarioError::Schema { pointer, .. } if pointer == "/crashPlan/crashes/0/kind"),
            "{refused}"
        );
        file["crashPlan"]["crashes"] = serde_json::json!([]);
        file["crashPlan"]["runs"][0]["replies"] = serde_json::json!([
            [{"id": "call_1", "name": "panes_list", "arguments": "{}"}],
            [{"id": "call_1", "name": "panes_list", "arguments": "{}"}]
        ]);
        let refused = PlanFile::from_value(file.clone(), "plan.json").unwrap_err();
        assert!(
            matches!(&refused, ScenarioError::Invalid { pointer, .. } if pointer == "/crashPlan/runs/0/replies/1/0/id"),
            "{refused}"
        );
        file["crashPlan"]["runs"][0]["replies"] = serde_json::json!([
            [{"id": "x_cfg-secret-one-AAAA", "name": "panes_list", "arguments": "{}"}],
            [{"id": "x_cfg-secret-two-BBBB", "name": "panes_list", "arguments": "{}"}]
        ]);
        file["crashPlan"]["secrets"] =
            serde_json::json!(["cfg-secret-one-AAAA", "cfg-secret-two-BBBB"]);
        let refused = PlanFile::from_value(file.clone(), "plan.json").unwrap_err();
        assert!(
            matches!(&refused, ScenarioError::Invalid { pointer, .. } if pointer == "/crashPlan/runs/0/replies/1/0/id"),
            "{refused}"
        );
        let planted = file["crashPlan"]["planted"][0].as_str().unwrap().to_owned();
        file["crashPlan"]["runs"][0]["replies"] = serde_json::json!([[{"id": "call_1",
            "name": "web_search", "arguments": format!("{{\"query\":\"x{}\"}}", &planted[3..11])}]]);
        let refused = PlanFile::from_value(file.clone(), "plan.json").unwrap_err();
        assert!(
            matches!(&refused, ScenarioError::Invalid { pointer, .. } if pointer == "/crashPlan/runs/0/replies/0/0/arguments"),
            "{refused}"
        );
        file["crashPlan"]["runs"][0]["replies"][0][0]["arguments"] =
            serde_json::json!(format!("{{\"query\":\"x{}\"}}", &planted[3..10]));
        assert!(PlanFile::from_value(file.clone(), "plan.json").is_ok());
        file["crashPlan"]["secrets"] = serde_json::json!(["REDACTED"]);
        let refused = PlanFile::from_value(file.clone(), "plan.json").unwrap_err();
        assert!(
            matches!(&refused, ScenarioError::Invalid { pointer, .. } if pointer == "/crashPlan/secrets"),
            "{refused}"
        );
        file["crashPlan"]["secrets"] = serde_json::json!(["cfg\"quoted-value"]);
        let refused = PlanFile::from_value(file.clone(), "plan.json").unwrap_err();
        assert!(
            matches!(&refused, ScenarioError::Schema { pointer, .. } if pointer == "/crashPlan/secrets/0"),
            "{refused}"
        );
        file["crashPlan"]["secrets"] = serde_json::json!(["cfg-secret-one-AAAA"]);
        file["bug"] = serde_json::json!("no-such-bug");
        file["crashPlan"]["runs"][0]["replies"] = serde_json::json!([]);
        let refused = PlanFile::from_value(file, "plan.json").unwrap_err();
        assert!(
            matches!(&refused, ScenarioError::Invalid { pointer, .. } if pointer == "/bug"),
            "{refused}"
        );
        assert!(matches!(
            PlanFile::from_json("{", "plan.json"),
            Err(ScenarioError::Json { .. })
        ));
    }
}
