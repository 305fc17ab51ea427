//! Replica of the rate-limit article's rate-limit simulation: an independent check of the limiter's semantics.
//!
//! The rate-limit article is the Turkish article "Hız Sınırları ve Yeniden Deneme" (academia.sh, course "Model
//! API'leri ile Uygulama Geliştirme", CC BY-SA 4.0). It runs 160 fictional support tickets
//! through a fictional model endpoint on a step clock and publishes a table per load level and
//! policy. This module ports its Python, rule for rule, so that the published table can be
//! reproduced to four decimals:
//!
//! - the generator `uretec` (a 32-bit integer hash seeding a linear congruential generator,
//!   1664525 / 1013904223, divided by 2^32): [`uretec`];
//! - the fictional tokenizer (`belirtecle`: lower case, a comma becomes its own token, split on
//!   whitespace, pieces of at most five characters): [`tokens`];
//! - the ticket generator (`TALEP`, seed 20260218, 160 tickets from 15 templates and 4 addenda):
//!   [`tickets`];
//! - the endpoint (`cagir`): a sliding window of the calls of the last 3 steps, rejected calls
//!   included; over 24 the call is rejected (`hiz_siniri`, no tokens paid); an accepted call may
//!   time out before output (input paid) or be cut off (input plus one output token paid):
//!   [`Endpoint::call`];
//! - the run (`kosum`): 100 tickets one a step, a burst of 60 from step 30 at 3 (light) or 6
//!   (heavy) a step, at most 12 batch calls a step, 4 attempts, 140 steps; an interactive query
//!   every 2 steps (steps below 120) that shares the limit, is called once in its step and once in
//!   the next if it failed (its latency budget is one step), and is never counted as a batch call;
//!   policies none, fixed (retry the next step) and backoff (1, 2, 4 steps): [`run`].
//!
//! Nothing here is tuned: every constant is the seed's. [`cells`] lists each published figure
//! beside ours; `lab replica ratelimit` prints them with PASS per cell.

const M32: u64 = 0xFFFF_FFFF;
/// The seed's seed (`TOHUM`): tickets are always generated with it.
pub const SEED: u32 = 20_260_218;
/// The second seed of the article's second run (`TOHUM + 1`).
pub const SECOND_SEED: u32 = 20_260_219;
/// Calls counted in the sliding window before a call is rejected (`KOTA`).
const QUOTA: u32 = 24;
/// Steps in the sliding window (`KADIM`).
const WINDOW_STEPS: usize = 3;
/// Batch calls sent in one step at most (`ESZAMAN`).
const PER_STEP: usize = 12;
/// Steps in a run (`BUTCE`).
const STEPS: usize = 140;
/// Attempts per ticket at most (`EN_COK`).
const MAX_ATTEMPTS: u32 = 4;

/// The seed's generator `uretec(t)`: a function returning floats in [0, 1).
pub fn uretec(t: u64) -> impl FnMut() -> f64 {
    let x = ((t ^ (t >> 16)).wrapping_mul(2_246_822_507)) & M32;
    let x = ((x ^ (x >> 13)).wrapping_mul(3_266_489_909)) & M32;
    let mut s = (x ^ (x >> 16)) & M32;
    move || {
        s = (s.wrapping_mul(1_664_525) + 1_013_904_223) & M32;
        s as f64 / 4_294_967_296.0
    }
}

/// The seed's `ayrik(u, w)`: the index where the running sum of `w` first exceeds `u`.
fn ayrik(u: f64, w: &[f64]) -> usize {
    let mut t = 0.0;
    for (i, x) in w.iter().enumerate() {
        t += x;
        if u < t {
            return i;
        }
    }
    w.len() - 1
}

/// The seed's fictional tokenizer `belirtecle`.
pub fn tokens(m: &str) -> Vec<String> {
    let mut b = Vec::new();
    for s in m.to_lowercase().replace(',', " , ").split_whitespace() {
        let mut s: &str = s;
        while s.chars().count() > 5 {
            let cut = s.char_indices().nth(5).map_or(s.len(), |(i, _)| i);
            b.push(s[..cut].to_string());
            s = &s[cut..];
        }
        b.push(s.to_string());
    }
    b
}

/// The seed's `izno`: 32-bit FNV-1a over the characters.
fn izno(m: &str) -> u64 {
    let mut h: u64 = 2_166_136_261;
    for c in m.chars() {
        h = ((h ^ c as u64).wrapping_mul(16_777_619)) & M32;
    }
    h
}

const TOPICS: [&str; 5] = ["fatura", "ariza", "sayac", "tarife", "kesinti"];
const TEMPLATES: [(&str, &str); 15] = [
    (
        "bu ayki fatura tutari gecen aya gore cok yuksek geldi",
        "fatura",
    ),
    ("faturami odedim ama sistemde borc gorunuyor", "fatura"),
    ("fatura ayrintisini nereden gorebilirim", "fatura"),
    ("evde su akmiyor bir ariza var galiba", "ariza"),
    ("baglanti bozuk oldu ve hic calismiyor", "ariza"),
    ("ariza kaydi actim ama ekip gelmedi", "ariza"),
    ("sayac okumasi yanlis girilmis endeks tutmuyor", "sayac"),
    ("sayac degisimi icin randevu istiyorum", "sayac"),
    ("sayac uzerindeki endeks ile fatura ayni degil", "sayac"),
    ("hangi tarife basamagindayim ogrenmek istiyorum", "tarife"),
    ("tarife degisikligi icin ne yapmam gerekiyor", "tarife"),
    ("birim ucret abone tipine gore degisiyor mu", "tarife"),
    ("mahallede kesinti var ne zaman gelecek", "kesinti"),
    ("planli kesinti duyurusu nereden takip edilir", "kesinti"),
    ("aksamdan beri kesinti yasiyoruz", "kesinti"),
];
const ADDENDA: [&str; 4] = [
    "ayrica gecen ay tarife degisikligi de yapilmisti",
    "kayit numarasini ekliyorum ekip hala gelmedi",
    "odeme gorunmuyor ama dekont elimde duruyor",
    "duyurulari takip ediyorum yine de bilgi alamadim",
];
const CONCEPTS: [&str; 9] = [
    "fatura", "ariza", "sayac", "tarife", "kesinti", "odeme", "sikayet", "bilgi", "genel",
];
const HINTS: [(&str, &str); 20] = [
    ("fatur", "fatura"),
    ("tutar", "fatura"),
    ("ayrin", "fatura"),
    ("borc", "odeme"),
    ("ariza", "ariza"),
    ("bozuk", "ariza"),
    ("calis", "ariza"),
    ("akmiy", "ariza"),
    ("sayac", "sayac"),
    ("endek", "sayac"),
    ("okuma", "sayac"),
    ("tarif", "tarife"),
    ("birim", "tarife"),
    ("abone", "tarife"),
    ("basam", "tarife"),
    ("kesin", "kesinti"),
    ("duyur", "kesinti"),
    ("mahal", "kesinti"),
    ("dekon", "odeme"),
    ("sikay", "sikayet"),
];
const INSTRUCTION: &str = "Talebi su etiketlerden birine ata: fatura , ariza , sayac , tarife , \
                           kesinti . Yanit olarak tek etiket yaz . ";

/// One fictional support ticket (`TALEP` entry).
#[derive(Debug, Clone, PartialEq)]
pub struct Ticket {
    pub no: u32,
    pub topic: &'static str,
    pub text: String,
}

impl Ticket {
    /// The prompt sent for this ticket (`istemi`).
    pub fn prompt(&self) -> String {
        format!("{INSTRUCTION}Talep {} : {}", self.no, self.text)
    }
}

/// The seed's 160 tickets, generated with [`SEED`].
pub fn tickets() -> Vec<Ticket> {
    (0..160u64)
        .map(|i| {
            let mut r = uretec(SEED as u64 + i);
            let topic = TOPICS[ayrik(r(), &[0.24, 0.22, 0.18, 0.20, 0.16])];
            let of_topic: Vec<&str> = TEMPLATES
                .iter()
                .filter(|t| t.1 == topic)
                .map(|t| t.0)
                .collect();
            let mut text = of_topic[(r() * 3.0) as usize].to_string();
            let pick = r();
            if pick < 0.34 {
                text.push(' ');
                text.push_str(ADDENDA[(r() * 4.0) as usize]);
            }
            Ticket {
                no: 4001 + i as u32,
                topic,
                text,
            }
        })
        .collect()
}

/// The seed's `etiketle`: the most likely label for the tokens.
fn label(bel: &[String]) -> &'static str {
    let has = |t: &str| bel.iter().any(|b| b == t);
    let candidates: Vec<&'static str> = CONCEPTS
        .iter()
        .copied()
        .filter(|k| has(&k[..k.len().min(5)]))
        .collect();
    let keys: Vec<&'static str> = if candidates.len() >= 3 {
        candidates
    } else {
        CONCEPTS.to_vec()
    };
    let mut p: Vec<(&'static str, f64)> = keys.into_iter().map(|k| (k, 0.15)).collect();
    for t in bel {
        if let Some((_, k)) = HINTS.iter().find(|(h, _)| h == t) {
            if let Some(e) = p.iter_mut().find(|(key, _)| key == k) {
                e.1 += 1.0;
            }
        }
    }
    // `max(sorted(p), key=...)`: the first maximum in alphabetical order.
    p.sort_by(|a, b| a.0.cmp(b.0));
    let mut best = p[0];
    for e in &p[1..] {
        if e.1 > best.1 {
            best = *e;
        }
    }
    best.0
}

/// How one call ended (the seed's `durum`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `tamam`: answered in full.
    Ok,
    /// `hiz_siniri`: rejected by the rate limit; no tokens paid.
    RateLimited,
    /// `zaman_asimi`: timed out before output; the input is paid.
    Timeout,
    /// `yarim_cikti`: output cut off; input plus one output token paid.
    CutOff,
}

/// One call's answer (the seed's `cagir` result).
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub outcome: Outcome,
    pub input: u32,
    pub output: u32,
    pub label: String,
}

/// The fictional endpoint with its per-step call history (`SUNUCU["gecmis"]`).
#[derive(Debug, Default)]
pub struct Endpoint {
    history: Vec<u32>,
}

impl Endpoint {
    /// Sets the history (the seed fills it to test a full window).
    pub fn with_history(history: Vec<u32>) -> Self {
        Endpoint { history }
    }

    /// The seed's `cagir(istem, adim, deneme, tohum)`. Every call, rejected or not, counts in its
    /// step; a call is rejected when the last 3 steps hold more than 24.
    pub fn call(&mut self, prompt: &str, step: usize, attempt: u32, seed: u32) -> Answer {
        while self.history.len() <= step {
            self.history.push(0);
        }
        self.history[step] += 1;
        let lo = (step + 1).saturating_sub(WINDOW_STEPS);
        if self.history[lo..=step].iter().sum::<u32>() > QUOTA {
            return Answer {
                outcome: Outcome::RateLimited,
                input: 0,
                output: 0,
                label: String::new(),
            };
        }
        let bel = tokens(prompt);
        let input = bel.len() as u32;
        let mut r = uretec((seed as u64 ^ izno(prompt)) + 7919 * attempt as u64);
        if r() < 0.03 + 0.0006 * bel.len() as f64 {
            return Answer {
                outcome: Outcome::Timeout,
                input,
                output: 0,
                label: String::new(),
            };
        }
        let k = label(&bel);
        if r() < 0.09 {
            return Answer {
                outcome: Outcome::CutOff,
                input,
                output: 1,
                label: k[..2].to_string(),
            };
        }
        Answer {
            outcome: Outcome::Ok,
            input,
            output: tokens(k).len() as u32,
            label: k.to_string(),
        }
    }
}

/// A retry policy of the seed's batch client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// `yok`: no retry.
    None,
    /// `sabit`: retry one step after each failure.
    Fixed,
    /// `geri`: retry 1, 2, 4 steps after the first, second, third failure.
    Backoff,
}

impl Policy {
    pub const ALL: [Policy; 3] = [Policy::None, Policy::Fixed, Policy::Backoff];

    /// The name printed in the replica's table.
    pub fn name(self) -> &'static str {
        match self {
            Policy::None => "none",
            Policy::Fixed => "fixed",
            Policy::Backoff => "backoff",
        }
    }
}

/// The figures of one run (the seed's `kosum` result).
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// Batch tickets answered in full / 160.
    pub completion: f64,
    /// Interactive queries answered within their budget / queries.
    pub interactive: f64,
    /// Batch calls (interactive calls are not counted).
    pub calls: u32,
    /// Batch calls rejected by the rate limit.
    pub rate_limited: u32,
    /// Batch calls that timed out or were cut off.
    pub content_failures: u32,
    /// Tokens paid, batch and interactive.
    pub tokens: u32,
    /// Tokens paid for failed calls, batch and interactive.
    pub wasted: u32,
    /// Batch tickets answered with the right label / 160.
    pub accuracy: f64,
}

struct Pending {
    item: usize,
    ready: usize,
    attempt: u32,
}

/// The seed's `kosum(politika, yuk, tohum)`: `burst` tickets a step during the burst (3 light,
/// 6 heavy).
pub fn run(policy: Policy, burst: usize, seed: u32) -> Figures {
    let tickets = tickets();
    let mut ep = Endpoint::default();
    let mut arrivals: Vec<Vec<usize>> = vec![Vec::new(); STEPS];
    for i in 0..tickets.len() {
        let step = if i < 100 { i } else { 30 + (i - 100) / burst };
        arrivals[step].push(i);
    }
    let mut queue: Vec<Pending> = Vec::new();
    // Interactive queries: (step asked, attempts made).
    let mut interactive: Vec<(usize, u32)> = Vec::new();
    let mut f = Figures {
        completion: 0.0,
        interactive: 0.0,
        calls: 0,
        rate_limited: 0,
        content_failures: 0,
        tokens: 0,
        wasted: 0,
        accuracy: 0.0,
    };
    let (mut done, mut right, mut i_done, mut i_total) = (0u32, 0u32, 0u32, 0u32);
    for (step, arrived) in arrivals.iter().enumerate() {
        if step % 2 == 0 && step < 120 {
            interactive.push((step, 0));
            i_total += 1;
        }
        for &i in arrived {
            queue.push(Pending {
                item: i,
                ready: step,
                attempt: 0,
            });
        }
        let mut kept = Vec::new();
        for (asked, attempt) in std::mem::take(&mut interactive) {
            if asked + 1 < step {
                continue; // latency budget spent
            }
            let prompt = format!("Saha uygulamasi sorgusu {asked} : acik kayit sayisi");
            let y = ep.call(&prompt, step, attempt, seed);
            f.tokens += y.input + y.output;
            if y.outcome == Outcome::Ok {
                i_done += 1;
            } else {
                f.wasted += y.input + y.output;
                kept.push((asked, attempt + 1));
            }
        }
        interactive = kept;
        let mut chosen = Vec::new();
        let mut rest = Vec::new();
        for p in std::mem::take(&mut queue) {
            if p.ready <= step && chosen.len() < PER_STEP {
                chosen.push(p);
            } else {
                rest.push(p);
            }
        }
        queue = rest;
        for mut p in chosen {
            let t = &tickets[p.item];
            let y = ep.call(&t.prompt(), step, p.attempt, seed);
            f.calls += 1;
            f.tokens += y.input + y.output;
            if y.outcome == Outcome::Ok {
                done += 1;
                right += u32::from(y.label == t.topic);
                continue;
            }
            f.wasted += y.input + y.output;
            if y.outcome == Outcome::RateLimited {
                f.rate_limited += 1;
            } else {
                f.content_failures += 1;
            }
            p.attempt += 1;
            if policy == Policy::None || p.attempt >= MAX_ATTEMPTS {
                continue;
            }
            p.ready = step
                + match policy {
                    Policy::Fixed => 1,
                    _ => 1 << (p.attempt - 1),
                };
            queue.push(p);
        }
    }
    let n = tickets.len() as f64;
    f.completion = done as f64 / n;
    f.interactive = i_done as f64 / i_total as f64;
    f.accuracy = right as f64 / n;
    f
}

/// The seed's single-call classes: every ticket called once with an empty window (so no
/// rejection), counted per outcome as (count, tokens paid).
pub fn single_call_classes() -> [(Outcome, u32, u32); 3] {
    let mut out = [
        (Outcome::Ok, 0, 0),
        (Outcome::Timeout, 0, 0),
        (Outcome::CutOff, 0, 0),
    ];
    for t in tickets() {
        let y = Endpoint::default().call(&t.prompt(), 0, 0, SEED);
        if let Some(e) = out.iter_mut().find(|e| e.0 == y.outcome) {
            e.1 += 1;
            e.2 += y.input + y.output;
        }
    }
    out
}

/// One published figure beside ours.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// What the figure is, e.g. `heavy fixed completion`.
    pub name: String,
    /// Where it is printed in the seed.
    pub source: &'static str,
    /// The published text; `None` for a figure the seed did not publish (a run with a seed
    /// the article did not use): printed, never judged.
    pub published: Option<&'static str>,
    /// Ours, printed the way the seed prints it.
    pub ours: String,
}

impl Cell {
    /// Whether ours prints exactly as published (a cell with nothing published passes: it has
    /// nothing to fail against; see [`Cell::verdict`]).
    pub fn pass(&self) -> bool {
        self.published.is_none_or(|p| p == self.ours)
    }

    /// `PASS`, `FAIL`, or `-` for a figure the seed did not publish.
    pub fn verdict(&self) -> &'static str {
        match self.published {
            None => "-",
            Some(p) if p == self.ours => "PASS",
            Some(_) => "FAIL",
        }
    }
}

/// Where the first table is in the seed.
const MAIN_TABLE: &str = "section 'Yük Altında Üç Politika', printed table";
/// Where the second run is in the seed.
const SECOND_RUN: &str = "same section, 'ikinci kosum (tohum 20260219)'";
/// Where the single-call classes are in the seed.
const CLASS_TABLE: &str = "section 'Çağrının Üç Başarısızlığı ve Bedeli', class table";

/// The published main table: (load name, burst, policy, completion, interactive, calls,
/// rejections, content failures, tokens, wasted, accuracy).
type MainRow = (&'static str, usize, Policy, [&'static str; 8]);
const PUBLISHED_MAIN: [MainRow; 6] = [
    (
        "light",
        3,
        Policy::None,
        [
            "0.8562", "0.9500", "160", "0", "23", "8425", "1218", "0.8438",
        ],
    ),
    (
        "light",
        3,
        Policy::Fixed,
        [
            "1.0000", "0.9500", "185", "0", "25", "9634", "1311", "0.9875",
        ],
    ),
    (
        "light",
        3,
        Policy::Backoff,
        [
            "1.0000", "0.9500", "185", "0", "25", "9634", "1311", "0.9875",
        ],
    ),
    (
        "heavy",
        6,
        Policy::None,
        [
            "0.8562", "0.9500", "160", "0", "23", "8425", "1218", "0.8438",
        ],
    ),
    (
        "heavy",
        6,
        Policy::Fixed,
        [
            "0.8000", "0.8667", "295", "151", "16", "7658", "873", "0.7937",
        ],
    ),
    (
        "heavy",
        6,
        Policy::Backoff,
        [
            "0.8750", "0.8833", "289", "129", "20", "8389", "1038", "0.8625",
        ],
    ),
];
const COLUMNS: [&str; 8] = [
    "completion",
    "interactive",
    "calls",
    "rate-limit rejections",
    "content failures",
    "tokens",
    "wasted tokens",
    "accuracy",
];
/// The published second run: (load, burst, policy, completion, interactive).
const PUBLISHED_SECOND: [(&str, usize, Policy, &str, &str); 6] = [
    ("light", 3, Policy::None, "0.8750", "1.0000"),
    ("light", 3, Policy::Fixed, "1.0000", "1.0000"),
    ("light", 3, Policy::Backoff, "1.0000", "1.0000"),
    ("heavy", 6, Policy::None, "0.8750", "1.0000"),
    ("heavy", 6, Policy::Fixed, "0.6813", "0.8667"),
    ("heavy", 6, Policy::Backoff, "0.7188", "0.8833"),
];

/// Every published figure of the seed beside ours: the class table, the main table (seed
/// 20260218, both loads, three policies, eight columns) and the second run (seed 20260219).
pub fn cells() -> Vec<Cell> {
    let mut out = Vec::new();
    let published_classes = [
        ("ok", "137", "6523"),
        ("timeout", "9", "436"),
        ("cut-off", "14", "655"),
    ];
    for ((name, n, tok), (_, count, paid)) in published_classes.iter().zip(single_call_classes()) {
        out.push(Cell {
            name: format!("single call {name} count"),
            source: CLASS_TABLE,
            published: Some(n),
            ours: count.to_string(),
        });
        out.push(Cell {
            name: format!("single call {name} tokens"),
            source: CLASS_TABLE,
            published: Some(tok),
            ours: paid.to_string(),
        });
    }
    out.extend(seed_cells(SEED));
    out.extend(
        seed_cells(SECOND_SEED)
            .into_iter()
            .filter(|c| c.published.is_some()),
    );
    out
}

/// The main table's figures (both loads, three policies, eight columns) for a run with `seed`,
/// each beside what the seed published for that run: every column for [`SEED`], completion and
/// interactive for [`SECOND_SEED`], nothing for any other seed (`published: None`). The tickets
/// are always [`SEED`]'s, as in the seed's code; `seed` keys the calls' outcomes.
pub fn seed_cells(seed: u32) -> Vec<Cell> {
    let mut out = Vec::new();
    for (load, burst, policy, main) in PUBLISHED_MAIN {
        let f = run(policy, burst, seed);
        let second = PUBLISHED_SECOND
            .iter()
            .find(|(l, _, p, _, _)| *l == load && *p == policy);
        let published: [Option<&'static str>; 8] = match seed {
            SEED => main.map(Some),
            SECOND_SEED => {
                let (.., c, i) = second.copied().expect("the second run has every row");
                [Some(c), Some(i), None, None, None, None, None, None]
            }
            _ => [None; 8],
        };
        let ours = [
            format!("{:.4}", f.completion),
            format!("{:.4}", f.interactive),
            f.calls.to_string(),
            f.rate_limited.to_string(),
            f.content_failures.to_string(),
            f.tokens.to_string(),
            f.wasted.to_string(),
            format!("{:.4}", f.accuracy),
        ];
        let source = if seed == SECOND_SEED {
            SECOND_RUN
        } else {
            MAIN_TABLE
        };
        for ((col, p), o) in COLUMNS.iter().zip(published).zip(ours) {
            let name = if seed == SEED {
                format!("{load} {} {col}", policy.name())
            } else {
                format!("seed {seed} {load} {} {col}", policy.name())
            };
            out.push(Cell {
                name,
                source: if p.is_some() { source } else { "not published" },
                published: p,
                ours: o,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seed's first printed call: ticket 4001 with an empty window.
    #[test]
    fn single_call_matches_the_seed() {
        let t = tickets();
        let y = Endpoint::default().call(&t[0].prompt(), 0, 0, SEED);
        assert_eq!(
            (y.outcome, y.input, y.output, y.label.as_str()),
            (Outcome::Ok, 44, 2, "kesinti")
        );
        // A full window (24 calls already in step 0): the 25th is rejected, no tokens paid.
        let y = Endpoint::with_history(vec![24]).call(&t[1].prompt(), 0, 0, SEED);
        assert_eq!((y.outcome, y.input, y.output), (Outcome::RateLimited, 0, 0));
    }

    #[test]
    fn tokenizer_cuts_pieces_of_five_and_splits_commas() {
        assert_eq!(
            tokens("Faturami, odedim"),
            ["fatur", "ami", ",", "odedi", "m"]
        );
    }

    #[test]
    fn window_counts_rejected_calls_over_three_steps() {
        let mut ep = Endpoint::default();
        let p = "x";
        for _ in 0..24 {
            assert_ne!(ep.call(p, 0, 0, SEED).outcome, Outcome::RateLimited);
        }
        assert_eq!(ep.call(p, 0, 0, SEED).outcome, Outcome::RateLimited);
        // Step 2 still sees step 0's 25 calls (the rejected one included); step 3 does not.
        assert_eq!(ep.call(p, 2, 0, SEED).outcome, Outcome::RateLimited);
        assert_ne!(ep.call(p, 3, 0, SEED).outcome, Outcome::RateLimited);
    }

    /// Every published figure of the rate-limit article, to four decimals (see [`cells`] for where each is).
    #[test]
    fn every_published_cell_is_reproduced() {
        let cells = cells();
        assert_eq!(cells.len(), 6 + 48 + 12);
        let failed: Vec<_> = cells.iter().filter(|c| !c.pass()).collect();
        assert!(failed.is_empty(), "cells differ: {failed:#?}");
    }

    /// A seed the article did not run: every figure printed, none judged; the article's two
    /// seeds give exactly the published cells (66 in all with the class table).
    #[test]
    fn any_seed_gives_a_table_and_only_published_cells_are_judged() {
        let other = seed_cells(7);
        assert_eq!(other.len(), 48);
        assert!(other
            .iter()
            .all(|c| c.published.is_none() && c.verdict() == "-"));
        assert_ne!(
            other.iter().map(|c| &c.ours).collect::<Vec<_>>(),
            seed_cells(SEED).iter().map(|c| &c.ours).collect::<Vec<_>>(),
            "another seed draws other outcomes"
        );
        let second = seed_cells(SECOND_SEED);
        assert_eq!(second.iter().filter(|c| c.published.is_some()).count(), 12);
        assert!(second.iter().all(|c| c.verdict() != "FAIL"));
        assert!(seed_cells(SEED).iter().all(|c| c.verdict() == "PASS"));
    }

    #[test]
    fn headline_cells() {
        let heavy_fixed = run(Policy::Fixed, 6, SEED);
        assert_eq!(format!("{:.4}", heavy_fixed.completion), "0.8000");
        assert_eq!(heavy_fixed.rate_limited, 151);
        assert_eq!(format!("{:.4}", heavy_fixed.interactive), "0.8667");
        let heavy_backoff = run(Policy::Backoff, 6, SEED);
        assert_eq!(format!("{:.4}", heavy_backoff.completion), "0.8750");
        assert_eq!(format!("{:.4}", heavy_backoff.interactive), "0.8833");
        let none = run(Policy::None, 6, SEED);
        assert_eq!(format!("{:.4}", none.completion), "0.8562");
        assert_eq!(format!("{:.4}", none.interactive), "0.9500");
    }
}
