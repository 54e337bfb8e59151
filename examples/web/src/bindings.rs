//! The module's JavaScript face: [`WebSim`] wraps a [`Session`] and speaks JSON
//! strings, so the page needs no types of its own. Errors become JavaScript
//! exceptions with the error's text.

use wasm_bindgen::prelude::*;

use crate::clock::{MAX_TIME_TM, MAX_TIME_US};
use crate::error::WebError;
use crate::fields::{self, Fields};
use crate::limits::{MAX_ACTIONS, MAX_MEMBERS, MAX_SCENARIO_BYTES, MAX_SEED};
use crate::presets;
use crate::scenario::{Action, SCENARIO_VERSION, Scenario, Settings};
use crate::session::Session;

/// A simulated cluster, as the page holds it.
#[wasm_bindgen]
#[derive(Debug)]
pub struct WebSim {
    session: Session,
}

fn js(error: WebError) -> JsError {
    JsError::new(&error.to_string())
}

/// The page itself sent JSON of the wrong shape: a bug of the page, not the user's.
fn json_error(error: serde_json::Error) -> JsError {
    JsError::new(&format!("the page sent a malformed request: {error}"))
}

#[wasm_bindgen]
impl WebSim {
    /// A fresh cluster from settings as JSON (`{"n":10,"algorithm":"classic",...}`).
    #[wasm_bindgen(constructor)]
    pub fn new(settings: &str) -> Result<WebSim, JsError> {
        let settings: Settings = serde_json::from_str(settings).map_err(json_error)?;
        let session = Session::new(settings).map_err(js)?;
        Ok(WebSim { session })
    }

    /// The settings the page's fields describe (JSON of their texts, `{"n":"10",
    /// "algorithm":"classic",...}`), as `{"settings":{...}}`, or one plain-words
    /// error per wrong field as `{"errors":[{"field":"n","message":"..."}]}`.
    #[wasm_bindgen(js_name = checkFields)]
    pub fn check_fields(fields: &str) -> Result<String, JsError> {
        let fields: Fields = serde_json::from_str(fields).map_err(json_error)?;
        Ok(match fields.settings() {
            Ok(settings) => serde_json::json!({ "settings": settings }),
            Err(errors) => serde_json::json!({ "errors": errors }),
        }
        .to_string())
    }

    /// The state a saved scenario (JSON) describes, replayed at once.
    #[wasm_bindgen(js_name = fromScenario)]
    pub fn from_scenario(scenario: &str) -> Result<WebSim, JsError> {
        let scenario = Scenario::from_json(scenario).map_err(js)?;
        let session = Session::from_scenario(&scenario).map_err(js)?;
        Ok(WebSim { session })
    }

    /// A saved scenario (JSON), checked against the page's limits, to be replayed
    /// with [`catch_up`](Self::catch_up) in slices between frames.
    #[wasm_bindgen(js_name = loadScenario)]
    pub fn load_scenario(scenario: &str) -> Result<WebSim, JsError> {
        let scenario = Scenario::from_json(scenario).map_err(js)?;
        let session = Session::loading(&scenario).map_err(js)?;
        Ok(WebSim { session })
    }

    /// Replays at most `events` simulator events of a loading scenario; `true`
    /// once it has reached the time it was saved at.
    #[wasm_bindgen(js_name = catchUp)]
    pub fn catch_up(&mut self, events: u32) -> Result<bool, JsError> {
        self.session.catch_up(u64::from(events)).map_err(js)
    }

    /// How far a loading scenario has got, 0 to 1.
    pub fn loaded(&self) -> f64 {
        self.session.loaded()
    }

    /// The page's limits, as JSON: what the fields and scenarios may hold.
    pub fn limits() -> String {
        serde_json::json!({
            "max_members": MAX_MEMBERS,
            "max_seed": MAX_SEED,
            "max_time_tm": MAX_TIME_TM,
            "max_time_us": MAX_TIME_US,
            "max_actions": MAX_ACTIONS,
            "max_scenario_bytes": MAX_SCENARIO_BYTES,
            "scenario_version": SCENARIO_VERSION,
        })
        .to_string()
    }

    /// The "Bully Algorithm Dance"'s experiment `number` (1 to 5) under these settings (JSON).
    pub fn preset(number: u8, settings: &str) -> Result<WebSim, JsError> {
        let settings: Settings = serde_json::from_str(settings).map_err(json_error)?;
        let scenario = presets::dance_experiment(number, &settings).map_err(js)?;
        let session = Session::from_scenario(&scenario).map_err(js)?;
        Ok(WebSim { session })
    }

    /// The titles of the "Bully Algorithm Dance"'s experiments, one a line.
    #[wasm_bindgen(js_name = presetTitles)]
    pub fn preset_titles() -> String {
        presets::TITLES.join("\n")
    }

    /// The scenario that rebuilds this state, as JSON.
    pub fn scenario(&self) -> String {
        self.session.scenario().to_json()
    }

    /// The same scenario, indented, for a file.
    #[wasm_bindgen(js_name = scenarioFile)]
    pub fn scenario_file(&self) -> String {
        self.session.scenario().to_pretty_json()
    }

    /// The processes typed into the initiators box ("4" or "1, 3") each call an
    /// election now; nothing happens unless every one of them can.
    #[wasm_bindgen(js_name = electAll)]
    pub fn elect_all(&mut self, text: &str) -> Result<(), JsError> {
        let ids = fields::initiators(text, self.session.settings().n).map_err(js)?;
        if let Some(&down) = ids
            .iter()
            .find(|&&id| !self.session.simulation().is_up(bully_core::NodeId(id)))
        {
            return Err(js(WebError::Down(down)));
        }
        for node in ids {
            self.session.act(Action::Elect { node }).map_err(js)?;
        }
        Ok(())
    }

    /// Applies an action (JSON, e.g. `{"do":"crash","node":10}`) now.
    pub fn act(&mut self, action: &str) -> Result<(), JsError> {
        let action: Action = serde_json::from_str(action).map_err(json_error)?;
        self.session.act(action).map_err(js)
    }

    /// Runs `us` microseconds of simulated time.
    pub fn advance(&mut self, us: f64) -> Result<(), JsError> {
        // The page's clock is a float; a negative or NaN step is no step.
        let us = if us.is_finite() && us > 0.0 {
            us as u64
        } else {
            0
        };
        self.session.advance(us).map_err(js)
    }

    /// Runs until the next election message lands; `false` if none is coming.
    #[wasm_bindgen(js_name = stepMessage)]
    pub fn step_message(&mut self) -> Result<bool, JsError> {
        self.session.step_message().map_err(js)
    }

    /// Runs until the election is over in every part of the network; `false` if
    /// it did not end within the time limit.
    #[wasm_bindgen(js_name = runToEnd)]
    pub fn run_to_end(&mut self) -> Result<bool, JsError> {
        self.session.run_to_end().map_err(js)
    }

    /// What to draw now, as JSON (see `Frame`).
    pub fn frame(&self) -> String {
        self.session.frame().to_json()
    }

    /// The episode as Soundarabai et al.'s simulator logged it.
    #[wasm_bindgen(js_name = paperLog)]
    pub fn paper_log(&self) -> String {
        self.session.paper_log()
    }

    /// The episode as a Mermaid sequence diagram.
    pub fn mermaid(&self) -> String {
        self.session.mermaid()
    }
}
