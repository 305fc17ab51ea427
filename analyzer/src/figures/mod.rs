//! Figures: arrivals per 100 ms and per 1 s around the outage, a comparison of strategies, a
//! chain's calls per layer, the step workload's calls, the open loop's goodput and `lab map`'s
//! phase map, one file each.
//!
//! Each figure is drawn once by a function generic over the plotters backend and rendered twice:
//! SVG (text stays text) and PNG (bitmap). The PNG needs glyphs: DejaVu Sans is embedded in the
//! binary and registered once as "sans-serif" with plotters' `ab_glyph` font support, so no
//! system font library is needed ([`canvas`]).

mod arrivals;
mod canvas;
mod comparison;
mod goodput;
mod layers;
mod phase_map;
mod steps;

pub use arrivals::{write_arrivals, write_arrivals_any_client};
pub use comparison::write_comparison;
pub use goodput::write_goodput;
pub use layers::write_calls_per_layer;
pub use phase_map::write_phase_map;
pub use steps::write_steps;
