//! R2: what ward's core's registration accepts and refuses, tried on a fixed table of tool
//! definitions at the edges of R2, each registered into a registry of its own (the duplicate
//! into one that already holds its name).
//!
//! R2: registration refuses an empty (after trim) name, label or description; a name outside
//! `[A-Za-z0-9_-]{1,64}`; a schema that does not compile; a duplicate name
//! (`TOOL_NAME_CONFLICT`); a destructive tool declared `parallel`.
//!
//! Registration happens before any run, so no scenario can exercise it; a registry that
//! accepts what R2 refuses (or refuses what it accepts) is a disagreement ([`super`]).

use serde_json::{Value, json};
use ward_core::registry::RegistryBuilder;
use ward_core::tool::{ExecutionMode, Safety, ToolContext, ToolSpec};

use crate::catalogue::TOOL_NAME_CHARS_MAX;

/// One definition and whether R2 accepts it.
struct Definition {
    what: String,
    name: String,
    label: &'static str,
    description: &'static str,
    parameters: Value,
    destructive: bool,
    sequential: bool,
    accepted: bool,
}

/// A definition R2 accepts, to vary one field of.
fn valid(what: &str) -> Definition {
    Definition {
        what: what.to_owned(),
        name: "probe_tool-1".to_owned(),
        label: "Probe",
        description: "Reads nothing.",
        parameters: json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
        destructive: false,
        sequential: false,
        accepted: true,
    }
}

fn definitions() -> Vec<Definition> {
    vec![
        valid("a read-only parallel tool"),
        Definition {
            name: "n".repeat(TOOL_NAME_CHARS_MAX),
            ..valid(&format!("a name of {TOOL_NAME_CHARS_MAX} characters"))
        },
        Definition {
            name: "n".repeat(TOOL_NAME_CHARS_MAX + 1),
            accepted: false,
            ..valid(&format!("a name of {} characters", TOOL_NAME_CHARS_MAX + 1))
        },
        Definition {
            name: "  ".to_owned(),
            accepted: false,
            ..valid("a blank name")
        },
        Definition {
            name: "probe tool".to_owned(),
            accepted: false,
            ..valid("a name with a space")
        },
        Definition {
            name: "naïve".to_owned(),
            accepted: false,
            ..valid("a name with a non-ASCII letter")
        },
        Definition {
            label: " ",
            accepted: false,
            ..valid("a blank label")
        },
        Definition {
            description: "",
            accepted: false,
            ..valid("an empty description")
        },
        Definition {
            parameters: json!({"type": "object", "properties": {"a": {"type": 12}}}),
            accepted: false,
            ..valid("a schema that does not compile")
        },
        Definition {
            destructive: true,
            accepted: false,
            ..valid("a destructive parallel tool")
        },
        Definition {
            destructive: true,
            sequential: true,
            ..valid("a destructive sequential tool")
        },
    ]
}

fn spec(definition: &Definition) -> ToolSpec {
    ToolSpec {
        name: definition.name.clone(),
        label: definition.label.to_owned(),
        description: definition.description.to_owned(),
        parameters: definition.parameters.clone(),
        safety: if definition.destructive {
            Safety::Destructive
        } else {
            Safety::ReadOnly
        },
        execution_mode: if definition.sequential {
            ExecutionMode::Sequential
        } else {
            ExecutionMode::Parallel
        },
    }
}

fn body(_context: &ToolContext, _input: Value) -> Result<Value, ward_core::envelope::ToolError> {
    Ok(Value::Null)
}

/// The first way registration differs from R2, if any.
pub fn disagreement() -> Option<String> {
    const CONFLICT: &str = "TOOL_NAME_CONFLICT";
    for definition in definitions() {
        let outcome = RegistryBuilder::new().register(spec(&definition), body);
        let conflict = outcome.as_ref().err().map(|error| error.code()) == Some(CONFLICT);
        if outcome.is_ok() != definition.accepted || conflict {
            let verdict = match &outcome {
                Ok(()) => "accepted".to_owned(),
                Err(error) => format!("refused ({}: {error})", error.code()),
            };
            return Some(format!(
                "R2 {} {}; registration {verdict}",
                if definition.accepted {
                    "accepts"
                } else {
                    "refuses"
                },
                definition.what
            ));
        }
    }
    let mut builder = RegistryBuilder::new();
    let first = valid("a tool");
    let again = builder
        .register(spec(&first), body)
        .and_then(|()| builder.register(spec(&first), body));
    match again {
        Err(error) if error.code() == CONFLICT => None,
        Err(error) => Some(format!(
            "R2 refuses a duplicate name with {CONFLICT}; registration refused it with {}",
            error.code()
        )),
        Ok(()) => Some("R2 refuses a duplicate name; registration accepted it".to_owned()),
    }
}
