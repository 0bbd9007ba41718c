//! What each tool body does in a run: its latency, and the faults, slow bodies and injected
//! instructions the misbehaviours give it.

use std::sync::Arc;

use crate::scenario::{Effect, LeakAt, ToolBehaviour};

use super::edges::around;
use super::plan::Catalogue;
use super::runs::{FirstBatch, RunPlan};
use super::{Generator, Misbehaviour};

impl<'p> Generator<'p> {
    /// The behaviours of the run's tools, drawn in name order.
    pub(super) fn behaviours(&mut self, plan: &mut RunPlan<'p>) {
        let catalogue: &Catalogue = self.catalogue;
        debug_assert!(plan.tools.is_empty());
        plan.tools = catalogue
            .registered
            .iter()
            .filter_map(|tool| {
                let behaviour = self.rng.percent(60).then(|| ToolBehaviour {
                    latency_ms: self.rng.range(1, 40),
                    effect: Effect::None,
                })?;
                played(&tool.name).then(|| (Arc::clone(&tool.name), behaviour))
            })
            .collect();
        if self.fire(Misbehaviour::ToolFaults) {
            self.tool_faults(plan);
        }
        if self.fire(Misbehaviour::EdgeDeadline) {
            self.deadline_edge(plan);
        } else if self.fire(Misbehaviour::SlowTools) {
            let timeout = self.rng.range(1_000, 3_000);
            plan.limits.inactivity_timeout_ms = Some(timeout);
            let slow = Arc::clone(self.rng.pick(&self.catalogue.reads));
            let latency_ms = timeout + self.rng.range(1, 2_000);
            if played(&slow) {
                plan.tools.entry(slow).or_default().latency_ms = latency_ms;
            }
        }
        if self.fire(Misbehaviour::FollowInjection) {
            self.injection(plan);
        }
    }

    /// One or two bodies that fail, panic or leak a configured value (in their data or their
    /// error), and in a run that may write, a write that fails after doing part of its work.
    fn tool_faults(&mut self, plan: &mut RunPlan<'p>) {
        for _ in 0..self.rng.range(1, 2) {
            let name = Arc::clone(&self.rng.pick(&self.catalogue.registered).name);
            // Half of the faults leak, two in three of those in data: what R22's guard must
            // keep whole around the secret.
            let effect = match self.rng.below(4) {
                0 => Effect::Fail,
                1 => Effect::Panic,
                _ => match plan.configured.first() {
                    Some(label) => Effect::LeakSecret {
                        label: label.clone(),
                        fail: self.rng.percent(33),
                        at: *self.rng.pick(&LeakAt::ALL),
                    },
                    None => Effect::Fail,
                },
            };
            if played(&name) {
                plan.tools.entry(name).or_default().effect = effect;
            }
        }
        if !plan.read_only {
            let write = self.rng.pick(&[
                "drawings_copy",
                "pane_replace_content",
                "settings_update",
                "drawing_create",
            ]);
            plan.tools.entry(Arc::from(*write)).or_default().effect = Effect::Fail;
        }
    }

    /// A read whose result carries an instruction to call a destructive or switched-off tool.
    fn injection(&mut self, plan: &mut RunPlan<'p>) {
        let carrier: Arc<str> =
            Arc::from(*self.rng.pick(&["web_search", "panes_list", "settings_get"]));
        let target = if plan.disabled.is_empty() || self.rng.percent(60) {
            (*self.rng.pick(&[
                "drawings_clear",
                "panes_clear",
                "settings_reset",
                "comparisons_clear",
            ]))
            .to_owned()
        } else {
            self.rng.pick(&plan.disabled).clone()
        };
        plan.tools.entry(carrier).or_default().effect = Effect::Inject {
            tool: target,
            arguments: "{}".to_owned(),
        };
    }

    /// A tool that ends the inactivity timeout − 1, exactly or + 1 ms after the last activity
    /// (R19). That activity is the run's start, or, just before the timeout would fire, the
    /// provider's reply (it answers at timeout − 1 ms) or another call of the same parallel
    /// batch finishing (its body takes timeout − 1 ms); either resets the deadline, so the slow
    /// body ends at the new deadline ± 1 ms.
    fn deadline_edge(&mut self, plan: &mut RunPlan<'p>) {
        let timeout = self.rng.range(1_000, 3_000);
        plan.limits.inactivity_timeout_ms = Some(timeout);
        let latency = around(&mut self.rng, timeout);
        let parallel = &self.catalogue.parallel_reads;
        let slow = match self.rng.below(3) {
            0 => {
                let slow = Arc::clone(&self.rng.pick(&self.catalogue.registered).name);
                if played(&slow) {
                    plan.tools.entry(slow).or_default().latency_ms = latency;
                }
                return;
            }
            1 => {
                let slow = Arc::clone(self.rng.pick(parallel));
                plan.first_batch = Some(FirstBatch::AfterReply {
                    delay_ms: timeout - 1,
                    tool: Arc::clone(&slow),
                });
                plan.tools.entry(Arc::clone(&slow)).or_default().latency_ms = latency;
                slow
            }
            _ => {
                // Two different tools: the second is 1 to len − 1 places after the first.
                let first = self.rng.range_usize(0, parallel.len() - 1);
                let second = (first + self.rng.range_usize(1, parallel.len() - 1)) % parallel.len();
                let (quick, slow) = (Arc::clone(&parallel[first]), Arc::clone(&parallel[second]));
                plan.tools.entry(Arc::clone(&quick)).or_default().latency_ms = timeout - 1;
                plan.tools.entry(Arc::clone(&slow)).or_default().latency_ms = timeout - 1 + latency;
                plan.first_batch = Some(FirstBatch::Pair {
                    quick,
                    slow: Arc::clone(&slow),
                });
                slow
            }
        };
        // The slow body must do no other work the scenario drew for it.
        plan.tools.entry(slow).or_default().effect = Effect::None;
    }
}

/// Whether ward plays `tool`'s body, and so gives it a behaviour: every tool's but
/// `ask_user`'s, which is the runtime's own (it asks the user, and the user's delay is the
/// answer's).
fn played(tool: &str) -> bool {
    tool != "ask_user"
}
