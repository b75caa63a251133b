//! Classifier rules (`rules/classifier/*.yaml`): `classifier: injection`,
//! `threshold: 0.9`, optionally `field:` and a CEL `when:`, lowered to the
//! CEL predicate `injection_score(<field>) >= <threshold> && (<when>)`.
//!
//! Lowering to CEL rather than to an engine of its own keeps one
//! semantics for the baked and the dynamic backend (both run the CEL
//! interpreter's host function), lets a rule say the same thing by hand in
//! a CEL file, and gives the audit its score the same way for both.

use crate::source::ClassifierRule;
use parallax_runtime::{FieldRef, TopField};

/// The classifiers this build carries, and the CEL function each is.
pub const CLASSIFIERS: [(&str, &str); 1] = [("injection", "injection_score")];

/// The CEL expression a classifier rule stands for.
pub fn expression(r: &ClassifierRule) -> Result<String, String> {
    let Some((_, function)) = CLASSIFIERS.iter().find(|(n, _)| *n == r.classifier) else {
        let known: Vec<&str> = CLASSIFIERS.iter().map(|(n, _)| *n).collect();
        return Err(format!(
            "classifier `{}`: this build has {}",
            r.classifier,
            known.join(", ")
        ));
    };
    if !(r.threshold > 0.0 && r.threshold < 1.0) {
        return Err(format!(
            "threshold {}: a classifier's score is a probability; give a threshold between 0 and 1 (exclusive)",
            r.threshold
        ));
    }
    let field = r.field.as_deref().unwrap_or("text");
    match FieldRef::parse(field) {
        Ok(FieldRef::Top(TopField::Stage)) => {
            return Err("field `stage`: scores a field of text, not the stage".into())
        }
        Ok(_) => {}
        Err(e) => return Err(format!("field `{field}`: {e}")),
    }
    let mut expr = format!("{function}({field}) >= {:?}", r.threshold);
    if let Some(when) = r.when.as_deref() {
        // Parsed alone first, so an error points into `when` as written.
        parallax_cel::Program::parse(when).map_err(|e| format!("when: {e}"))?;
        expr = format!("({when}) && {expr}");
    }
    Ok(expr)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(yaml: &str) -> ClassifierRule {
        serde_yaml::from_str(yaml).expect("rule parses")
    }

    #[test]
    fn lowers_to_a_cel_comparison() {
        let r = rule("{id: x, classifier: injection, threshold: 0.9}");
        assert_eq!(
            expression(&r).as_deref(),
            Ok("injection_score(text) >= 0.9")
        );
        let r = rule(
            "{id: x, classifier: injection, threshold: 0.5, field: message_text, when: \"tool_name != 'x'\"}",
        );
        assert_eq!(
            expression(&r).as_deref(),
            Ok("(tool_name != 'x') && injection_score(message_text) >= 0.5")
        );
    }

    #[test]
    fn names_what_is_wrong() {
        let e = expression(&rule("{id: x, classifier: toxicity, threshold: 0.9}"));
        assert!(e.is_err_and(|m| m.contains("toxicity") && m.contains("injection")));
        let e = expression(&rule("{id: x, classifier: injection, threshold: 1.5}"));
        assert!(e.is_err_and(|m| m.contains("between 0 and 1")));
        let e = expression(&rule(
            "{id: x, classifier: injection, threshold: 0.9, field: nope}",
        ));
        assert!(e.is_err_and(|m| m.contains("field `nope`")));
    }
}
