//! The Bully election simulator in the browser.
//!
//! `bully-core`'s deterministic simulator, compiled to WebAssembly: the page
//! (`static/`) asks [`WebSim`] for steps and state and draws them; every message
//! and every leadership comes from the real `Node`s. Natively the same code is a
//! library ([`Session`]) that the tests compare with the simulator itself, and a
//! static server (`serve`, [`site`]) that builds and serves the page.
//!
//! ```
//! use bully_web::{Action, Session, Settings};
//!
//! // Soundarabai et al.'s Figure 3: ten processes, 4 calls the election.
//! let mut session = Session::new(Settings::default())?;
//! session.act(Action::Elect { node: 4 })?;
//! assert!(session.run_to_end()?);
//! let frame = session.frame();
//! assert_eq!(frame.agreed, Some(10));
//! assert_eq!(frame.election_messages, 51);
//! // Soundarabai et al.'s equation (3), (N - P + 1)(N - P) + N - 1, says the same.
//! let explanation = frame.explanation.expect("Table 1's setting");
//! assert!(explanation.rows[0].source.ends_with("equation (3)"));
//! assert_eq!(explanation.rows[0].value, 51);
//! # Ok::<(), bully_web::WebError>(())
//! ```
#![forbid(unsafe_code)]

mod bindings;
mod clock;
mod episode;
mod error;
pub mod explain;
pub mod fields;
mod frame;
mod limits;
mod load;
pub mod presets;
mod scenario;
mod session;
#[cfg(not(target_arch = "wasm32"))]
pub mod site;

pub use bindings::WebSim;
pub use clock::{MAX_TIME_TM, MAX_TIME_US, MESSAGE_DELAY_US};
pub use error::WebError;
pub use explain::{Explanation, Formula};
pub use fields::{FieldError, Fields};
pub use frame::{FlightView, Frame, LeadershipView, NodeView};
pub use limits::{MAX_ACTIONS, MAX_MEMBERS, MAX_SCENARIO_BYTES, MAX_SEED};
pub use scenario::{
    Action, AlgorithmChoice, PreemptionChoice, QuorumChoice, SCENARIO_VERSION, Scenario, Settings,
    Timed,
};
pub use session::Session;
