//! A run's prompt: a request in plain words, with planted secrets and the run's configured
//! values in it, alone, touching, overlapping and nested (R24–R29).

use crate::scenario::SecretShape;

use super::runs::RunPlan;
use super::vocabulary::{self, PROMPT_SENTENCES};
use super::{Generator, Misbehaviour, secrets};

/// Appends `" {text}."` to `prompt`: one more sentence of a generated prompt.
fn push_sentence(prompt: &mut String, text: &str) {
    prompt.push(' ');
    prompt.push_str(text);
    prompt.push('.');
}

impl<'p> Generator<'p> {
    /// The prompt, with planted secrets and the run's configured values in it.
    pub(super) fn prompt(&mut self, plan: &mut RunPlan<'p>) -> String {
        let mut prompt = String::from(*self.rng.pick(PROMPT_SENTENCES));
        if self.rng.percent(55) {
            for _ in 0..self.rng.range(1, 2) {
                let secret = if self.fire(Misbehaviour::EdgeSecrets) {
                    let chars = if self.rng.percent(20) { 7 } else { 8 };
                    secrets::configured_of(&mut self.rng, &mut self.labels, chars)
                } else {
                    secrets::configured(&mut self.rng, &mut self.labels)
                };
                push_sentence(&mut prompt, &vocabulary::gives_key(&secret.value));
                plan.configured.push(secret.label.clone());
                self.secrets.push(secret);
            }
        }
        if self.rng.percent(25) {
            let (secret, planting) =
                secrets::configured_touching_a_key(&mut self.rng, &mut self.labels);
            push_sentence(&mut prompt, &planting.text);
            plan.configured.push(secret.label.clone());
            self.secrets.push(secret);
            self.secrets.extend(planting.parts);
        }
        if self.rng.percent(15) {
            let (first, second, text) =
                secrets::overlapping_configured(&mut self.rng, &mut self.labels);
            push_sentence(&mut prompt, &text);
            plan.configured.push(first.label.clone());
            plan.configured.push(second.label.clone());
            self.secrets.push(first);
            self.secrets.push(second);
        }
        if self.fire(Misbehaviour::NestedSecrets) {
            let planting = secrets::nested(&mut self.rng, &mut self.labels);
            push_sentence(&mut prompt, &planting.text);
            plan.configured.extend(
                (planting.parts.iter())
                    .filter(|part| part.shape == SecretShape::Configured)
                    .map(|part| part.label.clone()),
            );
            self.secrets.extend(planting.parts);
        }
        if self.rng.percent(60) {
            for _ in 0..self.rng.range(1, 3) {
                let planting = match self.rng.below(4) {
                    _ if self.fire(Misbehaviour::EdgeKeys) => {
                        if self.rng.percent(50) {
                            secrets::shortest_key(&mut self.rng, &mut self.labels)
                        } else {
                            secrets::credential_at_threshold(&mut self.rng, &mut self.labels)
                        }
                    }
                    0 => secrets::credential(&mut self.rng, &mut self.labels),
                    1 => secrets::key(&mut self.rng, &mut self.labels),
                    2 => secrets::home_path(&mut self.rng, &mut self.labels),
                    _ => secrets::url_password(&mut self.rng, &mut self.labels),
                };
                push_sentence(&mut prompt, &planting.text);
                self.secrets.extend(planting.parts);
            }
        }
        prompt
    }
}
