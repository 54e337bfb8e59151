//! The page's form fields as the user typed them: read here, not in the page, so
//! that every field's error is a sentence in plain words naming that field ("N:
//! "abc" is not a whole number ...") and the rules live beside the scenario's.

use serde::{Deserialize, Serialize};

use crate::error::WebError;
use crate::limits::{MAX_MEMBERS, MAX_SEED};
use crate::scenario::{AlgorithmChoice, PreemptionChoice, QuorumChoice, Settings};

/// The settings panel's fields, as text.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Fields {
    /// N.
    pub n: String,
    /// `classic`, `modified` or `ring`.
    pub algorithm: String,
    /// `none` or `majority`.
    pub quorum: String,
    /// `always` or `never`.
    pub preemption: String,
    /// The seed.
    pub seed: String,
    /// The loss, in percent.
    pub loss: String,
}

/// One field's problem: the field's element id in the page, and the sentence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FieldError {
    /// The field (`n`, `seed`, `loss`, ...).
    pub field: &'static str,
    /// What is wrong and what to type instead.
    pub message: String,
}

impl Fields {
    /// The settings, or one error per field that is wrong.
    pub fn settings(&self) -> Result<Settings, Vec<FieldError>> {
        let mut errors = Vec::new();
        let mut field = |field: &'static str, result: Result<u64, String>| {
            result.unwrap_or_else(|message| {
                errors.push(FieldError { field, message });
                0
            })
        };
        let n = field("n", number("N", &self.n, 2, MAX_MEMBERS));
        let seed = field("seed", number("seed", &self.seed, 0, MAX_SEED));
        let loss_percent = field("loss", number("loss %", &self.loss, 0, 100));
        let algorithm = match self.algorithm.as_str() {
            "classic" => AlgorithmChoice::Classic,
            "modified" => AlgorithmChoice::Modified,
            "ring" => AlgorithmChoice::Ring,
            other => {
                errors.push(FieldError {
                    field: "algorithm",
                    message: format!("algorithm \"{other}\": choose classic, modified or ring"),
                });
                AlgorithmChoice::Classic
            }
        };
        let quorum = match self.quorum.as_str() {
            "none" => QuorumChoice::None,
            "majority" => QuorumChoice::Majority,
            other => {
                errors.push(FieldError {
                    field: "quorum",
                    message: format!("quorum \"{other}\": choose none or majority"),
                });
                QuorumChoice::None
            }
        };
        let preemption = match self.preemption.as_str() {
            "always" => PreemptionChoice::Always,
            "never" => PreemptionChoice::Never,
            other => {
                errors.push(FieldError {
                    field: "preemption",
                    message: format!("preemption \"{other}\": choose always or never"),
                });
                PreemptionChoice::Always
            }
        };
        if errors.is_empty() {
            Ok(Settings {
                n,
                algorithm,
                quorum,
                preemption,
                seed,
                loss_percent,
            })
        } else {
            Err(errors)
        }
    }
}

/// A whole number typed into a field named `name`, in `low..=high`.
fn number(name: &str, text: &str, low: u64, high: u64) -> Result<u64, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err(format!(
            "{name} is empty: type a whole number from {low} to {high}"
        ));
    }
    match text.parse::<u64>() {
        Ok(value) if (low..=high).contains(&value) => Ok(value),
        Ok(value) => Err(format!("{name} = {value}: choose {low} to {high}")),
        Err(_) if text.starts_with('-') && text[1..].bytes().all(|b| b.is_ascii_digit()) => Err(
            format!("{name} = {text} is below zero: choose {low} to {high}"),
        ),
        Err(_) if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => {
            Err(format!("{name} = {text}: choose {low} to {high}"))
        }
        Err(_) => Err(format!(
            "{name}: \"{text}\" is not a whole number: type {low} to {high}"
        )),
    }
}

/// The initiators box ("4" or "1, 3"): the processes of a cluster of `n` that
/// call an election, each once, in the order typed.
pub fn initiators(text: &str, n: u64) -> Result<Vec<u64>, WebError> {
    let example = "e.g. 4 or 1, 3";
    let words: Vec<&str> = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|word| !word.is_empty())
        .collect();
    if words.is_empty() {
        return Err(WebError::Initiators(format!(
            "type the processes that call the election, {example}"
        )));
    }
    let mut ids = Vec::with_capacity(words.len());
    for word in words {
        let id: u64 = word.parse().map_err(|_| {
            WebError::Initiators(format!(
                "\"{word}\" is not a process number: type numbers from 1 to {n}, {example}"
            ))
        })?;
        if !(1..=n).contains(&id) {
            return Err(WebError::Initiators(format!(
                "there is no process {id}: this cluster has processes 1 to {n}"
            )));
        }
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}
