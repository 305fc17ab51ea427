//! Named retry presets: the retry policies of well-known libraries, with their documented
//! defaults, as [`Strategy`] values beside the lab's strategies A to F.
//!
//! A preset's `id` is its name. `base` and `cap` (the scenario's backoff) are used only by
//! presets whose library has no default backoff of its own; a library's own attempt limit goes
//! in [`Strategy::max_attempts`], and `None` there means the scenario's limit applies.

use std::time::Duration;

use e03_model::breaker::BreakerSpec;
use e03_model::budget::BudgetSpec;
use e03_model::hedge::{HedgeDelay, HedgeSpec};
use e03_model::limit::LimitKind;
use e03_model::strategy::{Backoff, Classify, Jitter, RetryAfter, Strategy};

/// Every preset: (name, one line saying what it is and where its defaults come from).
const NAMES: &[(&str, &str)] = &[
    (
        "grpc",
        "gRPC retries (proposal A6): at most 5 attempts, exponential backoff with full jitter \
         (the scenario's base and cap), retry throttling with 10 tokens, -1 per failure, +0.1 \
         per success, retries only above 5 tokens",
    ),
    (
        "aws-standard",
        "AWS SDKs' standard retry mode: 3 attempts, full-jitter exponential backoff (the \
         scenario's base) capped at 20 s, a 500-token retry quota (5 per retry, 10 after a \
         timeout, +1 per first-attempt success, refund on a successful retry), no Retry-After",
    ),
    (
        "aws-2026",
        "AWS SDKs' 2026 retry behaviour: 3 attempts, full jitter on exponential backoff capped \
         at 20 s before jitter, base 50 ms (1 s after a throttle), quota 500 with 14 per retry \
         and 5 after a throttle, Retry-After honoured within [backoff, backoff + 5 s]",
    ),
    (
        "aws-adaptive",
        "AWS SDKs' adaptive retry mode: standard mode (3 attempts, full jitter capped at 20 s, \
         quota 500) plus the client-side rate limiter, off until the first throttle: a token \
         bucket whose rate follows CUBIC (beta 0.7, scale 0.4) of the send rate measured in \
         0.5 s buckets smoothed by 0.8 (botocore)",
    ),
    (
        "finagle",
        "Finagle's RetryBudget defaults: deposits live 10 s, at least 10 retries/s, retries up \
         to 20% of requests; the scenario's backoff with full jitter and attempt limit",
    ),
    (
        "tower",
        "tower's TpsBudget defaults (a port of Finagle's): ttl 10 s, 10 retries/s, 20%; the \
         scenario's backoff with full jitter and attempt limit",
    ),
    (
        "envoy",
        "Envoy's router retries: 1 retry (2 attempts), fully jittered exponential backoff from \
         25 ms capped at 250 ms, retry budget of 20% of active requests, at least 3 concurrent",
    ),
    (
        "sre-adaptive",
        "Google SRE book client-side adaptive throttling (K = 2 over 2 min) with at most 3 \
         attempts per request; the scenario's backoff with full jitter",
    ),
    (
        "polly-breaker",
        "Polly / .NET standard resilience handler: 3 retries (4 attempts), \
         DecorrelatedJitterBackoffV2 from a 2 s median, Retry-After honoured, and a circuit \
         breaker (10% failures, 100 calls minimum, 30 s sampling, 5 s break)",
    ),
    (
        "retry-everything",
        "strategy C (exponential backoff + full jitter) retrying every failure, 4xx included: \
         the cost of not classifying errors",
    ),
    (
        "budget10",
        "the reliability-patterns article's budget: 3 attempts, no backoff, retries at most 10% of requests",
    ),
    (
        "aimd-client",
        "strategy C behind a client-side AIMD concurrency limit (Netflix concurrency-limits' \
         defaults: from 20, min 20, max 200, x0.9 on a drop or a round trip over 5 s, +1 when \
         half used); an attempt over the limit fails fast",
    ),
    (
        "gradient2-client",
        "strategy C behind a client-side Gradient2 concurrency limit (Netflix \
         concurrency-limits' defaults: from 20, min 20, max 200, smoothing 0.2, queue 4, \
         long window 600); an attempt over the limit fails fast",
    ),
    (
        "grpc-hedging",
        "gRPC hedging (proposal A6's example hedgingPolicy): up to 4 attempts, a hedge every \
         500 ms while none has answered well, the next at once after a non-fatal answer, the \
         rest cancelled at the first good one; retry throttling (10 tokens, ratio 0.1) stops \
         hedges",
    ),
    (
        "polly-hedging",
        "Polly v8's hedging defaults: 1 hedged attempt (2 in all) after 2 s, the next at once \
         after a handled (transient) answer, the other cancelled at the first good one; no \
         throttle",
    ),
];

/// The presets' names and descriptions, in a stable order.
pub fn names() -> &'static [(&'static str, &'static str)] {
    NAMES
}

/// The preset called `name` (see [`names`]), with the scenario's backoff `base` and `cap` for
/// presets that take them; `None` for an unknown name.
pub fn preset(name: &str, base: Duration, cap: Duration) -> Option<Strategy> {
    let s = match name {
        "grpc" => grpc(base, cap),
        "aws-standard" => aws_standard(base),
        "aws-2026" => aws_2026(),
        "aws-adaptive" => aws_adaptive(base),
        "finagle" => tps("finagle", "Finagle RetryBudget", base, cap),
        "tower" => tps("tower", "tower TpsBudget", base, cap),
        "envoy" => envoy(),
        "sre-adaptive" => sre_adaptive(base, cap),
        "polly-breaker" => polly_breaker(),
        "retry-everything" => retry_everything(base, cap),
        "budget10" => budget10(),
        "aimd-client" => client_limited("aimd-client", LimitKind::Aimd, base, cap),
        "gradient2-client" => client_limited("gradient2-client", LimitKind::Gradient2, base, cap),
        "grpc-hedging" => grpc_hedging(),
        "polly-hedging" => polly_hedging(),
        _ => return None,
    };
    debug_assert_eq!(s.id, name);
    Some(s)
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// A strategy with the defaults every preset starts from.
fn base_strategy(id: &str, name: &str, backoff: Backoff, jitter: Jitter) -> Strategy {
    Strategy {
        id: id.to_string(),
        name: name.to_string(),
        backoff,
        jitter,
        budget: None,
        breaker: None,
        classify: Classify::Standard,
        retry_after: RetryAfter::AtLeast,
        max_attempts: None,
        throttle_base_ms: None,
        idempotency: None,
        load: None,
        connections: Default::default(),
        server: Default::default(),
        client_limit: None,
        adaptive_rate: false,
        fallbacks: 0,
        bulkhead: Vec::new(),
        hedge: None,
    }
}

/// gRPC's hedging policy (proposal A6, "gRPC Retry Design", section "Hedging Policy"), with
/// the proposal's example `hedgingPolicy` (`maxAttempts` 4, `hedgingDelay` 0.5 s; A6 has no
/// default delay, and "0s, or unset" sends every attempt at once) and its example
/// `retryThrottling` (10 tokens, ratio 0.1, [`e03_model::budget::GrpcThrottle`]), which "also
/// applies to hedged RPCs". The example's non-fatal codes (UNAVAILABLE, INTERNAL, ABORTED) are
/// the lab's retryable answers (5xx, 429, timeouts, broken connections); a hedging policy
/// excludes a retry policy. The rules: [`e03_model::hedge`].
pub fn grpc_hedging() -> Strategy {
    Strategy {
        budget: Some(BudgetSpec::grpc()),
        hedge: Some(HedgeSpec {
            max_attempts: 4,
            delay: HedgeDelay::Fixed { delay_us: 500_000 },
        }),
        ..base_strategy(
            "grpc-hedging",
            "gRPC A6 hedging + throttling",
            Backoff::Immediate,
            Jitter::None,
        )
    }
}

/// Polly v8's hedging strategy (`HedgingStrategyOptions`, pollydocs.org "Hedging resilience
/// strategy"): `MaxHedgedAttempts` 1 (so 2 attempts), `Delay` 2 s, no throttle. A handled
/// outcome starts the next hedged action at once; the handled outcomes are those of
/// Microsoft.Extensions.Http.Resilience's HTTP hedging (5xx, 408, 429, request exceptions,
/// timeouts), the lab's retryable answers. The first good answer wins and the rest are
/// cancelled.
pub fn polly_hedging() -> Strategy {
    Strategy {
        hedge: Some(HedgeSpec {
            max_attempts: 2,
            delay: HedgeDelay::Fixed {
                delay_us: 2_000_000,
            },
        }),
        ..base_strategy(
            "polly-hedging",
            "Polly v8 hedging",
            Backoff::Immediate,
            Jitter::None,
        )
    }
}

/// gRPC's retry policy (proposal A6, "gRPC Retry Design"): the n-th retry waits
/// `random(0, min(initialBackoff * backoffMultiplier^(n-1), maxBackoff))` (full jitter);
/// `maxAttempts` is required and capped at 5 (we use 5); A6 has no default backoff, so the
/// scenario's base and cap with multiplier 2. Budget: `retryThrottling` with A6's example values
/// (10 tokens, ratio 0.1; see [`e03_model::budget::GrpcThrottle`]). A server's pushback
/// (`grpc-retry-pushback-ms`) overrides the wait; the lab's `Retry-After` plays that part.
pub fn grpc(base: Duration, cap: Duration) -> Strategy {
    Strategy {
        budget: Some(BudgetSpec::grpc()),
        max_attempts: Some(5),
        ..base_strategy(
            "grpc",
            "gRPC A6 retry + throttling",
            Backoff::Exponential { base, cap },
            Jitter::Full,
        )
    }
}

/// The AWS SDKs' standard retry mode (AWS SDKs and Tools reference guide, "Retry behavior"):
/// 3 attempts; the wait before retry `i` is `min(random(0, 1) * 2^i * base, 20 s)` (the base
/// differs between SDKs, so the scenario's); a 500-token quota (see
/// [`e03_model::budget::AwsQuota`]). The standard mode does not read `Retry-After`.
pub fn aws_standard(base: Duration) -> Strategy {
    Strategy {
        budget: Some(BudgetSpec::aws_standard()),
        max_attempts: Some(3),
        retry_after: RetryAfter::Ignore,
        ..base_strategy(
            "aws-standard",
            "AWS SDK standard mode",
            Backoff::Exponential {
                base,
                cap: ms(20_000),
            },
            Jitter::Full,
        )
    }
}

/// The AWS SDKs' adaptive retry mode ("Retry behavior", AWS SDKs and Tools Reference Guide;
/// botocore's `retries/adaptive.py`): standard mode ([`aws_standard`]) with the client-side
/// rate limiter in front of every attempt ([`e03_model::adaptive::ClientRateLimiter`], its
/// constants there), shared by the strategy's clients.
pub fn aws_adaptive(base: Duration) -> Strategy {
    Strategy {
        id: "aws-adaptive".into(),
        name: "AWS SDK adaptive mode".into(),
        adaptive_rate: true,
        fallbacks: 0,
        bulkhead: Vec::new(),
        ..aws_standard(base)
    }
}

/// The AWS SDKs' updated retry behaviour of 2026 (`AWS_NEW_RETRIES_2026`, announced in the
/// SDKs' repositories): 3 attempts; base 50 ms after a transient error and 1 s after a
/// throttling error; the 20 s maximum applies before jitter (full jitter of the capped
/// backoff); a server's retry-after hint is honoured but kept within [computed backoff,
/// computed backoff + 5 s]; quota 500 with 14 per retry and 5 after a throttle (timeouts no
/// longer cost more).
pub fn aws_2026() -> Strategy {
    Strategy {
        budget: Some(BudgetSpec::aws_2026()),
        max_attempts: Some(3),
        retry_after: RetryAfter::Clamp {
            max_extra_ms: 5_000,
        },
        throttle_base_ms: Some(1_000),
        ..base_strategy(
            "aws-2026",
            "AWS SDK 2026 retries",
            Backoff::Exponential {
                base: ms(50),
                cap: ms(20_000),
            },
            Jitter::Full,
        )
    }
}

/// Finagle's `RetryBudget` / tower's `TpsBudget` with their defaults (ttl 10 s, 10 retries per
/// second, 20%; see [`e03_model::budget::TpsBudget`]). Both limit retries with the budget rather
/// than an attempt count, and the lab does not adopt a backoff of theirs: the scenario's
/// backoff with full jitter, and the scenario's attempt limit.
pub fn tps(id: &str, name: &str, base: Duration, cap: Duration) -> Strategy {
    Strategy {
        budget: Some(BudgetSpec::tps()),
        ..base_strategy(id, name, Backoff::Exponential { base, cap }, Jitter::Full)
    }
}

/// Envoy's router retry policy defaults: `num_retries` 1 (2 attempts); a fully jittered
/// exponential backoff with `base_interval` 25 ms and `max_interval` ten times that (250 ms);
/// the cluster's retry budget with `budget_percent` 20% and `min_retry_concurrency` 3 (see
/// [`e03_model::budget::EnvoyBudget`]).
pub fn envoy() -> Strategy {
    Strategy {
        budget: Some(BudgetSpec::envoy()),
        max_attempts: Some(2),
        ..base_strategy(
            "envoy",
            "Envoy retries + retry budget",
            Backoff::Exponential {
                base: ms(25),
                cap: ms(250),
            },
            Jitter::Full,
        )
    }
}

/// Google SRE book, "Handling Overload": client-side adaptive throttling with K = 2 over the
/// last 2 minutes (see [`e03_model::budget::SreThrottle`]), and the book's per-request limit of 3
/// attempts. The book gives no backoff: the scenario's, with full jitter.
pub fn sre_adaptive(base: Duration, cap: Duration) -> Strategy {
    Strategy {
        budget: Some(BudgetSpec::sre_adaptive()),
        max_attempts: Some(3),
        ..base_strategy(
            "sre-adaptive",
            "SRE adaptive throttling",
            Backoff::Exponential { base, cap },
            Jitter::Full,
        )
    }
}

/// Polly's circuit breaker defaults (`CircuitBreakerStrategyOptions`: failure ratio 0.1,
/// minimum throughput 100, sampling duration 30 s, break duration 5 s) inside Polly's HTTP
/// retry defaults as the .NET standard resilience handler sets them (`HttpRetryStrategyOptions`:
/// 3 retries, exponential backoff with jitter, which is DecorrelatedJitterBackoffV2, from a 2 s
/// median first delay; `Retry-After` honoured). Polly sets no maximum delay; the handler's 30 s
/// total timeout bounds any wait, so the cap is 30 s. Polly uses the header's value as the
/// wait; the lab's nearest rule waits at least as long as the header.
pub fn polly_breaker() -> Strategy {
    Strategy {
        breaker: Some(BreakerSpec {
            failure_ratio: 0.1,
            min_throughput: 100,
            sampling_window_ms: 30_000,
            break_duration_ms: 5_000,
        }),
        max_attempts: Some(4),
        ..base_strategy(
            "polly-breaker",
            "Polly retry + circuit breaker",
            Backoff::Exponential {
                base: ms(2_000),
                cap: ms(30_000),
            },
            Jitter::PollyV2,
        )
    }
}

/// Strategy C (exponential backoff with full jitter, the scenario's base and cap) retrying
/// every failure, permanent ones (400, 404, 409, 422, ...) included.
pub fn retry_everything(base: Duration, cap: Duration) -> Strategy {
    Strategy {
        classify: Classify::Everything,
        ..base_strategy(
            "retry-everything",
            "C, retrying every failure",
            Backoff::Exponential { base, cap },
            Jitter::Full,
        )
    }
}

/// The reliability-patterns article's retry budget: 3 attempts per request, no backoff, and retries at most 10% of the
/// requests (see [`e03_model::budget::RatioBudget`]).
pub fn budget10() -> Strategy {
    Strategy {
        budget: Some(BudgetSpec::ratio(0.1)),
        max_attempts: Some(3),
        ..base_strategy(
            "budget10",
            "3 attempts, 10% retry budget",
            Backoff::Immediate,
            Jitter::None,
        )
    }
}

/// Strategy C (exponential backoff with full jitter, the scenario's base and cap, its attempt
/// limit) behind a client-side adaptive concurrency limit of `kind`, with Netflix
/// concurrency-limits' defaults ([`e03_model::limit::AimdLimit`], [`e03_model::limit::Gradient2Limit`];
/// [`e03_model::limit::ClientLimiter`] says how a client uses it).
pub fn client_limited(id: &str, kind: LimitKind, base: Duration, cap: Duration) -> Strategy {
    let name = match kind {
        LimitKind::Gradient2 => "C + client Gradient2 limit",
        _ => "C + client AIMD limit",
    };
    Strategy {
        client_limit: kind.limit(e03_model::limit::AimdLimit::default().timeout),
        ..base_strategy(id, name, Backoff::Exponential { base, cap }, Jitter::Full)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use e03_model::budget::{AttemptClass, RetryBudget, RetryCause};
    use e03_model::policy::ClientPolicy;

    const BASE: Duration = Duration::from_millis(200);
    const CAP: Duration = Duration::from_millis(2000);

    /// The hedging presets' documented values: A6's example (`maxAttempts` 4, `hedgingDelay`
    /// 0.5 s, `retryThrottling` 10 / 0.1) and Polly v8's defaults (`MaxHedgedAttempts` 1,
    /// `Delay` 2 s, no throttle); neither retries.
    #[test]
    fn the_hedging_presets_hold_their_sources_values() {
        use e03_model::hedge::{HedgeDelay, HedgeSpec};
        let g = preset("grpc-hedging", BASE, CAP).unwrap();
        assert_eq!(
            g.hedge,
            Some(HedgeSpec {
                max_attempts: 4,
                delay: HedgeDelay::Fixed { delay_us: 500_000 },
            })
        );
        assert_eq!(g.budget, Some(BudgetSpec::grpc()));
        let p = preset("polly-hedging", BASE, CAP).unwrap();
        assert_eq!(
            p.hedge,
            Some(HedgeSpec {
                max_attempts: 2,
                delay: HedgeDelay::Fixed {
                    delay_us: 2_000_000
                },
            })
        );
        assert_eq!(p.budget, None);
        for s in [g, p] {
            assert_eq!(s.hedge.unwrap().validate(), Ok(()));
            assert_eq!(
                (s.backoff, s.breaker, s.client_limit),
                (Backoff::Immediate, None, None)
            );
        }
    }

    #[test]
    fn every_name_is_a_preset_whose_id_is_its_name_and_specs_are_valid() {
        assert_eq!(names().len(), 15);
        for (name, description) in names() {
            let s = preset(name, BASE, CAP).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(s.id, *name);
            assert!(!description.is_empty());
            if let Some(b) = s.budget {
                assert_eq!(b.validate(), Ok(()), "{name}");
            }
            // Serializes and reads back as the same strategy (a policy file can hold it).
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(
                serde_json::from_str::<Strategy>(&json).unwrap(),
                s,
                "{name}"
            );
        }
        let mut sorted: Vec<_> = names().iter().map(|(n, _)| *n).collect();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names().len(), "names are unique");
        assert!(preset("A", BASE, CAP).is_none());
        assert!(preset("nope", BASE, CAP).is_none());
    }

    /// `aimd-client`: Netflix's AIMD defaults on the client's side, by hand. 20 attempts go,
    /// the 21st fails fast before the budget sees it; an answer at 20 in flight (20 x 2 >= 20)
    /// grows the limit to 21; a timeout (dropped) cuts it to 21 x 0.9 = 18.9, so 18, then the
    /// minimum, 20; a 404 frees its place without a sample.
    #[test]
    fn a_client_limit_preset_fails_fast_over_its_limit_and_learns_from_answers() {
        let s = preset("aimd-client", BASE, CAP).unwrap();
        assert_eq!(
            s.client_limit,
            Some(e03_model::limit::ConcurrencyLimit::Aimd(
                e03_model::limit::AimdLimit::default()
            ))
        );
        let mut p = ClientPolicy::new(&s, 1);
        let t = Duration::ZERO;
        for n in 1..=20 {
            assert_eq!(p.admit(t, 1), Ok(()));
            assert_eq!(p.in_flight(), Some(n));
        }
        assert_eq!(
            p.admit(t, 1),
            Err(e03_model::budget::Rejection::ConcurrencyLimited)
        );
        p.round_trip(ms(40), 20, AttemptClass::Success);
        assert_eq!((p.client_limit(), p.in_flight()), (Some(21), Some(19)));
        p.round_trip(ms(2000), 19, AttemptClass::Failure(RetryCause::Timeout));
        assert_eq!((p.client_limit(), p.in_flight()), (Some(20), Some(18)));
        p.round_trip(ms(40), 18, AttemptClass::Permanent);
        assert_eq!((p.client_limit(), p.in_flight()), (Some(20), Some(17)));
        // Without the preset's limit nothing counts.
        let c_strategy =
            Strategy::standard("C", BASE, CAP, BudgetSpec::token_bucket(10.0, 0.1)).unwrap();
        let c = ClientPolicy::new(&c_strategy, 1);
        assert_eq!(c.in_flight(), None);
        assert_eq!(c.client_limit(), None);
    }

    #[test]
    fn presets_carry_their_libraries_defaults() {
        let g = preset("grpc", BASE, CAP).unwrap();
        assert_eq!(g.max_attempts, Some(5));
        assert_eq!(g.budget, Some(BudgetSpec::grpc()));
        assert_eq!(
            g.backoff,
            Backoff::Exponential {
                base: BASE,
                cap: CAP
            }
        );

        let a = preset("aws-standard", BASE, CAP).unwrap();
        assert_eq!(
            (a.max_attempts, a.budget, a.retry_after),
            (
                Some(3),
                Some(BudgetSpec::aws_standard()),
                RetryAfter::Ignore
            )
        );
        assert_eq!(
            a.backoff,
            Backoff::Exponential {
                base: BASE,
                cap: Duration::from_secs(20)
            }
        );

        let n = preset("aws-2026", BASE, CAP).unwrap();
        assert_eq!(n.max_attempts, Some(3));
        assert_eq!(n.budget, Some(BudgetSpec::aws_2026()));
        assert_eq!(n.throttle_base_ms, Some(1000));
        assert_eq!(n.retry_after, RetryAfter::Clamp { max_extra_ms: 5000 });
        assert_eq!(
            n.backoff,
            Backoff::Exponential {
                base: ms(50),
                cap: ms(20_000)
            },
            "the 2026 base ignores the scenario's"
        );

        for id in ["finagle", "tower"] {
            let t = preset(id, BASE, CAP).unwrap();
            assert_eq!((t.budget, t.max_attempts), (Some(BudgetSpec::tps()), None));
        }

        let e = preset("envoy", BASE, CAP).unwrap();
        assert_eq!(
            (e.max_attempts, e.budget),
            (Some(2), Some(BudgetSpec::envoy()))
        );

        let s = preset("sre-adaptive", BASE, CAP).unwrap();
        assert_eq!(
            (s.max_attempts, s.budget),
            (Some(3), Some(BudgetSpec::sre_adaptive()))
        );

        let p = preset("polly-breaker", BASE, CAP).unwrap();
        assert_eq!((p.max_attempts, p.jitter), (Some(4), Jitter::PollyV2));
        let b = p.breaker.unwrap();
        assert_eq!(
            (
                b.failure_ratio,
                b.min_throughput,
                b.sampling_window_ms,
                b.break_duration_ms
            ),
            (0.1, 100, 30_000, 5_000)
        );

        let r = preset("retry-everything", BASE, CAP).unwrap();
        let c = Strategy::standard("C", BASE, CAP, BudgetSpec::token_bucket(10.0, 0.1)).unwrap();
        assert_eq!((r.backoff, r.jitter), (c.backoff, c.jitter));
        assert_eq!(r.classify, Classify::Everything);
        assert_eq!(
            r.classify(&e03_model::AttemptResult::status(404)),
            AttemptClass::Failure(RetryCause::Error),
            "a 404 is retried"
        );
    }

    /// The reliability-patterns article's figure through the preset: 10,000 requests against a dependency that always
    /// fails, driven through the strategy's shared policy as the drivers do: 11,000 attempts.
    #[test]
    fn budget10_preset_gives_seed_003s_11_000_attempts() {
        let s = preset("budget10", BASE, CAP).unwrap();
        let max = s.max_attempts.unwrap();
        let mut policy = ClientPolicy::new(&s, 1);
        let t = Duration::ZERO;
        let mut sent = 0;
        for _ in 0..10_000 {
            policy.deposit(t);
            let mut attempt = 1;
            loop {
                policy.admit(t, attempt).unwrap();
                sent += 1;
                policy.record(t, attempt, AttemptClass::Failure(RetryCause::Error));
                if attempt == max || !policy.withdraw(t, RetryCause::Error) {
                    break;
                }
                attempt += 1;
            }
        }
        assert_eq!(sent, 11_000);
        let mut rng = e03_model::rng::stream(1, e03_model::rng::Stream::Jitter, 0);
        assert_eq!(s.wait(1, Duration::ZERO, &mut rng), Duration::ZERO);
    }
}
