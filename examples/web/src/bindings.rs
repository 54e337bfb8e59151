//! The module's JavaScript face: [`WebSim`] wraps a [`Session`] and speaks JSON
//! strings, so the page needs no types of its own. Errors become JavaScript
//! exceptions with the error's text.

use wasm_bindgen::prelude::*;

use crate::error::WebError;
use crate::presets;
use crate::scenario::{Action, Scenario, Settings};
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

fn json_error(error: serde_json::Error) -> JsError {
    js(WebError::Json(error.to_string()))
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

    /// The state a saved scenario (JSON) describes.
    #[wasm_bindgen(js_name = fromScenario)]
    pub fn from_scenario(scenario: &str) -> Result<WebSim, JsError> {
        let scenario = Scenario::from_json(scenario).map_err(js)?;
        let session = Session::from_scenario(&scenario).map_err(js)?;
        Ok(WebSim { session })
    }

    /// Seed 004's experiment `number` (1 to 5) under these settings (JSON).
    pub fn preset(number: u8, settings: &str) -> Result<WebSim, JsError> {
        let settings: Settings = serde_json::from_str(settings).map_err(json_error)?;
        let scenario = presets::seed004(number, &settings).map_err(js)?;
        let session = Session::from_scenario(&scenario).map_err(js)?;
        Ok(WebSim { session })
    }

    /// The titles of seed 004's experiments, one a line.
    #[wasm_bindgen(js_name = presetTitles)]
    pub fn preset_titles() -> String {
        presets::TITLES.join("\n")
    }

    /// The scenario that rebuilds this state, as JSON.
    pub fn scenario(&self) -> String {
        self.session.scenario().to_json()
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

    /// Runs until the election is over; `false` if it did not end in time.
    #[wasm_bindgen(js_name = runToEnd)]
    pub fn run_to_end(&mut self) -> Result<bool, JsError> {
        self.session.run_to_end().map_err(js)
    }

    /// What to draw now, as JSON (see `Frame`).
    pub fn frame(&self) -> String {
        self.session.frame().to_json()
    }

    /// The episode as seed 003's simulator logged it.
    #[wasm_bindgen(js_name = paperLog)]
    pub fn paper_log(&self) -> String {
        self.session.paper_log()
    }

    /// The episode as a Mermaid sequence diagram.
    pub fn mermaid(&self) -> String {
        self.session.mermaid()
    }
}
