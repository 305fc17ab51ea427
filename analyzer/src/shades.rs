//! How the figures shade and name the phases of a timeline: one colour and one legend name per
//! kind of phase. A leaf of the figures.

use plotters::style::{Color, RGBAColor, RGBColor};

/// A kind of phase, as the figures shade and name it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum PhaseShade {
    Down(u16),
    Freeze,
    Degraded(f64),
    RateLimited,
    /// A wire fault: `refused` or a toxic's type.
    Wire(&'static str),
    /// An HTTP fault of `lab proxy --http`: its phase's name and what it does (`abort 503`).
    Http(&'static str),
}

impl PhaseShade {
    pub(crate) fn colour(self) -> RGBAColor {
        match self {
            PhaseShade::Down(_) => RGBColor(120, 120, 120).mix(0.22),
            PhaseShade::Freeze => RGBColor(220, 50, 50).mix(0.16),
            PhaseShade::Degraded(_) => RGBColor(240, 160, 40).mix(0.14),
            PhaseShade::RateLimited => RGBColor(40, 120, 220).mix(0.12),
            PhaseShade::Wire(_) => RGBColor(140, 60, 200).mix(0.14),
            PhaseShade::Http(_) => RGBColor(200, 60, 140).mix(0.14),
        }
    }

    pub(crate) fn name(self) -> String {
        match self {
            PhaseShade::Down(status) => format!("down (every request answered {status})"),
            PhaseShade::Freeze => "freeze (held, then 503)".into(),
            PhaseShade::Degraded(f) => format!("degraded ({:.0}% capacity)", f * 100.0),
            PhaseShade::RateLimited => "rate limited (429 over the limit)".into(),
            PhaseShade::Wire("refused") => "refused (nothing listens)".into(),
            PhaseShade::Wire(toxic) => format!("{toxic} (a toxic on the wire)"),
            PhaseShade::Http(phase) => format!("{phase} (an HTTP fault at the proxy)"),
        }
    }
}

/// Every phase of a timeline that is not normal service, in seconds, with its kind.
pub(crate) fn phase_shades(t: &e03_model::timeline::Timeline) -> Vec<(f64, f64, PhaseShade)> {
    let s = |d: std::time::Duration| d.as_secs_f64();
    let mut v: Vec<(f64, f64, PhaseShade)> = Vec::new();
    v.extend(
        t.down
            .iter()
            .map(|d| (s(d.start), s(d.end), PhaseShade::Down(d.status))),
    );
    v.extend(t.freeze.map(|f| (s(f.start), s(f.end), PhaseShade::Freeze)));
    v.extend(t.degraded.map(|d| {
        (
            s(d.start),
            s(d.end),
            PhaseShade::Degraded(d.capacity_factor),
        )
    }));
    v.extend(
        t.rate_limited
            .iter()
            .map(|r| (s(r.start), s(r.end), PhaseShade::RateLimited)),
    );
    v.extend(
        t.wire
            .iter()
            .map(|w| (s(w.start), s(w.end), PhaseShade::Wire(w.fault.name()))),
    );
    v.extend(t.http.iter().map(|w| {
        (
            s(w.start),
            s(w.end),
            PhaseShade::Http(w.rule.fault.phase_name()),
        )
    }));
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_phase_kind_is_shaded_under_its_own_name() {
        use e03_model::timeline::*;
        use std::time::Duration;
        let s = Duration::from_secs;
        let t = Timeline {
            freeze: Some(FreezeWindow {
                start: s(8),
                end: s(10),
            }),
            degraded: Some(DegradedWindow {
                start: s(10),
                end: s(15),
                capacity_factor: 0.5,
            }),
            down: vec![DownWindow {
                start: s(1),
                end: s(2),
                status: 502,
                latency: Duration::ZERO,
            }],
            rate_limited: vec![RateLimitWindow {
                start: s(20),
                end: s(30),
                calls: 24,
                window: s(3),
                count_rejected: true,
                retry_after: None,
            }],
            wire: vec![
                WireWindow {
                    start: s(32),
                    end: s(34),
                    fault: WireFault::Refused,
                    latency: Duration::ZERO,
                },
                WireWindow {
                    start: s(40),
                    end: s(41),
                    fault: WireFault::Toxic {
                        toxic: e03_model::wire::ToxicKind::Timeout { timeout_ms: 0 },
                        stream: e03_model::wire::Direction::Downstream,
                        toxicity: 1.0,
                    },
                    latency: Duration::ZERO,
                },
            ],
            http: vec![e03_model::http_fault::HttpFaultWindow {
                start: s(50),
                end: s(52),
                rule: e03_model::http_fault::HttpFaultRule::every(
                    e03_model::http_fault::HttpFault::Hang,
                ),
            }],
        };
        let names: Vec<(f64, String)> = phase_shades(&t)
            .into_iter()
            .map(|(a, _, k)| (a, k.name()))
            .collect();
        assert_eq!(
            names,
            vec![
                (1.0, "down (every request answered 502)".to_string()),
                (8.0, "freeze (held, then 503)".to_string()),
                (10.0, "degraded (50% capacity)".to_string()),
                (20.0, "rate limited (429 over the limit)".to_string()),
                (32.0, "refused (nothing listens)".to_string()),
                (40.0, "timeout (a toxic on the wire)".to_string()),
                (50.0, "hang (an HTTP fault at the proxy)".to_string()),
            ]
        );
    }
}
