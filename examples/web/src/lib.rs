//! The seeds' election simulator in the browser.
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
//! // Seed 003's Figure 3 setting: ten processes, 4 calls the election.
//! let mut session = Session::new(Settings::default())?;
//! session.act(Action::Elect { node: 4 })?;
//! assert!(session.run_to_end()?);
//! let frame = session.frame();
//! assert_eq!(frame.agreed, Some(10));
//! assert_eq!(frame.election_messages, 51); // equation (3)
//! # Ok::<(), bully_web::WebError>(())
//! ```
#![forbid(unsafe_code)]

mod bindings;
mod error;
mod frame;
#[path = "../../src/paper.rs"]
pub mod paper;
#[path = "../../src/paper_log.rs"]
pub mod paper_log;
pub mod presets;
mod scenario;
mod session;
#[cfg(not(target_arch = "wasm32"))]
pub mod site;

pub use bindings::WebSim;
pub use error::WebError;
pub use frame::{FlightView, Frame, NodeView, Table1View};
pub use scenario::{
    Action, AlgorithmChoice, MAX_MEMBERS, PreemptionChoice, QuorumChoice, Scenario, Settings, Timed,
};
pub use session::Session;
