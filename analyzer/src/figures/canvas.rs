//! What every figure shares: the embedded font, the strategies' colours, drawing one figure
//! twice (SVG and PNG, [`both`]) and the legend strips.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle};

use crate::draw_error::err;
use crate::AnalyzeError;

pub(super) const FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
pub(super) const SIZE: (u32, u32) = (1000, 560);
pub(super) static REGISTER: Once = Once::new();

pub(super) fn register() {
    REGISTER.call_once(|| {
        register_font("sans-serif", FontStyle::Normal, FONT)
            .unwrap_or_else(|_| panic!("the embedded DejaVu Sans font is valid"));
    });
}

/// The colour of a strategy: A red, B blue, C green, D purple, others from a palette.
pub(super) fn colour(id: &str, i: usize) -> RGBColor {
    match id {
        "A" => RGBColor(214, 39, 40),
        "B" => RGBColor(31, 119, 180),
        "C" => RGBColor(44, 160, 44),
        "D" => RGBColor(148, 103, 189),
        // Ten (matplotlib's tab10, the four above last), so that a chain's four variants
        // (`deadline`), `shedding`'s seven rows or a user's strategies get colours of their own.
        _ => [
            RGBColor(255, 127, 14),
            RGBColor(140, 86, 75),
            RGBColor(23, 190, 207),
            RGBColor(227, 119, 194),
            RGBColor(188, 189, 34),
            RGBColor(127, 127, 127),
            RGBColor(31, 119, 180),
            RGBColor(44, 160, 44),
            RGBColor(148, 103, 189),
            RGBColor(214, 39, 40),
        ][i % 10],
    }
}

pub(super) type DrawResult = Result<(), crate::draw_error::DrawError>;

/// Draws into an SVG and a PNG named `<stem>.svg` / `<stem>.png` in `dir`.
pub(super) fn both(
    dir: &Path,
    stem: &str,
    draw_svg: impl Fn(&DrawingArea<SVGBackend, Shift>) -> DrawResult,
    draw_png: impl Fn(&DrawingArea<BitMapBackend, Shift>) -> DrawResult,
) -> Result<(), AnalyzeError> {
    both_sized(dir, stem, SIZE, draw_svg, draw_png)
}

/// [`both`] on a canvas of `size` pixels.
pub(super) fn both_sized(
    dir: &Path,
    stem: &str,
    size: (u32, u32),
    draw_svg: impl Fn(&DrawingArea<SVGBackend, Shift>) -> DrawResult,
    draw_png: impl Fn(&DrawingArea<BitMapBackend, Shift>) -> DrawResult,
) -> Result<(), AnalyzeError> {
    register();
    let svg = dir.join(format!("{stem}.svg"));
    let png = dir.join(format!("{stem}.png"));
    let fail = |path: &Path, e: crate::draw_error::DrawError| AnalyzeError::Output {
        path: path.into(),
        message: e.to_string(),
    };
    {
        let root = SVGBackend::new(&svg, size).into_drawing_area();
        draw_svg(&root)
            .and_then(|_| root.present().map_err(err))
            .map_err(|m| fail(&svg, m))?;
    }
    let root = BitMapBackend::new(&png, size).into_drawing_area();
    draw_png(&root)
        .and_then(|_| root.present().map_err(err))
        .map_err(|m| fail(&png, m))
}

/// The mark of one entry of a legend strip.
#[derive(Debug, Clone, Copy)]
pub(super) enum Swatch {
    Box(RGBColor),
    Dashed,
    ErrorBar,
    Text(&'static str),
}

/// Height of one line of a legend strip, pixels.
pub(super) const STRIP_LINE: u32 = 26;

/// Where each entry of a legend strip `width` pixels wide goes: (line, x) per entry.
pub(super) fn strip_layout(entries: &[(Swatch, String)], width: u32) -> Vec<(u32, u32)> {
    let (mut line, mut x) = (0u32, 10u32);
    entries
        .iter()
        .map(|(_, label)| {
            let w = 34 + 8 * label.chars().count() as u32 + 18;
            if x + w > width && x > 10 {
                line += 1;
                x = 10;
            }
            let at = (line, x);
            x += w;
            at
        })
        .collect()
}

/// Lines a legend strip needs.
pub(super) fn strip_lines(entries: &[(Swatch, String)], width: u32) -> u32 {
    strip_layout(entries, width)
        .last()
        .map_or(0, |(line, _)| line + 1)
}

/// Draws a legend strip (a mark and a label per entry, wrapped into lines) filling `area`.
pub(super) fn draw_strip<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(Swatch, String)],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let width = area.dim_in_pixel().0;
    let font = ("sans-serif", 15).into_font().color(&BLACK);
    for ((swatch, label), (line, x)) in entries.iter().zip(strip_layout(entries, width)) {
        let (x, y) = (x as i32, (line * STRIP_LINE + STRIP_LINE / 2) as i32);
        match *swatch {
            Swatch::Box(c) => area
                .draw(&Rectangle::new([(x, y - 7), (x + 24, y + 7)], c.filled()))
                .map_err(err)?,
            Swatch::Dashed => {
                for k in 0..3 {
                    area.draw(&PathElement::new(
                        vec![(x + k * 9, y), (x + k * 9 + 5, y)],
                        BLACK.stroke_width(2),
                    ))
                    .map_err(err)?;
                }
            }
            Swatch::ErrorBar => {
                let st = BLACK.stroke_width(2);
                area.draw(&PathElement::new(
                    vec![(x + 12, y - 8), (x + 12, y + 8)],
                    st,
                ))
                .map_err(err)?;
                area.draw(&PathElement::new(vec![(x + 6, y - 8), (x + 18, y - 8)], st))
                    .map_err(err)?;
                area.draw(&PathElement::new(vec![(x + 6, y + 8), (x + 18, y + 8)], st))
                    .map_err(err)?;
            }
            Swatch::Text(t) => area
                .draw(&Text::new(
                    t,
                    (x + 12, y),
                    font.clone().pos(Pos::new(HPos::Center, VPos::Center)),
                ))
                .map_err(err)?,
        }
        area.draw(&Text::new(
            label.clone(),
            (x + 32, y),
            font.clone().pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn up_to_ten_strategies_beside_a_to_d_get_colours_of_their_own() {
        let ids = [
            "fifo",
            "codel",
            "lifo",
            "deadline",
            "aimd",
            "gradient2",
            "priority",
            "x",
            "y",
            "z",
        ];
        let colours: Vec<(u8, u8, u8)> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let c = colour(id, i);
                (c.0, c.1, c.2)
            })
            .collect();
        for (i, c) in colours.iter().enumerate() {
            assert!(!colours[..i].contains(c), "{} repeats a colour", ids[i]);
        }
    }

    #[test]
    fn legend_strips_wrap_into_lines_that_fit() {
        let e = |n: usize| (Swatch::Dashed, "x".repeat(n));
        assert_eq!(strip_lines(&[], 1000), 0);
        assert_eq!(strip_lines(&[e(10), e(10)], 1000), 1);
        // 34 + 8 * 60 + 18 = 532 px each: two do not fit in 1000.
        assert_eq!(strip_lines(&[e(60), e(60), e(60)], 1000), 3);
    }
}
