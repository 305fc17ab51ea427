//! A drawing error as a sentence, not a debug dump. Plotters' errors nest the cause five types
//! deep (`Drawing backend error: ImageError(IoError(Custom { .., error: "No space left on
//! device (os error 28)" }))`): an operating system's error inside is the cause, said alone.
//! A leaf of its own, beside the figures that draw.

/// A figure that could not be drawn, as a sentence (the figures' one error type).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct DrawError(String);

/// A drawing error as a sentence: its operating-system cause when it holds one.
pub(crate) fn err<E: std::fmt::Display>(e: E) -> DrawError {
    let text = e.to_string();
    DrawError(os_cause(&text).unwrap_or(text))
}

/// The quoted operating-system error inside a nested error's text (`"... (os error 28)"`).
fn os_cause(text: &str) -> Option<String> {
    let at = text.find(" (os error ")?;
    let start = text[..at].rfind('"').map_or(0, |q| q + 1);
    let end = at + text[at..].find(')')? + 1;
    Some(text[start..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_os_error_inside_a_drawing_error_is_said_alone() {
        let nested = "Drawing backend error: ImageError(IoError(Custom { kind: Other, error: \
                      \"No space left on device (os error 28)\" }))";
        assert_eq!(
            err(nested).to_string(),
            "No space left on device (os error 28)"
        );
        assert_eq!(err("a font is missing").to_string(), "a font is missing");
    }
}
