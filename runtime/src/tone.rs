//! `tone_check`: an outbound message in a tone an organisation would not
//! send under its name.
//!
//! Two things are judged, each by what can be done about it:
//! - **Shouting** can be rewritten without changing what is said: a text
//!   mostly in capitals (at least 20 letters, 70% of them upper case) is
//!   put in sentence case, and runs of `!` or `?` become one.
//! - **Hostile language** (insults, profanity, threats aimed at the
//!   reader) cannot be softened without changing the message: the value
//!   fails the check and the rule refuses the call, naming the word.

use regex_automata::meta;
use std::sync::OnceLock;

/// Insults, profanity and threats at the reader, as whole words (case and
/// common elongations ignored).
const HOSTILE: &str = r"(?i)\b(?:idiots?|idiotic|stupid|morons?|moronic|imbeciles?|dumbass|incompetent|useless|pathetic|worthless|clowns?|losers?|shut\s+up|screw\s+you|go\s+to\s+hell|damn\s+you|f+u+c+k+(?:ing|ers?|ed|s)?|f\*+k|wtf|stfu|sh[i1]t(?:ty|head)?|bullshit|crap(?:py)?|bastards?|assholes?|bitch(?:es)?|dickheads?|you'?ll\s+regret|or\s+else|watch\s+your\s+back|i\s+will\s+(?:destroy|ruin|end)\s+you)\b";

fn hostile() -> Option<&'static meta::Regex> {
    static RE: OnceLock<Option<meta::Regex>> = OnceLock::new();
    RE.get_or_init(|| meta::Regex::new(HOSTILE).ok()).as_ref()
}

/// The first hostile word or phrase of `text`, if any.
pub fn hostile_phrase(text: &str) -> Option<&str> {
    hostile()?.find(text).map(|m| &text[m.range()])
}

/// Rewrites shouting in `text` (see the module docs); true when it
/// changed.
pub fn calm(text: &mut String) -> bool {
    let mut changed = false;
    let (letters, upper) = text.chars().fold((0usize, 0usize), |(l, u), c| {
        if c.is_alphabetic() {
            (l + 1, u + usize::from(c.is_uppercase()))
        } else {
            (l, u)
        }
    });
    if letters >= 20 && upper * 10 >= letters * 7 {
        *text = sentence_case(text);
        changed = true;
    }
    let collapsed = collapse_runs(text);
    if collapsed.len() != text.len() {
        *text = collapsed;
        changed = true;
    }
    changed
}

/// Lower case, with the first letter of each sentence (after `.`, `!`,
/// `?` or a line break) upper case.
fn sentence_case(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut start = true;
    for c in text.chars() {
        if c.is_alphabetic() {
            if start {
                out.extend(c.to_uppercase());
            } else {
                out.extend(c.to_lowercase());
            }
            start = false;
        } else {
            if matches!(c, '.' | '!' | '?' | '\n') {
                start = true;
            }
            out.push(c);
        }
    }
    out
}

/// Runs of `!` or `?` (two or more of the same) as one.
fn collapse_runs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = None;
    for c in text.chars() {
        if matches!(c, '!' | '?') && last == Some(c) {
            continue;
        }
        out.push(c);
        last = Some(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calmed(s: &str) -> String {
        let mut s = s.to_string();
        calm(&mut s);
        s
    }

    #[test]
    fn shouting_is_rewritten_and_hostility_found() {
        assert_eq!(
            calmed("THIS IS THE LAST TIME I ASK. PAY NOW!!!"),
            "This is the last time i ask. Pay now!"
        );
        assert_eq!(
            calmed("Deploy the API to AWS today"),
            "Deploy the API to AWS today"
        );
        assert_eq!(calmed("Really??? ok"), "Really? ok");
        assert_eq!(hostile_phrase("you are an IDIOT, fix it"), Some("IDIOT"));
        assert_eq!(hostile_phrase("fix it or else"), Some("or else"));
        assert_eq!(hostile_phrase("Thanks, the fix shipped"), None);
        // Words that contain a hostile word are not it.
        assert_eq!(hostile_phrase("a classic scrapbook, shiitake"), None);
    }
}
